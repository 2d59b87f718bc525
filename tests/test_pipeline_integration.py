"""The whole pipeline as a person runs it: a real Prefect server, the served deployment, MLflow, DVC.

Starts `prefect server` on a free 127.0.0.1 port and the serve process in a
temporary workspace (git + DVC repo, its own PREFECT_HOME and mlflow.db),
triggers `prefect deployment run zero-generation/local` with the smoke params
and checks what a generation must leave behind; then reproduces generation 2
with `dvc repro` and compares hashes; then refuses a second run of a running
generation, kills that run mid-self-play, retries it, and checks that no game
was lost or played twice.
"""

import json
import os
import re
import shutil
import signal
import time
from pathlib import Path

import pytest
import yaml

from pipeline_support import BIN, SMOKE, TAG, Pipeline, free_port, make_workspace

pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.timeout(1200)]

# Generation 3 plays longer shards so the run can be killed between them.
SLOW_SELFPLAY = ["pipeline.selfplay_shards=4", "selfplay.games_per_shard=24", "selfplay.visits=48",
                 "selfplay.concurrent_games=24"]


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    root = make_workspace(tmp_path_factory.mktemp("pipeline") / "ws")
    p = Pipeline(root, free_port())
    p.serve("up", timeout=300)
    try:
        yield p
    finally:
        p.serve("down", check=False)


def gen_dir(p: Pipeline, g: int) -> Path:
    return p.root / "gens" / TAG / f"g{g:04d}"


def lock_stages(p: Pipeline) -> dict:
    return yaml.safe_load((p.root / "dvc.lock").read_text())["stages"]


def test_first_generation_through_the_served_deployment(pipeline):
    p = pipeline
    run_id, _ = p.deployment_run(f"params_file={SMOKE}")
    assert p.flow_run(run_id)["state"]["type"] == "COMPLETED"
    g1 = gen_dir(p, 1)
    # shards and SGFs exist
    assert sorted(x.name for x in (g1 / "games").glob("*.npz")) == ["shard-000.npz", "shard-001.npz"]
    assert len(list((g1 / "games/sgf").rglob("*.sgf"))) == 16
    assert len(list((g1 / "gate/sgf").rglob("*.sgf"))) == 8
    # dvc.lock records them, and the default remote holds them
    stages = lock_stages(p)
    games = {o["path"]: o for o in stages[f"selfplay@{TAG}-g0001"]["outs"]}[f"gens/{TAG}/g0001/games"]
    assert games["nfiles"] == 18  # 2 shards + 16 SGFs
    assert "in sync" in p.sh(str(BIN / "dvc"), "status", "--cloud").stdout
    assert "up to date" in p.sh(str(BIN / "dvc"), "status").stdout.lower()
    # the MLflow run: params, per-step metrics, tags, artifacts
    record = json.loads((g1 / "generation.json").read_text())
    t = p.tracker()
    run = t.client.get_run(record["mlflow_run_id"])
    assert run.data.params["train.batch_size"] == "32" and run.data.params["gate.games"] == "8"
    for key in ("loss", "policy_loss", "value_loss", "entropy", "lr", "positions_per_s"):
        assert len(t.client.get_metric_history(run.info.run_id, key)) == 20
    for key in ("gate_wins", "gate_losses", "gate_draws", "gate_win_rate", "gate_elo", "gate_elo_low", "gate_elo_high"):
        assert key in run.data.metrics
    tags = run.data.tags
    assert tags["zero.generation"] == "1" and tags["zero.game"] == TAG
    assert tags["zero.data.g0001"] == games["md5"]
    assert tags["zero.params_hash"] == record["params_hash"]
    assert tags["zero.git_commit"] and tags["zero.git_dirty"] in ("true", "false")
    assert tags["zero.flow_run_id"] == run_id
    # a model version for generation 0 and one for the candidate; the alias where the gate says
    versions = t.versions()
    assert [v.tags["zero.generation"] for v in versions] == ["0", "1"]
    assert versions[1].run_id == run.info.run_id
    assert versions[1].tags["zero.gate_passed"] == str(record["gate"]["passed"]).lower()
    assert str(t.champion().version) == ("2" if record["gate"]["passed"] else "1")


