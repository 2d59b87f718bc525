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
