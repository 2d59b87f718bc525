"""flows.timeline: a generation's wall time by step, and the flow's overhead over flows.standalone's."""

import json

import pytest

from flows import timeline


def _write(line_dir, g, name, steps):
    d = line_dir / f"g{g:04d}"
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_text(json.dumps({"generation": g, "timeline": steps}))


def test_laps_add_up_by_step_in_the_order_they_first_ran():
    t = timeline.Timeline(since=0.0)  # a start in the past: the first lap holds everything since
    t.lap("start")
    t.lap("selfplay")
    t.lap("start")
    assert list(t.steps) == ["start", "selfplay"]
    assert t.steps["start"] > 1e9  # seconds since the epoch, then a few more
    assert t.total() == pytest.approx(sum(t.steps.values()), abs=0.1)


def test_a_start_in_the_future_counts_from_now():
    t = timeline.Timeline(since=1e12)
    t.lap("start")
    assert 0 <= t.steps["start"] < 1


def test_the_overhead_is_the_flow_s_mean_steps_against_the_standalone_ones(tmp_path, capsys):
    flow, alone = tmp_path / "flow", tmp_path / "alone"
    _write(flow, 1, timeline.RECORD, {"publish": 6, "selfplay": 40, "start": 10, "train": 30})  # sorted on disk
    _write(flow, 2, timeline.RECORD, {"start": 6, "selfplay": 38, "train": 26, "publish": 4})
    _write(alone, 3, timeline.STANDALONE, {"start": 1, "selfplay": 38, "train": 22})
    _write(alone, 4, timeline.RECORD, {"start": 99})  # a flow record in the standalone folder is not read
    result = timeline.overhead(timeline.timelines(flow, "flow"), timeline.timelines(alone, "standalone"))
    assert list(result["flow"].items()) == [("start", 8), ("selfplay", 39), ("train", 28), ("publish", 5)]
    assert result["flow_total"] == 80 and result["standalone_total"] == 61
    assert result["rate"] == pytest.approx(61 / 80)
    assert timeline.main([str(flow), str(alone)]) == 0
    out = capsys.readouterr().out
    assert "flow generations 1, 2; standalone 3: the flow makes 76% of the standalone generations an hour" in out
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()[2:]}
    assert rows == {"start": ["8.0", "1.0", "7.0"], "selfplay": ["39.0", "38.0", "1.0"],
                    "train": ["28.0", "22.0", "6.0"], "publish": ["5.0", "-", "5.0"],
                    "total": ["80.0", "61.0", "19.0"]}


def test_a_folder_without_timelines_is_named(tmp_path, capsys):
    (tmp_path / "g0001").mkdir()
    (tmp_path / "g0001" / timeline.RECORD).write_text(json.dumps({"generation": 1}))  # recorded before timelines
    assert timeline.main([str(tmp_path)]) == 2
    assert f"flows.timeline: {tmp_path}: no flow generation with a timeline" in capsys.readouterr().err


def test_evaluations_a_second_count_the_generations_that_record_them(tmp_path, capsys):
    flow, alone = tmp_path / "flow", tmp_path / "alone"
    for g, steps, evals in ((1, {"selfplay": 100, "train": 50}, 3_000_000), (2, {"selfplay": 40, "train": 10}, None)):
        d = flow / f"g{g:04d}"
        d.mkdir(parents=True)
        record = {"generation": g, "timeline": steps, "selfplay": {"games": 8}}
        if evals:
            record["selfplay"]["nn_evals"] = evals
        (d / timeline.RECORD).write_text(json.dumps(record))  # generation 2 was recorded before the count
    d = alone / "g0003"
    d.mkdir(parents=True)
    (d / timeline.STANDALONE).write_text(json.dumps({"generation": 3, "nn_evals": 2_400_000,
                                                      "timeline": {"selfplay": 90, "train": 30}}))
    assert timeline.evaluations(flow, "flow") == {1: 3_000_000}
    result = timeline.overhead(timeline.timelines(flow, "flow"), timeline.timelines(alone, "standalone"),
                               timeline.evaluations(flow, "flow"), timeline.evaluations(alone, "standalone"))
    assert result["flow_evals_per_s"] == pytest.approx(3_000_000 / 150)  # generation 2's 50 s not counted
    assert result["standalone_evals_per_s"] == pytest.approx(2_400_000 / 120)
    assert timeline.main([str(flow), str(alone)]) == 0
    assert "evaluations/s over a generation: flow 20,000; standalone 20,000" in capsys.readouterr().out
    assert timeline.overhead(timeline.timelines(flow, "flow"))["flow_evals_per_s"] is None


XEON = {"cpu": "Intel(R) Xeon(R) Processor", "selfplay": "bfloat16, channels-last"}


