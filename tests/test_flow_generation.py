"""The zero-generation flow under Prefect's test harness, with a temporary MLflow database and DVC repo."""

import hashlib
import json
import re
import time
from pathlib import Path

import pytest
import yaml

from pipeline_support import SMOKE, isolate_env, make_workspace, selfplay_sgf_games

pytestmark = pytest.mark.slow  # a Prefect test server and whole smoke generations


@pytest.fixture(scope="module")
def two_generations(harness, tmp_path_factory):
    """A workspace after two smoke generations run by the flow."""
    mp = pytest.MonkeyPatch()
    root = make_workspace(tmp_path_factory.mktemp("ws"))
    isolate_env(mp, root)
    from flows.generation import zero_generation

    records = [zero_generation(params_file=SMOKE, workdir=str(root)) for _ in range(2)]
    yield root, records
    mp.undo()


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    root = make_workspace(tmp_path / "ws")
    isolate_env(monkeypatch, root)
    return root


def tracker_for(root):
    from flows.tracking import Tracker

    return Tracker(root, "gomoku-6x6x4")


def test_two_generations_are_recorded_in_dvc_mlflow_and_the_registry(two_generations):
    from flows.lineage import out_hashes

    root, records = two_generations
    assert [r["generation"] for r in records] == [1, 2]
    lock = yaml.safe_load((root / "dvc.lock").read_text())["stages"]
    assert set(lock) >= {"init@gomoku-6x6x4", *(f"{s}@gomoku-6x6x4-g000{g}" for g in (1, 2)
                                               for s in ("selfplay", "dataset", "train", "gate", "champion"))}
    for rec in records:
        gen_dir = root / "gens/gomoku-6x6x4" / f"g{rec['generation']:04d}"
        assert len(list((gen_dir / "games").glob("shard-*.npz"))) == 2
        assert selfplay_sgf_games(gen_dir / "games") == 16
        assert rec["data"][f"g{rec['generation']:04d}"] == \
            out_hashes(root, f"selfplay@gomoku-6x6x4-g{rec['generation']:04d}")[f"{gen_dir.relative_to(root)}/games"]
        assert json.loads((gen_dir / "generation.json").read_text())["mlflow_run_id"] == rec["mlflow_run_id"]
        assert len(rec["seeds"]["selfplay"]) == 2 and rec["git_dirty"] in ("true", "false")
        assert rec["arithmetic"]["cpu"] and rec["arithmetic"]["selfplay"] == "float32"  # where and in what it ran
        lock = Path(__file__).resolve().parent.parent / "requirements.lock"  # the libraries it ran with
        assert rec["requirements_lock_sha256"] == hashlib.sha256(lock.read_bytes()).hexdigest()
    assert set(records[1]["data"]) == {"g0001", "g0002"}  # window_generations: 2
    assert (root / "dvc-remote").is_dir() and any((root / "dvc-remote").rglob("*"))


