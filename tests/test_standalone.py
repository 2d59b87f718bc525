"""flows.standalone: a line's generations made by the stage functions alone (a GPU machine without the
pipeline's servers), then recorded by the zero-generation flow without playing or training again."""

import json

import pytest

from flows import standalone, stages
from flows.layout import Workspace
from flows.timeline import in_order
from pipeline_support import SMOKE, isolate_env, make_workspace
from zero.config import load_params

SMALL = ["selfplay.games_per_shard=4", "pipeline.selfplay_shards=2", "train.steps=3", "gate.games=4",
         "gate.sequential=false"]


def _stamps(gen):
    files = sorted(p for p in gen.dir.rglob("*") if p.is_file() and p.name != standalone.MARK)
    return {str(p.relative_to(gen.dir)): (p.stat().st_mtime_ns, stages.file_sha256(p)) for p in files}


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """Two generations made once for the module; the tests after the first may add generations after them."""
    root = make_workspace(tmp_path_factory.mktemp("standalone") / "ws")
    params = load_params(root / SMOKE, SMALL)
    done = standalone.run(root, params, generations=2, say=lambda *a: None)
    return root, params, done


def test_it_makes_generations_with_their_compute_and_lists_them_as_pending(made):
    root, params, done = made
    ws = Workspace(root)
    assert [d["generation"] for d in done] == [1, 2]
    for g in (1, 2):
        gen = ws.generation(params.game.tag, g)
        record = standalone.made_here(gen)
        assert gen.champion.is_file() and gen.candidate.is_file() and gen.gate_result.is_file()
        assert record["games"] == 8 and record["compute"]["wall_s"] > 0 and record["compute"]["gpus"] == 0
        assert record["compute"]["cpu_s"] > 0 and record["arithmetic"]["train"] == "float32"
        assert not gen.record_file.exists()  # nothing is recorded: the flow does that
        assert list(in_order(record["timeline"])) == ["start", "selfplay", "dataset", "train", "gate", "promote"]
        assert abs(sum(record["timeline"].values()) - record["compute"]["wall_s"]) < 1.0
        kept = stages.trained_elsewhere(gen)  # the training's summary and curves, for the flow's MLflow run
        assert kept["summary"]["sha256"] == stages.file_sha256(gen.candidate) and len(kept["steps"]) == 3
    assert standalone.pending(root, params) == [1, 2]
    assert ws.generations(params.game.tag) == []  # not listed for DVC until the flow records them


def test_a_second_run_goes_on_after_the_last_generation_and_keeps_the_first_ones(made):
    root, params, _ = made
    gen1 = Workspace(root).generation(params.game.tag, 1)
    before = _stamps(gen1)
    more = standalone.run(root, params, generations=1, say=lambda *a: None)
    assert [d["generation"] for d in more] == [3]
    assert _stamps(gen1) == before


def test_other_params_for_a_started_generation_are_refused(made):
    root, params, _ = made
    from flows.layout import LineError

    ws = Workspace(root)
    g = 1
    while ws.generation(params.game.tag, g).champion.is_file():
        g += 1
    started = ws.generation(params.game.tag, g)  # the next generation, started with the line's params
    started.dir.mkdir(parents=True)
    ws.write_snapshot(started, params)
    other = load_params(root / SMOKE, SMALL + ["selfplay.visits=7"])
    with pytest.raises(LineError, match="other params"):
        standalone.run(root, other, generations=1, say=lambda *a: None)


@pytest.mark.slow
# About 55 s on a free core, up to 120 s on a shared one: two generations made standalone in a workspace of its
# own, then two flow runs that record them.
def test_the_flow_records_them_without_playing_or_training_again(harness, tmp_path, monkeypatch):
    from flows.generation import zero_generation
    from flows.tracking import Tracker

    root = make_workspace(tmp_path / "ws")
    isolate_env(monkeypatch, root)
    params = load_params(root / SMOKE, SMALL)
    made = standalone.run(root, params, generations=2, say=lambda *a: None)
    gens = [Workspace(root).generation(params.game.tag, g) for g in (1, 2)]
    before = [_stamps(gen) for gen in gens]
    records = [zero_generation(params_file=SMOKE, overrides=SMALL, workdir=str(root)) for _ in gens]
    assert [r["generation"] for r in records] == [1, 2]
    for gen, record, was, stamps in zip(gens, records, made, before):
        now = _stamps(gen)  # DVC relinks the outputs it caches, so their bytes are compared, not their times
        assert {k: v[1] for k, v in now.items() if k in stamps} == {k: v[1] for k, v in stamps.items()}
        assert record["selfplay"]["shards_reused"] == 2  # nothing played again...
        assert record["train"]["steps"] == 3  # ... nor trained: the kept summary of the training elsewhere
        history = Tracker(root, params.game.tag).client.get_metric_history(record["mlflow_run_id"], "loss")
        assert len(history) == 3  # its curves reached the generation's MLflow run
        assert record["compute"] == was["compute"]  # the machine that did the work, not the recording run
        assert json.loads(gen.record_file.read_text())["standalone"]["host"] == was["host"]
    assert standalone.pending(root, params) == []
    tracker = Tracker(root, params.game.tag)
    assert tracker.champion() is not None
    assert "selfplay@" in (root / "dvc.lock").read_text()
