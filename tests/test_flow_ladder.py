"""zero-ladder and shipping on a real workspace: Prefect's test server, an MLflow database, a DVC repo."""

import json
import shutil

import pytest
import yaml

from pipeline_support import SMOKE, isolate_env, make_workspace
from zero.sgf import read_collection

LADDER = ["ladder.enabled=true", 'ladder.opponents=["mcts:16", "random", "gen:0"]', "ladder.games=4",
          "ladder.visits=8", "ladder.concurrent_games=4", "ladder.calibration_games=2", "ladder.anchor=random=0"]
TAG = "gomoku-6x6x4"


@pytest.fixture(scope="module")
def laddered(harness, tmp_path_factory):
    """Two smoke generations with the ladder step on, run by zero-loop with shipping."""
    mp = pytest.MonkeyPatch()
    root = make_workspace(tmp_path_factory.mktemp("ws"))
    isolate_env(mp, root)
    from flows.generation import zero_loop

    records = zero_loop(params_file=SMOKE, overrides=LADDER, generations=2, workdir=str(root), ship=True)
    yield root, records
    mp.undo()


@pytest.mark.slow
def test_each_generation_is_laddered_and_rated(laddered):
    root, records = laddered
    lad = root / "gens" / TAG / "ladder"
    names = {p.stem for p in (lad / "pairings").glob("*.json")}
    # Both gates, the calibration of the fixed opponents, and the ladder of each new champion.
    assert {"g0001--g0000--gate", "g0002--g0001--gate", "mcts-16--random--calibration"} <= names
    for rec in records:
        record = json.loads((root / "gens" / TAG / f"g{rec['generation']:04d}" / "generation.json").read_text())
        compute = record["compute"]
        assert compute["cores"] >= 1 and compute["wall_s"] > 0
        # the CPU time of the work, stage by stage, measured where it ran (the stages' worker processes)
        stage_cpu = compute["cpu_s_by_stage"]
        assert stage_cpu["selfplay"] > 0 and stage_cpu["train"] > 0 and stage_cpu["gate"] > 0
        assert compute["cpu_s"] == pytest.approx(sum(stage_cpu.values()), abs=0.5)
        assert compute["cpu_s"] <= compute["wall_s"] * compute["cores"] * 1.05  # no more than the cores gave
        ladder = record["ladder"]
        champion = ladder["champion"]
        assert {m["b"] for m in ladder["matches"]} >= {"mcts-16", "random"}
        assert all(m["games"] == 4 for m in ladder["matches"])
        assert f"{champion}--random--ladder" in names
        assert ladder["anchor"] == {"player": "random", "elo": 0.0, "anchored": True}
        assert ladder["rating"]["elo_low"] <= ladder["rating"]["elo"] <= ladder["rating"]["elo_high"]
    ratings = json.loads((lad / "ratings.json").read_text())
    assert ratings["ratings"]["random"]["elo"] == 0.0
    assert {"g0000", "g0001", "g0002", "mcts-16"} <= set(ratings["ratings"])
    assert (lad / "elo.png").read_bytes()[:4] == b"\x89PNG"
    played = [n for n in names if not n.endswith("gate")]  # a gate's pairing is its record, without games
    collections = sorted((lad / "sgf").iterdir())  # one gzip-compressed SGF collection a pairing
    assert [p.name for p in collections] == sorted(f"{n}.sgf.gz" for n in played)
    assert sum(len(read_collection(p)) for p in collections) == 4 * len(played) - 2


@pytest.mark.slow
def test_ladder_metrics_and_plot_are_in_mlflow(laddered):
    from flows.tracking import Tracker

    root, records = laddered
    t = Tracker(root, TAG)
    run = t.client.get_run(records[-1]["mlflow_run_id"])
    assert {"ladder_elo", "ladder_elo_low", "ladder_elo_high", "ladder_win_rate_random"} <= set(run.data.metrics)
    arts = {a.path for a in t.client.list_artifacts(run.info.run_id, "ladder")}
    assert {"ladder/elo.png", "ladder/ratings.json", "ladder/players.json"} <= arts


@pytest.mark.slow
def test_a_second_ladder_plays_nothing_new(laddered):
    from flows.ladder import zero_ladder

    root, _ = laddered
    summary = zero_ladder(params_file=SMOKE, overrides=LADDER, workdir=str(root))
    assert summary["played_now"] == 0 and summary["generation"] == 2