def _generation(line_dir, g, selfplay_s, evals, cpu_s, arithmetic=XEON, cores=1, **selfplay):
    """A generation's record as the flow writes it, with the fields its self-play pace is read from."""
    record = {"generation": g, "timeline": {"start": 5.0, "selfplay": selfplay_s, "train": 150.0},
              "selfplay": {"games": 512, "nn_evals": evals, "shards_reused": 0, **selfplay},
              "compute": {"cores": cores, "gpu_name": None, "cpu_s_by_stage": {"selfplay": cpu_s, "train": 140.0}},
              "arithmetic": arithmetic}
    if line_dir is not None:
        d = line_dir / f"g{g:04d}"
        d.mkdir(parents=True, exist_ok=True)
        (d / timeline.RECORD).write_text(json.dumps(record))
    return record


def test_a_generation_whose_self_play_lost_its_core_to_other_work_says_it_ran_slow(tmp_path):
    for g in range(1, 13):  # 4,000 evaluations/s on 97% of the core; the first two slower, beyond the window
        _generation(tmp_path, g, 400.0 if g > 2 else 800.0, 1_600_000, 388.0)
    now = _generation(None, 13, 640.0, 1_600_000, 352.0)  # 2,500/s, on the core 55% of the time
    p = timeline.pace(now, timeline.records(tmp_path, "flow"))
    assert p["generations_before"] == timeline.PACE_WINDOW
    assert (p["evals_per_s"], p["median_before"], p["ratio"], p["slow"]) == (2500.0, 4000.0, 0.625, True)
    assert (p["cpu_share"], p["cpu_share_before"]) == (0.55, 0.97)
    text = timeline.pace_text(p)
    assert text.startswith("self-play ran at 2,500 evaluations/s, 62% of the median 4,000 of the 10 "
                           "generations before it on this machine (Intel(R) Xeon(R) Processor, self-play in "
                           "bfloat16, channels-last, 1 core(s))")
    assert "on a CPU 55% of the time against 97% before, so other work took its cores" in text


def test_a_slower_cpu_at_the_same_share_is_named_as_the_cores_computing_slower(tmp_path):
    for g in range(1, 5):
        _generation(tmp_path, g, 400.0, 1_600_000, 388.0)
    now = _generation(None, 5, 600.0, 1_600_000, 582.0)  # 2,667/s, still on the core 97% of the time
    p = timeline.pace(now, timeline.records(tmp_path, "flow"))
    assert p["slow"] and p["ratio"] == pytest.approx(0.667, abs=1e-3)
    assert "as before (97%), so the cores themselves computed slower" in timeline.pace_text(p)
    steady = timeline.pace(_generation(None, 5, 440.0, 1_600_000, 427.0), timeline.records(tmp_path, "flow"))
    assert steady["slow"] is False and steady["ratio"] == pytest.approx(0.909, abs=1e-3)


def test_the_pace_is_judged_only_against_generations_of_the_same_machine_class(tmp_path):
    epyc = {"cpu": "AMD EPYC 7B13", "selfplay": "float32, channels-last"}
    for g in range(1, 6):  # made on another CPU, in other number formats: not this machine's figures
        _generation(tmp_path, g, 100.0, 1_600_000, 97.0, arithmetic=epyc)
    for g in (6, 7):
        _generation(tmp_path, g, 400.0, 1_600_000, 388.0)
    _generation(tmp_path, 8, 400.0, 1_600_000, 388.0, shards_reused=1)  # resumed: its rate is not a rate
    p = timeline.pace(_generation(None, 9, 800.0, 1_600_000, 776.0), timeline.records(tmp_path, "flow"))
    assert p["generations_before"] == 2 and p["evals_per_s"] == 2000.0
    assert "slow" not in p and "ratio" not in p  # recorded, not judged: too few to judge by
    assert timeline.pace(_generation(None, 9, 400.0, 1_600_000, 388.0, shards_reused=2), {}) is None
    assert timeline.pace({"generation": 9, "selfplay": {"games": 8}}, {}) is None  # no timeline, no count


def test_an_earlier_record_with_other_fields_is_left_out_of_the_median_not_fatal(tmp_path):
    for g in range(1, 5):
        _generation(tmp_path, g, 400.0, 1_600_000, 388.0)
    bad = tmp_path / "g0005" / timeline.RECORD
    bad.parent.mkdir()
    bad.write_text(json.dumps({"generation": 5, "timeline": {"selfplay": "slow"}, "selfplay": {"nn_evals": 9},
                               "compute": {"cores": 0}}))
    p = timeline.pace(_generation(None, 6, 400.0, 1_600_000, 388.0), timeline.records(tmp_path, "flow"))
    assert p["generations_before"] == 4 and p["ratio"] == 1.0 and p["slow"] is False