def test_mlflow_run_has_params_metrics_tags_and_artifacts(two_generations):
    root, records = two_generations
    t = tracker_for(root)
    run = t.client.get_run(records[1]["mlflow_run_id"])
    assert run.info.status == "FINISHED"
    assert run.data.params["train.steps"] == "20" and run.data.params["pipeline.seed"] == "7"
    for key in ("loss", "policy_loss", "value_loss", "entropy", "lr", "positions_per_s"):
        assert len(t.client.get_metric_history(run.info.run_id, key)) == 20, key
    for key in ("gate_wins", "gate_losses", "gate_draws", "gate_win_rate", "gate_elo", "selfplay_games"):
        assert key in run.data.metrics, key
    tags = run.data.tags
    assert tags["zero.generation"] == "2" and tags["zero.game"] == "gomoku-6x6x4"
    assert tags["zero.params_hash"] == records[1]["params_hash"]
    assert tags["zero.data.g0001"] and tags["zero.data.g0002"]
    assert {"zero.git_commit", "zero.git_dirty", "zero.requirements_lock_sha256", "zero.dvc_lock_sha256",
            "zero.seed.selfplay"} <= set(tags)
    arts = {a.path for a in t.client.list_artifacts(run.info.run_id)}
    assert {"model", "config", "gate", "plots"} <= arts
    sgfs = [a.path for a in t.client.list_artifacts(run.info.run_id, "gate/sgf/part-000")]
    assert sgfs == ["gate/sgf/part-000/match.sgf.gz"]  # the part's games, one collection
    assert {a.path for a in t.client.list_artifacts(run.info.run_id, "plots")} == {"plots/loss.png", "plots/gate.png"}
    for name in ("loss.png", "gate.png"):
        local = t.client.download_artifacts(run.info.run_id, f"plots/{name}", str(root / ".plots"))
        assert open(local, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    assert t.client.get_experiment(t.experiment_id).tags["mlflow.experimentKind"] == "custom_model_development"


def test_gate_and_self_play_tasks_log_progress_and_keep_a_progress_artifact(two_generations):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (ArtifactFilter, ArtifactFilterFlowRunId, LogFilter,
                                                LogFilterFlowRunId, TaskRunFilter, TaskRunFilterFlowRunId)

    root, records = two_generations
    flow_run = records[1]["flow_run_id"]
    with get_client(sync_client=True) as client:
        tasks = {str(t.id): t.name for t in client.read_task_runs(
            task_run_filter=TaskRunFilter(flow_run_id=TaskRunFilterFlowRunId(any_=[flow_run])))}
        deadline = time.time() + 30
        while True:  # logs reach the server in batches
            logs = client.read_logs(LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run])))
            done = [(tasks.get(str(x.task_run_id), ""), x.message) for x in logs if "done in" in x.message]
            if len(done) >= 5 or time.time() > deadline:
                break
            time.sleep(1)
        artifacts = client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run])))
    gate = [m for name, m in done if name.startswith("gate-part")]
    assert len(gate) == 2, done  # one per gate part, in that task's own log
    assert re.search(r"gomoku-6x6x4-g0002 gate part \d: 4/4 games \(100%\), [\d,]+ positions, [\d,.]+ positions/s,"
                     r" done in \d+s", gate[0]), gate
    assert sum(name.startswith("selfplay-shard") for name, _ in done) == 2
    assert any(name.startswith("train") and "20/20 steps" in m for name, m in done)
    progress = [a for a in artifacts if a.type == "progress"]
    assert {a.key for a in progress} >= {"gomoku-6x6x4-g0002-gate-0", "gomoku-6x6x4-g0002-gate-1"}
    assert all(a.data == 100 for a in progress)


def test_alias_points_where_the_gates_say(two_generations):
    root, records = two_generations
    t = tracker_for(root)
    versions = t.versions()
    assert [v.tags["zero.generation"] for v in versions] == ["0", "1", "2"]
    expected = "1"  # generation 0
    for rec, v in zip(records, versions[1:]):
        assert v.run_id == rec["mlflow_run_id"] and v.tags["zero.gate_passed"] == str(rec["gate"]["passed"]).lower()
        if rec["gate"]["passed"]:
            expected = str(v.version)
        assert rec["champion_after"]["version"] == expected
    assert str(t.champion().version) == expected