@pytest.mark.slow
def test_shipped_champion_and_a_campaign_that_resumes_from_it(laddered, tmp_path, monkeypatch):
    from flows.generation import zero_generation
    from flows.ship import ship
    from flows.stages import file_sha256
    from zero.config import load_params

    root, records = laddered
    # zero-loop ships after each generation that passed: the lineage runs up to the last of them.
    passed = [r["generation"] for r in records if r["gate"]["passed"]]
    assert passed, "no smoke generation passed its gate: nothing was shipped"
    lineage = json.loads((root / "models" / f"{TAG}.json").read_text())
    champion = root / "gens" / TAG / f"g{passed[-1]:04d}" / "champion.pt"
    assert lineage["sha256"] == file_sha256(root / "models" / f"{TAG}.pt") == file_sha256(champion)
    shipped = [r for r in records if r["generation"] <= passed[-1]]
    assert lineage["totals"]["generations"] == len(shipped)
    assert lineage["totals"]["games"] == sum(r["selfplay"]["games"] for r in shipped)
    assert [g["generation"] for g in lineage["runs"][0]["generations"]] == [r["generation"] for r in shipped]
    assert lineage["champion"]["generation"] == passed[-1] and lineage["champion"]["rating"]["games"] > 0
    assert lineage["champion"]["line_generation"] == passed[-1]
    assert lineage["ladder"]["matches"] and lineage["code_commit"] and lineage["params_hash"]

    # Beside it, the window of the last finished generation (flows.carry): its shards, by age.
    shipped_window = json.loads((root / "models" / f"{TAG}.window" / "window.json").read_text())
    last_window = json.loads((root / "gens" / TAG / f"g{passed[-1]:04d}" / "window.json").read_text())
    assert [s["sha256"] for s in shipped_window["shards"]] == [s["sha256"] for s in last_window["shards"]]
    assert shipped_window["champion_sha256"] == lineage["sha256"]
    assert lineage["window"]["positions"] == sum(s["positions"] for s in last_window["shards"]) > 0

    # A new workspace starts from the shipped champion and its window, kept elsewhere than its models/ (as a
    # campaign's committed state is, campaigns/state/); shipping it chains the lineage kept beside them.
    other = make_workspace(tmp_path / "ws2")
    isolate_env(monkeypatch, other)
    (other / "state").mkdir()
    for suffix in (".pt", ".json"):
        (other / "state" / f"{TAG}{suffix}").write_bytes((root / "models" / f"{TAG}{suffix}").read_bytes())
    shutil.copytree(root / "models" / f"{TAG}.window", other / "state" / f"{TAG}.window")
    resume = [f"pipeline.init_from=state/{TAG}.pt", f"pipeline.init_window=state/{TAG}.window", "pipeline.seed=8"]
    first = zero_generation(params_file=SMOKE, overrides=resume, workdir=str(other))
    assert file_sha256(other / "gens" / TAG / "g0000" / "champion.pt") == lineage["sha256"]
    # its first generation trained on the carried window's newest generation beside its own games (window 2),
    # recorded in dvc.lock as generation 0's carried/ output
    window = json.loads((other / "gens" / TAG / "g0001" / "window.json").read_text())
    newest = [s["sha256"] for s in shipped_window["shards"] if s["age"] == 0]
    assert [s["sha256"] for s in window["shards"] if s["generation"] == 0] == newest and newest
    assert {s["generation"] for s in window["shards"]} == {0, 1}
    lock = yaml.safe_load((other / "dvc.lock").read_text())["stages"][f"init@{TAG}"]
    carried_md5 = next(o["md5"] for o in lock["outs"] if o["path"].endswith("/carried"))
    assert first["data"]["carried"] == carried_md5
    again = ship(other, load_params(other / SMOKE, resume), SMOKE)
    assert len(again["runs"]) == 2 and again["runs"][1]["start_sha256"] == lineage["sha256"]
    assert again["totals"]["generations"] == len(shipped) + 1
    # the champion's number in the whole line counts the generations of the run it resumed from
    assert again["champion"]["line_generation"] == len(shipped) + again["champion"]["generation"]
    assert again["totals"]["games"] == lineage["totals"]["games"] + again["runs"][1]["totals"]["games"]
    # zero-loop ships again after the run's next generation: its entry grows, the earlier runs stay.
    zero_generation(params_file=SMOKE, overrides=resume, workdir=str(other))
    third = ship(other, load_params(other / SMOKE, resume), SMOKE)
    assert [r["start_sha256"] for r in third["runs"]] == [r["start_sha256"] for r in again["runs"]]
    assert third["runs"][0] == again["runs"][0]
    assert [g["generation"] for g in third["runs"][1]["generations"]] == [1, 2]
    assert third["totals"]["generations"] == len(shipped) + 2


@pytest.mark.slow
def test_a_ladder_that_cannot_run_leaves_its_error_in_the_generation_record(harness, tmp_path, monkeypatch):
    root = make_workspace(tmp_path / "ws")
    isolate_env(monkeypatch, root)
    from flows.generation import zero_generation

    bad = ["ladder.enabled=true", 'ladder.opponents=["gnugo:17"]', "ladder.games=2", "ladder.calibration_games=0"]
    record = zero_generation(params_file=SMOKE, overrides=bad, workdir=str(root))
    assert "GNU Go levels are 0 to 16" in record["ladder"]["error"]
    on_disk = json.loads((root / "gens" / TAG / "g0001" / "generation.json").read_text())
    assert on_disk["ladder"] == record["ladder"]


@pytest.mark.slow
def test_a_ladder_every_second_generation_skips_the_first(harness, tmp_path, monkeypatch):
    root = make_workspace(tmp_path / "ws")
    isolate_env(monkeypatch, root)
    from flows.generation import zero_loop

    every = ["ladder.enabled=true", "ladder.every=2", 'ladder.opponents=["random"]', "ladder.games=2",
             "ladder.visits=8", "ladder.calibration_games=0", "ladder.anchor=random=0"]
    first, second = zero_loop(params_file=SMOKE, overrides=every, generations=2, workdir=str(root))
    assert "ladder" not in first
    champion = second["ladder"]["champion"]  # the champion after generation 2, whoever won its gate
    assert champion in ("g0001", "g0002") and second["ladder"]["matches"][0]["games"] == 2
    pairings = sorted(p.name for p in (root / "gens" / TAG / "ladder" / "pairings").glob("*--ladder.json"))
    assert pairings == [f"{champion}--random--ladder.json"]
    on_disk = json.loads((root / "gens" / TAG / "g0001" / "generation.json").read_text())
    assert "ladder" not in on_disk