def test_dvc_repro_of_generation_two_recreates_the_recorded_hashes(pipeline):
    p = pipeline
    run_id, _ = p.deployment_run(f"params_file={SMOKE}")
    assert p.flow_run(run_id)["state"]["type"] == "COMPLETED"
    before = (p.root / "dvc.lock").read_text()
    g2 = gen_dir(p, 2)
    for name in ("games", "gate"):
        shutil.rmtree(g2 / name)
    for name in ("window.json", "candidate.pt", "champion.pt"):
        (g2 / name).unlink()
    out = p.sh(str(BIN / "dvc"), "repro", "--force", "--downstream", f"selfplay@{TAG}-g0002")
    ran = re.findall(r"Running stage '([^']+)'", out.stdout)
    assert ran == [f"{s}@{TAG}-g0002" for s in ("selfplay", "dataset", "train", "gate", "champion")]
    assert (p.root / "dvc.lock").read_text() == before
    assert "up to date" in p.sh(str(BIN / "dvc"), "status").stdout.lower()


def test_second_run_refused_then_killed_run_retried_without_losing_or_replaying_games(pipeline):
    p = pipeline
    overrides = "overrides=" + json.dumps(SLOW_SELFPLAY)
    first, _ = p.deployment_run(f"params_file={SMOKE}", overrides, watch=False)
    lock = p.root / "gens" / TAG / ".lock"

    deadline = time.time() + 300
    while time.time() < deadline:  # the first run holds the line
        holder = json.loads(lock.read_text() or "{}") if lock.is_file() else {}
        if holder.get("owner") == first:
            break
        time.sleep(0.5)
    assert holder.get("owner") == first, p.flow_run(first)["state"]
    g = holder["generation"]  # 3 after the tests above
    g3 = gen_dir(p, g)

    second, proc = p.deployment_run(f"params_file={SMOKE}", overrides, check=False)
    assert proc.returncode == 1
    state = p.flow_run(second)["state"]
    assert state["type"] == "FAILED" and "already running" in state["message"] and first in state["message"]

    deadline = time.time() + 300
    while time.time() < deadline and not list((g3 / "games").glob("shard-*.npz")):
        time.sleep(0.2)
    done = {x.name: x.stat().st_mtime_ns for x in (g3 / "games").glob("shard-*.npz")}
    assert done, "no shard finished before the deadline"
    os.kill(holder["pid"], signal.SIGKILL)
    assert p.wait_state(first, {"CRASHED", "FAILED"}, timeout=120)["state"]["type"] == "CRASHED"
    assert not (g3 / "generation.json").exists()

    p.serve("retry", first)
    run = p.wait_state(first, {"COMPLETED", "FAILED", "CRASHED"}, timeout=600)
    assert run["state"]["type"] == "COMPLETED", run["state"]
    shards = sorted((g3 / "games").glob("shard-*.npz"))
    assert [x.name for x in shards] == [f"shard-{k:03d}.npz" for k in range(4)]
    for name, stamp in done.items():  # finished before the kill: kept, not played again
        assert (g3 / "games" / name).stat().st_mtime_ns == stamp
    record = json.loads((g3 / "generation.json").read_text())
    assert record["selfplay"]["games"] == 4 * 24 and record["flow_run_id"] == first
    assert record["selfplay"]["shards_reused"] >= len(done)
    # the shards the killed attempt finished are counted in the generation's compute, at their CPU time
    spent = sum(json.loads((g3 / "spent" / f"selfplay-{name[6:9]}.json").read_text())["cpu_s"] for name in done)
    assert spent > 0  # the record keeps tenths of a second: compare at that precision
    assert record["compute"]["cpu_s_by_stage"]["earlier_attempts"] >= round(spent, 1)
    print(f"killed with {len(done)} of 4 shards done; the retry reused {record['selfplay']['shards_reused']}")
    assert len(list((g3 / "games/sgf").rglob("*.sgf"))) == 4 * 24
    assert not list((g3 / "games").rglob("*.tmp"))
    from flows.stages import shard_stats

    assert sum(shard_stats(x)["games"] for x in shards) == 4 * 24
    window = json.loads((g3 / "window.json").read_text())
    assert [s["generation"] for s in window["shards"]][-4:] == [g] * 4
    # one MLflow run and one model version for generation 3
    t = p.tracker()
    runs = t.client.search_runs([t.experiment_id], f"tags.`zero.generation` = '{g}'")
    assert len(runs) == 1 and runs[0].info.status == "FINISHED"
    assert [v.tags["zero.generation"] for v in t.versions()] == [str(i) for i in range(g + 1)]
    gate = json.loads((g3 / "gate/result.json").read_text())
    champion = t.champion()
    if gate["passed"]:
        assert champion.tags["zero.generation"] == str(g)
    else:
        assert champion.tags["zero.generation"] != str(g)