def task_runs(flow_run_id: str) -> list:
    """The task runs of one flow run, as the Prefect server holds them."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import TaskRunFilter, TaskRunFilterFlowRunId

    with get_client(sync_client=True) as client:
        return client.read_task_runs(
            task_run_filter=TaskRunFilter(flow_run_id=TaskRunFilterFlowRunId(any_=[flow_run_id])))


def test_promotion_is_a_task_run_of_its_own_after_the_gate(two_generations):
    root, records = two_generations
    for rec in records:
        runs = task_runs(rec["flow_run_id"])
        promote = [t for t in runs if t.name.startswith("promote")]
        gate = [t for t in runs if t.name.startswith("gate-part")]
        assert len(promote) == 1 and promote[0].state.is_completed(), [t.name for t in runs]
        assert promote[0].start_time >= max(t.end_time for t in gate)
    versions = tracker_for(root).versions()  # what the task did: the candidate registered, the alias moved
    assert [v.run_id for v in versions[1:]] == [rec["mlflow_run_id"] for rec in records]


def test_a_run_holds_the_saved_views_metrics_and_only_its_games_params(two_generations):
    from flows.tracking import GENERATION_COLUMNS

    root, records = two_generations
    t = tracker_for(root)
    for rec in records:
        run = t.client.get_run(rec["mlflow_run_id"])
        assert {key for _, key in GENERATION_COLUMNS} <= set(run.data.metrics)
        game = {k: v for k, v in run.data.params.items() if k.startswith("game.")}
        assert game == {"game.name": "gomoku", "game.height": "6", "game.width": "6", "game.k": "4"}


def test_a_finished_generation_is_not_redone(two_generations):
    from flows.generation import zero_generation

    root, records = two_generations
    again = zero_generation(params_file=SMOKE, generation=1, workdir=str(root))
    assert again == json.loads((root / "gens/gomoku-6x6x4/g0001/generation.json").read_text())
    assert len(tracker_for(root).versions()) == 3


def test_bad_params_stop_before_any_work_naming_the_field(harness, workspace):
    from flows.generation import zero_generation
    from zero.config import ConfigError

    (workspace / "bad.yaml").write_text("selfplay:\n  visitz: 3\n")
    with pytest.raises(ConfigError, match="selfplay.visitz: unknown key"):
        zero_generation(params_file="bad.yaml", workdir=str(workspace))
    with pytest.raises(ConfigError, match="train.steps"):
        zero_generation(params_file=SMOKE, overrides=["train.steps=-1"], workdir=str(workspace))
    assert not (workspace / "gens").exists() and not (workspace / "mlflow.db").exists()


def test_a_second_run_for_a_busy_line_is_refused(harness, workspace):
    from prefect.exceptions import CancelledRun

    from flows.generation import zero_generation
    from flows.layout import Workspace

    with Workspace(workspace).lock("gomoku-6x6x4", 1, owner="the-first-run"):  # ends Cancelled, not Failed
        with pytest.raises(CancelledRun, match="refused, no work done: .*already running as flow run the-first-run"):
            zero_generation(params_file=SMOKE, workdir=str(workspace))
    assert not (workspace / "gens/gomoku-6x6x4/g0001").exists()


def test_shards_left_by_an_interrupted_run_are_kept(harness, workspace):
    """A shard already on disk (as a killed run leaves it) is verified and reused, not played again."""
    from flows import stages
    from flows.generation import zero_generation
    from flows.layout import Workspace
    from zero.config import load_params

    params = load_params(workspace / SMOKE)
    ws = Workspace(workspace)
    g0, g1 = ws.generation(params.game.tag, 0), ws.generation(params.game.tag, 1)
    # what an interrupted first run leaves: the snapshot, generation 0 and one finished shard
    ws.start(g1, params)
    stages.init(g0)
    left = stages.selfplay_shard(g1, 1)
    stamp = g1.shard(1).stat().st_mtime_ns
    rec = zero_generation(params_file=SMOKE, workdir=str(workspace))
    assert rec["generation"] == 1 and rec["selfplay"]["games"] == 16
    assert 0 < rec["selfplay"]["nn_evals"]  # shard 0's, played by this run; shard 1's are not counted again
    assert g1.shard(1).stat().st_mtime_ns == stamp
    assert stages.shard_stats(g1.shard(1))["sha256"] == left["sha256"]


# About 40 s on a free core, up to 130 s on a shared one: two whole generations from a fresh workspace.
def test_the_loop_runs_generations_back_to_back(harness, workspace):
    from flows.generation import zero_loop

    records = zero_loop(params_file=SMOKE, generations=2, workdir=str(workspace))
    assert [r["generation"] for r in records] == [1, 2]
    assert records[1]["champion_before"]["sha256"] == records[0]["champion_after"]["sha256"]


def _made_from_a_commit(root):
    records = [json.loads(p.read_text()) for p in sorted((root / "gens").rglob("generation.json"))]
    if any(r.get("git_dirty") != "false" for r in records):
        pytest.skip("the generations ran code that differs from its commit (commit it to re-create them from one)")


def test_a_shipped_champion_is_re_created_from_its_recipe_in_a_fresh_checkout(two_generations, tmp_path):
    """Save generation 2 as a campaign does, ship it from the saved state with its workspace gone, then
    `python -m flows.reproduce` checks out the commit that made it, lays out the recipe's inputs and
    re-creates its five stages with dvc repro: every hash as recorded, the same network."""
    import shutil
    import subprocess
    import sys

    from flows import reproduce
    from flows.layout import LineError
    from flows.ship import ship, ship_saved
    from pipeline_support import TAG
    from zero.config import load_params

    root, _ = two_generations
    _made_from_a_commit(root)
    state = tmp_path / "state"
    saved = ship(root, load_params(root / SMOKE), SMOKE, state)  # make campaign-save
    models = tmp_path / "models"
    elsewhere = shutil.copytree(state, tmp_path / "elsewhere")  # nothing of the workspace is read from here on
    lineage = ship_saved(elsewhere, models, TAG)
    assert lineage == saved and (models / f"{TAG}.pt").read_bytes() == (state / f"{TAG}.pt").read_bytes()
    recipe = json.loads((models / f"{TAG}.reproduce" / "recipe.json").read_text())
    assert recipe["generation"] == 2 and [g["g"] for g in recipe["generations"]] == [0, 1, 2]
    assert lineage["reproduce"]["command"] == f"make reproduce LINE={TAG}"

    again = tmp_path / "again"
    proc = subprocess.run([sys.executable, "-m", "flows.reproduce", "--line", TAG, "--models", str(models),
                           "--dir", str(again)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"champion sha256 {lineage['sha256']} equals" in proc.stdout
    rows = [line for line in proc.stdout.splitlines() if line.strip().startswith(("same", "DIFFERS"))]
    assert len(rows) == 5 and all(r.strip().startswith("same") for r in rows)
    assert (again / "gens" / TAG / "g0002" / "champion.pt").read_bytes() == (models / f"{TAG}.pt").read_bytes()

    # A recorded hash that the re-creation does not give is named, output by output.
    stages = [s for s in recipe["generations"][-1]["lock"]]
    wrong = json.loads(json.dumps(recipe))
    wrong["generations"][-1]["lock"][f"train@{TAG}-g0002"]["outs"][0]["md5"] = "0" * 32
    rows = reproduce.compare(wrong, again, stages)
    assert [r["path"] for r in rows if not r["same"]] == [f"gens/{TAG}/g0002/candidate.pt"]

    # A saved champion whose recipe or network is not its lineage's is refused, and models/ is left as it was.
    shipped = {p.relative_to(models): p.read_bytes() for p in models.rglob("*") if p.is_file()}
    (elsewhere / f"{TAG}.reproduce" / "recipe.json").write_text(json.dumps({**recipe, "champion_sha256": "0" * 64}))
    with pytest.raises(LineError, match="recipe.json: re-creates 000000000000, not the saved champion"):
        ship_saved(elsewhere, models, TAG)
    (elsewhere / f"{TAG}.pt").write_bytes((models / f"{TAG}.pt").read_bytes()[:-7])
    with pytest.raises(LineError, match=f"{TAG}.pt: sha256 .* is not its lineage's"):
        ship_saved(elsewhere, models, TAG)
    assert {p.relative_to(models): p.read_bytes() for p in models.rglob("*") if p.is_file()} == shipped


def test_the_whole_run_is_re_created_from_generation_0_and_a_bad_input_is_refused(two_generations, tmp_path):
    from flows import reproduce
    from flows.layout import LineError
    from flows.ship import ship
    from pipeline_support import TAG
    from zero.config import load_params

    root, _ = two_generations
    _made_from_a_commit(root)
    models = tmp_path / "models"
    params = load_params(root / SMOKE)
    ship(root, params, SMOKE, models)
    assert (models / f"{TAG}.window" / "window.json").is_file()
    # shipped again without its window (a GPU box's, too large to carry): the earlier window goes with it
    lineage = ship(root, params, SMOKE, models, window=False)
    assert lineage["window"] is None and not (models / f"{TAG}.window").exists()
    said = []
    assert reproduce.reproduce(models, TAG, tmp_path / "chain", chain=True, say=said.append), "\n".join(said)
    assert sum(line.strip().startswith("same") for line in said) == 13  # init (3 outputs) and 2 x 5 stages
    assert (tmp_path / "chain" / "gens" / TAG / "g0002" / "champion.pt").read_bytes() == \
        (models / f"{TAG}.pt").read_bytes() and lineage["sha256"] in "\n".join(said)
    with pytest.raises(LineError, match="shipped without its training window .*with --chain"):
        reproduce.reproduce(models, TAG, tmp_path / "last", say=said.append)
    assert not (tmp_path / "last").exists()

    ship(root, params, SMOKE, models)
    before = models / f"{TAG}.reproduce" / "champion-before.pt"
    before.write_bytes(before.read_bytes()[:-7])
    with pytest.raises(LineError, match="champion-before.pt: not the network the generation started from"):
        reproduce.reproduce(models, TAG, tmp_path / "bad", say=said.append)
    assert not (tmp_path / "bad").exists()  # refused before anything was written


def test_the_data_is_recorded_and_pushed_by_a_task_run_of_the_generation_beside_its_training(two_generations):
    root, records = two_generations
    for rec in records:
        runs = task_runs(rec["flow_run_id"])
        pushes = sorted((t for t in runs if t.name.startswith("dvc-push")), key=lambda t: t.start_time)
        train = next(t for t in runs if t.name.startswith("train"))
        gate = min((t for t in runs if t.name.startswith("gate-part")), key=lambda t: t.start_time)
        promote = next(t for t in runs if t.name.startswith("promote"))
        # generation 1 also pushes generation 0's network; then the data, then everything at the end
        assert len(pushes) == (3 if rec["generation"] == 1 else 2), [t.name for t in runs]
        assert all(t.state.is_completed() for t in pushes)
        data_push, last_push = pushes[-2], pushes[-1]
        # the data's dvc commit and push run while the candidate trains (a dvc process each: the training
        # started before they ended), and end before the candidate is recorded and gated
        assert train.start_time < data_push.end_time <= gate.start_time
        assert last_push.start_time >= promote.end_time
    # the run's data tags, set once DVC had recorded the data, are the record's
    t = tracker_for(root)
    for rec in records:
        tags = t.client.get_run(rec["mlflow_run_id"]).data.tags
        assert all(tags[f"zero.data.{name}"] == md5 for name, md5 in rec["data"].items())


def test_the_record_times_each_step_of_the_generation_and_the_run_holds_them(two_generations):
    from flows.timeline import STEPS, main as timeline_main

    root, records = two_generations
    t = tracker_for(root)
    for rec in records:
        steps = rec["timeline"]
        assert tuple(steps) == STEPS  # in the order they ran
        assert all(v >= 0 for v in steps.values()) and steps["selfplay"] > 0 and steps["train"] > 0
        # the steps from the flow run's start to the push cover the generation's own seconds
        assert sum(steps.values()) >= rec["seconds"] - 0.5
        on_disk = json.loads((root / "gens/gomoku-6x6x4" / f"g{rec['generation']:04d}/generation.json").read_text())
        assert on_disk["timeline"] == steps
        metrics = t.client.get_run(rec["mlflow_run_id"]).data.metrics
        assert metrics["seconds_selfplay"] == steps["selfplay"] and metrics["seconds_gate"] == steps["gate"]
        # the network's evaluations in the generation's self-play, and their rate up to the record's writing
        assert metrics["selfplay_nn_evals"] == rec["selfplay"]["nn_evals"] > rec["selfplay"]["positions"]
        before_record = sum(v for k, v in steps.items() if k not in ("record", "publish"))
        assert metrics["evals_per_s"] == pytest.approx(rec["selfplay"]["nn_evals"] / before_record, rel=0.01)
        # self-play's own rate, set beside the generations before it on this machine (too few here to judge)
        pace = on_disk["pace"]
        assert pace["evals_per_s"] == pytest.approx(rec["selfplay"]["nn_evals"] / steps["selfplay"], rel=0.01)
        assert pace["generations_before"] == rec["generation"] - 1 and "slow" not in pace
        assert metrics["selfplay_evals_per_s"] == pace["evals_per_s"]
    assert timeline_main([str(root / "gens/gomoku-6x6x4")]) == 0
