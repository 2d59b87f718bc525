"""The whole pipeline as a person runs it, and killed at any time: a generation recovers, as docs/pipeline.md
says, to the bytes of an uninterrupted run.

Two workspaces, each with its own Prefect server and serve process on 127.0.0.1
(git + DVC repo, its own PREFECT_HOME and mlflow.db, the smoke params):
the reference runs generations 1..N without interruption (`python -m flows.serve run`,
what `make run` calls); its first generation is checked for what a generation must
leave behind (shards, SGFs, dvc.lock, the DVC remote, the MLflow run, the registry),
its second is remade by `dvc repro` to the recorded hashes, and after the kill tests a
further generation started with `prefect deployment run` refuses a second run of its
line, is killed mid-self-play with shards done, and is retried without losing or
replaying a game. The other workspace runs the
same generations and is hit once in each with `kill -9`. A kill point is a
target and a step of the generation. The targets: the serve process, the flow
process, both at once (the serve process group: nobody is left to report the
run), or the worker doing the step's work (a self-play, training or gate task's
pool worker, the `dvc` process of a DVC push or commit). The steps: self-play,
a DVC push, training, the gate and registry promotion, each told from what the
run shows while it runs (its progress artifacts in Prefect, a `dvc push` child
of the flow process, the champion file of promotion). Recovery is docs/pipeline.md's:
`python -m flows.serve run` (what `make run` calls) ends its wait, and `python
-m flows.serve retry <id>` resumes the run. Then generation g must have the
reference's dvc.lock entries (same shards, same hashes), every game once, one
MLflow run, one model version, and the `champion` alias only on versions that
passed their gate. A Ray actor's kill is in tests/test_flow_ray.py, on a real
cluster.

`make test` runs the four fixed kill points; ZERO_FAULTS=<n> adds the first n of
the 20 seeded ones (every target in every step, in a seeded order, at a seeded
moment of the step) and ZERO_FAULTS=full all 20.
"""

import json
import os
import random
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from pipeline_support import BIN, SMOKE, TAG, Pipeline, free_port, make_workspace, selfplay_sgf_games
from zero.sgf import read_collection

# The refused and killed generation plays longer shards, so that the run can be killed between them.
SLOW_SELFPLAY = ["pipeline.selfplay_shards=4", "selfplay.games_per_shard=24", "selfplay.visits=48",
                 "selfplay.concurrent_games=24"]

pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.timeout(5400)]

FAULTS = os.environ.get("ZERO_FAULTS", "0")
SEED = int(os.environ.get("ZERO_FAULTS_SEED", "20"))
TARGETS = ("serve", "flow", "group", "worker")
STEPS = ("self-play", "DVC push", "training", "gate", "promotion")
KILL_POINTS = len(TARGETS) * len(STEPS) if FAULTS == "full" else int(FAULTS) if FAULTS.isdigit() else 0
# generation 1: kill of the serve process group mid-self-play; 2: the same, then `prefect flow-run cancel`;
# 3: the serve process alone mid-self-play (its flow process ends with it); 4: the worker mid-training
FIXED = 4
GENERATIONS = FIXED + KILL_POINTS
RESULTS = Path(os.environ.get("ZERO_FAULTS_REPORT", "")) if os.environ.get("ZERO_FAULTS_REPORT") else None


def generation_dir(p: Pipeline, g: int) -> Path:
    return p.root / "gens" / TAG / f"g{g:04d}"


def lock_entries(p: Pipeline, g: int) -> dict:
    """dvc.lock's stages of generation g: their outs' paths and hashes (deps included)."""
    stages = yaml.safe_load((p.root / "dvc.lock").read_text())["stages"]
    key = f"{TAG}-g{g:04d}"
    return {name: {"outs": entry.get("outs"), "deps": entry.get("deps")}
            for name, entry in stages.items() if name.endswith("@" + key)}


def start_run(p: Pipeline) -> subprocess.Popen:
    """`python -m flows.serve run params-smoke.yaml`, what `make run` calls, in the background."""
    return subprocess.Popen([str(BIN / "python"), "-m", "flows.serve", "--root", str(p.root), "--port", str(p.port),
                             "run", SMOKE, "--interval", "1", "--grace", "30"],
                            cwd=p.root, env=p.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def run_id_of(watch: subprocess.Popen) -> tuple[str, list[str]]:
    lines = []
    for line in watch.stdout:
        lines.append(line)
        m = re.search(r"\(([0-9a-f-]{36})\)", line)
        if m:
            return m.group(1), lines
    raise AssertionError("".join(lines))


def start_watched(p: Pipeline) -> tuple[subprocess.Popen, str, int]:
    """start_run, once its flow process has recorded itself: (the wait, the run id, the flow's pid)."""
    watch = start_run(p)
    run_id, _ = run_id_of(watch)
    return watch, run_id, flow_pid(p, run_id)


def finish(watch: subprocess.Popen, timeout: float = 600) -> tuple[int, str]:
    out, _ = watch.communicate(timeout=timeout)
    return watch.returncode, out


def flow_pid(p: Pipeline, run_id: str, timeout: float = 300) -> int:
    """The pid of the flow process, once it has recorded itself."""
    path = Path(p.env["PREFECT_HOME"]) / "runs" / f"{run_id}.json"
    deadline = time.time() + timeout
    while time.time() < deadline:
        if path.is_file():
            return json.loads(path.read_text())["pid"]
        time.sleep(0.1)
    raise AssertionError(f"flow run {run_id} never recorded its process: {p.flow_run(run_id)['state']}")


def children(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def workers(flow: int) -> list[int]:
    """The flow process's task workers: the children of its fork server (flows.stages.worker_context)."""
    found = []
    for pid in children(flow):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if "multiprocessing.forkserver" in cmd:
            found += children(pid)
    return found


def dvc_children(flow: int, verb: str | None = None) -> list[int]:
    """The flow process's `dvc` processes (only those running `dvc <verb>` when verb is given)."""
    found = []
    for pid in children(flow):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
        except OSError:
            continue
        at = [i for i, arg in enumerate(argv[:2]) if Path(arg).name == "dvc"]  # `dvc ...` or `python .../dvc ...`
        if at and (verb is None or verb in argv[at[0] + 1:at[0] + 2]):
            found.append(pid)
    return found


def steps_running(p: Pipeline, run_id: str) -> set[str]:
    """The steps (selfplay, train, gate) whose progress artifact this run has created and not completed."""
    running = set()
    for a in p.artifacts(run_id):
        m = re.search(r"-g\d{4}-(selfplay|train|gate)\b", a.get("key") or "")
        if m and a.get("type") == "progress" and float(a.get("data") or 0.0) < 100.0:
            running.add(m.group(1))
    return running


def steps_now(p: Pipeline, g: int, run_id: str, flow: int) -> list[str]:
    """The steps generation g is in, from what the run shows, the first named first: finished, DVC push,
    promotion, gate, training, self-play, or between steps. The data's DVC push runs beside the training,
    so both can show at once."""
    d = generation_dir(p, g)
    if (d / "generation.json").is_file():
        return ["finished"]
    now = ["DVC push"] if dvc_children(flow, "push") else []
    if (d / "champion.pt").is_file():
        return now + ["promotion"]
    running = steps_running(p, run_id)
    now += [step for step, name in (("gate", "gate"), ("training", "train"), ("self-play", "selfplay"))
            if name in running]
    return now or ["between steps"]


def wait_step(p: Pipeline, g: int, run_id: str, flow: int, step: str, timeout: float = 600) -> bool:
    """Wait until generation g is in `step`; False if the run finished or its flow process ended first."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        now = steps_now(p, g, run_id, flow)
        if step in now:
            return True
        if now == ["finished"] or _dead(flow):
            return False
        time.sleep(0.02)
    raise AssertionError(f"generation {g} never reached {step}: {p.flow_run(run_id)['state']}")


def kill(p: Pipeline, target: str, flow: int, step: str | None = None) -> str:
    """kill -9 the target; returns what was killed. The worker is the process doing the step's work: a `dvc`
    process when one runs (the training's task worker when `step` is training: the data's push runs beside
    it), else a task worker of the pool; with neither, the flow process does the work."""
    serve = int((Path(p.env["PREFECT_HOME"]) / "serve.pid").read_text())
    if target == "worker":
        dvc, alive = dvc_children(flow), workers(flow)
        if dvc and not (step == "training" and alive):
            os.kill(dvc[0], signal.SIGKILL)
            return "dvc process"
        if alive:
            os.kill(alive[0], signal.SIGKILL)
            return "worker"
        target = "flow"
    if target == "group":
        os.killpg(serve, signal.SIGKILL)
    else:
        os.kill(serve if target == "serve" else flow, signal.SIGKILL)
    return target


def recover(p: Pipeline, run_id: str, watch: subprocess.Popen) -> tuple[str, int]:
    """docs/pipeline.md's recovery: the wait ends; retry the run unless it completed by itself. (how, wait's code)"""
    code, out = finish(watch, timeout=600)
    if code == 0:
        assert p.flow_run(run_id)["state"]["type"] == "COMPLETED"
        return "completed by itself", code
    state = p.flow_run(run_id)["state"]
    assert state["type"] in ("CRASHED", "FAILED", "CANCELLED"), (state, out)
    assert f"python -m flows.serve retry {run_id}" in out, out
    p.serve("retry", run_id)
    run = p.wait_state(run_id, {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}, timeout=600)
    assert run["state"]["type"] == "COMPLETED", run["state"]
    return f"{state['type'].lower()}, retried", code


def kill_mid_selfplay(p: Pipeline, target: str) -> tuple[str, subprocess.Popen, int]:
    """Start a run and kill `target` once its self-play workers are up: (run id, the wait, the flow's pid)."""
    watch, run_id, flow = start_watched(p)
    deadline = time.time() + 300
    while time.time() < deadline and not workers(flow):
        time.sleep(0.1)
    assert kill(p, target, flow) == target
    return run_id, watch, flow


def check_generation(p: Pipeline, ref: Pipeline, g: int, run_id: str) -> None:
    """Generation g as the reference made it, every game once, one run and version, the alias where it belongs."""
    assert lock_entries(p, g) == lock_entries(ref, g)
    d = generation_dir(p, g)
    record = json.loads((d / "generation.json").read_text())
    assert record["flow_run_id"] == run_id
    games = sorted((d / "games").glob("shard-*.npz"))
    assert [x.name for x in games] == ["shard-000.npz", "shard-001.npz"]
    assert selfplay_sgf_games(d / "games") == record["selfplay"]["games"] == 16
    assert not list(d.rglob("*.tmp"))
    t, r = p.tracker(), ref.tracker()
    runs, ref_runs = generation_runs(t, g), generation_runs(r, g)
    assert len(runs) == 1 and runs[0].info.status == "FINISHED"
    curve = loss_steps(t, runs[0])
    assert curve == loss_steps(r, ref_runs[0])
    assert curve == list(range(len(curve))) and curve, "the training curve has a gap or a step twice"
    versions = t.versions()
    assert [v.tags["zero.generation"] for v in versions] == [str(i) for i in range(g + 1)]
    champion = t.champion()
    assert champion.tags["zero.generation"] == "0" or champion.tags["zero.gate_passed"] == "true"
    passed = [v for v in versions if v.tags.get("zero.gate_passed") == "true"]
    expected = max(passed, key=lambda v: int(v.version)) if passed else versions[0]
    assert str(champion.version) == str(expected.version)
    assert str(champion.version) == str(r.champion().version)


def generation_runs(tracker, g: int) -> list:
    """The MLflow runs of generation g."""
    return tracker.client.search_runs([tracker.experiment_id], f"tags.`zero.generation` = '{g}'")


def loss_steps(tracker, run) -> list[int]:
    """The steps of a run's training loss curve, sorted."""
    return sorted(m.step for m in tracker.client.get_metric_history(run.info.run_id, "loss"))


def pipeline_at(tmp_path_factory, name: str) -> Pipeline:
    p = Pipeline(make_workspace(tmp_path_factory.mktemp(name) / "ws"), free_port())
    p.serve("up", timeout=300)
    return p


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """Generations 1..N run back to back without interruption; the seconds each took and each flow run's id.
    About 2.5 minutes on a free core, up to 4 on a shared one: a server, the serve process and four served smoke
    generations, each a flow run in a process of its own (the module's other workspace waits for them)."""
    p = pipeline_at(tmp_path_factory, "reference")
    try:
        p.seconds, p.run_ids = [], []
        for g in range(1, GENERATIONS + 1):
            started = time.time()
            watch = start_run(p)
            run_id, lines = run_id_of(watch)
            code, out = finish(watch)
            assert code == 0, "".join(lines) + out
            p.seconds.append(time.time() - started)
            p.run_ids.append(run_id)
        yield p
    finally:
        p.serve("down", check=False)


@pytest.fixture(scope="module")
def faulty(tmp_path_factory):
    p = pipeline_at(tmp_path_factory, "faulty")
    try:
        yield p
    finally:
        p.serve("down", check=False)


def test_a_served_generation_leaves_its_shards_lock_remote_mlflow_run_and_model_version(reference):
    p, g1 = reference, generation_dir(reference, 1)
    run_id = p.run_ids[0]
    assert p.flow_run(run_id)["state"]["type"] == "COMPLETED"
    # shards and SGFs exist
    assert sorted(x.name for x in (g1 / "games").glob("*.npz")) == ["shard-000.npz", "shard-001.npz"]
    assert selfplay_sgf_games(g1 / "games") == 16
    assert sum(len(read_collection(p)) for p in (g1 / "gate/sgf").rglob("match.sgf.gz")) == 8
    # dvc.lock records them, and the default remote holds them
    games = {o["path"]: o for o in lock_entries(p, 1)[f"selfplay@{TAG}-g0001"]["outs"]}[f"gens/{TAG}/g0001/games"]
    assert games["nfiles"] == 4  # 2 shards and their 2 SGF collections
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
    # a model version for each generation; the alias on the newest that passed its gate
    versions = t.versions()
    assert [v.tags["zero.generation"] for v in versions] == [str(g) for g in range(GENERATIONS + 1)]
    assert versions[1].run_id == run.info.run_id
    assert versions[1].tags["zero.gate_passed"] == str(record["gate"]["passed"]).lower()
    passed = [v for v in versions if v.tags.get("zero.gate_passed") == "true"]
    assert str(t.champion().version) == str(max(passed, key=lambda v: int(v.version)).version if passed else 1)


def test_dvc_repro_of_generation_two_recreates_the_recorded_hashes(reference):
    p, g2 = reference, generation_dir(reference, 2)
    before = (p.root / "dvc.lock").read_text()
    for name in ("games", "gate"):
        shutil.rmtree(g2 / name)
    for name in ("window.json", "candidate.pt", "champion.pt"):
        (g2 / name).unlink()
    stages = [f"{s}@{TAG}-g0002" for s in ("selfplay", "dataset", "train", "gate", "champion")]
    out = p.sh(str(BIN / "dvc"), "repro", "--force", "--single-item", *stages)
    assert re.findall(r"Running stage '([^']+)'", out.stdout) == stages
    assert (p.root / "dvc.lock").read_text() == before
    assert "up to date" in p.sh(str(BIN / "dvc"), "status").stdout.lower()


def test_a_run_killed_with_its_serve_process_is_crashed_and_resumed(reference, faulty):
    """kill -9 of the serve process group mid-self-play: nobody reports, the wait ends, retry completes it."""
    p, g = faulty, 1
    run_id, watch, _ = kill_mid_selfplay(p, "group")
    code, out = finish(watch, timeout=120)
    assert code == 1 and "is gone" in out and f"retry {run_id}" in out, out
    run = p.flow_run(run_id)
    assert run["state"]["type"] == "CRASHED", run["state"]
    tasks = p.task_runs(run_id)
    assert tasks and not [t for t in tasks if t["state"]["type"] in ("RUNNING", "PENDING")]
    from flows.layout import Workspace

    Workspace(p.root).lock(TAG, g).acquire().release()  # the line is free: its holder is dead
    p.serve("retry", run_id)
    run = p.wait_state(run_id, {"COMPLETED", "FAILED", "CRASHED"}, timeout=600)
    assert run["state"]["type"] == "COMPLETED", run["state"]
    check_generation(p, reference, g, run_id)


def test_a_cancel_of_a_run_whose_process_is_gone_ends_cancelled_and_retry_resumes_it(reference, faulty):
    p, g = faulty, 2
    watch, run_id, flow = start_watched(p)
    time.sleep(2)
    kill(p, "group", flow)
    watch.kill()
    watch.wait()
    p.sh(str(BIN / "prefect"), "flow-run", "cancel", run_id)
    assert p.flow_run(run_id)["state"]["type"] == "CANCELLING"  # nobody is left to stop it
    out = p.serve("cancel", run_id, "--timeout", "5").stdout
    assert p.flow_run(run_id)["state"]["type"] == "CANCELLED", out
    p.serve("retry", run_id)
    run = p.wait_state(run_id, {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}, timeout=600)
    assert run["state"]["type"] == "COMPLETED", run["state"]
    check_generation(p, reference, g, run_id)


def test_a_flow_whose_serve_process_is_killed_ends_with_it_and_retry_resumes_it(reference, faulty):
    """kill -9 of the serve process alone mid-self-play: the flow process it started ends too (a flow left
    behind once waited forever on its task pool), the wait ends, retry completes the generation."""
    p, g = faulty, 3
    run_id, watch, flow = kill_mid_selfplay(p, "serve")
    deadline = time.time() + 30
    while time.time() < deadline and Path(f"/proc/{flow}").exists() and not _dead(flow):
        time.sleep(0.1)
    assert _dead(flow), "the flow process outlived its serve process"
    how, _ = recover(p, run_id, watch)
    assert how != "completed by itself"
    check_generation(p, reference, g, run_id)


def test_a_worker_killed_mid_training_fails_the_run_and_retry_resumes_it(reference, faulty):
    """kill -9 of the task worker while the candidate trains: the run ends failed or crashed, never running
    on, and retry trains the same candidate (the reference's dvc.lock) and finishes the generation."""
    p, g = faulty, 4
    watch, run_id, flow = start_watched(p)
    assert wait_step(p, g, run_id, flow, "training")
    assert kill(p, "worker", flow, "training") == "worker"
    how, _ = recover(p, run_id, watch)
    assert how != "completed by itself"
    check_generation(p, reference, g, run_id)


def _dead(pid: int) -> bool:
    from flows.liveness import _zombie

    return not Path(f"/proc/{pid}").exists() or _zombie(pid)


def kill_points(rng: random.Random) -> list[tuple[str, str]]:
    """Every target in every step, in a seeded order; the first KILL_POINTS of them."""
    points = [(target, step) for step in STEPS for target in TARGETS]
    rng.shuffle(points)
    return points[:KILL_POINTS]


# The most seconds a kill waits once its step has begun, a seeded share of what the step lasts in a smoke
# generation on one core (self-play 2.5 s once its workers are up, training 4 s, the gate 0.6 s); a DVC
# push and promotion are hit as soon as they begin (promotion's own push shows as a DVC push).
STEP_WAIT_S = {"self-play": 2.0, "DVC push": 0.0, "training": 2.5, "gate": 0.3, "promotion": 0.0}


@pytest.mark.long
@pytest.mark.skipif(KILL_POINTS == 0, reason="seeded kill points run with ZERO_FAULTS=<n> or full")
def test_seeded_kills_in_every_step_recover_to_the_uninterrupted_bytes(reference, faulty):
    from flows.layout import Workspace

    p, rng = faulty, random.Random(SEED)
    rows = []
    for i, (target, step) in enumerate(kill_points(rng)):
        g = Workspace(p.root).next_generation(TAG)  # after the fixed kill points' when they ran (not in test-long)
        wait = rng.uniform(0.0, STEP_WAIT_S[step])
        started = time.time()
        watch, run_id, flow = start_watched(p)
        reached = wait_step(p, g, run_id, flow, step)
        time.sleep(wait if reached else 0.0)
        now = steps_now(p, g, run_id, flow)
        at = step if step in now else now[0]
        killed = "nothing (finished first)" if at == "finished" else kill(p, target, flow, at)
        print(f"generation {g}: killed {killed} {wait:.1f}s into {step} (at the kill: {at})", flush=True)
        how, _ = recover(p, run_id, watch)
        check_generation(p, reference, g, run_id)
        rows.append({"generation": g, "target": target, "step": step, "killed": killed, "wait_s": round(wait, 2),
                     "at_kill": at, "recovery": how, "seconds": round(time.time() - started, 1)})
        print(json.dumps(rows[-1]), flush=True)
    if RESULTS:
        RESULTS.write_text(json.dumps({"seed": SEED, "reference_seconds": reference.seconds, "kills": rows},
                                      indent=1) + "\n")
    assert len(rows) == KILL_POINTS
    if KILL_POINTS == len(TARGETS) * len(STEPS):  # the full set hit every step it meant to
        assert {r["at_kill"] for r in rows} >= set(STEPS), rows


def test_a_second_run_is_refused_then_the_killed_run_is_retried_without_losing_or_replaying_games(reference):
    """Last in the module: a further generation of the reference (its earlier ones are done and compared), started
    with `prefect deployment run` as a user would. A second run of the line is refused; the first is killed once
    a shard of four is done, and its retry keeps the finished shards (their bytes and their CPU time)."""
    p = reference
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
    g = holder["generation"]
    assert g == GENERATIONS + 1
    gen = generation_dir(p, g)

    second, proc = p.deployment_run(f"params_file={SMOKE}", overrides, check=False)
    assert proc.returncode == 1
    state = p.flow_run(second)["state"]
    assert state["type"] == "CANCELLED" and "already running" in state["message"] and first in state["message"]

    deadline = time.time() + 300
    while time.time() < deadline and not list((gen / "games").glob("shard-*.npz")):
        time.sleep(0.2)
    done = {x.name: x.stat().st_mtime_ns for x in (gen / "games").glob("shard-*.npz")}
    assert done, "no shard finished before the deadline"
    os.kill(holder["pid"], signal.SIGKILL)
    assert p.wait_state(first, {"CRASHED", "FAILED"}, timeout=120)["state"]["type"] == "CRASHED"
    assert not (gen / "generation.json").exists()

    p.serve("retry", first)
    run = p.wait_state(first, {"COMPLETED", "FAILED", "CRASHED"}, timeout=600)
    assert run["state"]["type"] == "COMPLETED", run["state"]
    shards = sorted((gen / "games").glob("shard-*.npz"))
    assert [x.name for x in shards] == [f"shard-{k:03d}.npz" for k in range(4)]
    for name, stamp in done.items():  # finished before the kill: kept, not played again
        assert (gen / "games" / name).stat().st_mtime_ns == stamp
    record = json.loads((gen / "generation.json").read_text())
    assert record["selfplay"]["games"] == 4 * 24 and record["flow_run_id"] == first
    assert record["selfplay"]["shards_reused"] >= len(done)
    # the shards the killed attempt finished are counted in the generation's compute, at their CPU time
    spent = sum(json.loads((gen / "spent" / f"selfplay-{name[6:9]}.json").read_text())["cpu_s"] for name in done)
    assert spent > 0  # the record keeps tenths of a second, rounded: at most 0.05 s under the sum
    assert record["compute"]["cpu_s_by_stage"]["earlier_attempts"] >= spent - 0.05 - 1e-9
    print(f"killed with {len(done)} of 4 shards done; the retry reused {record['selfplay']['shards_reused']}")
    assert selfplay_sgf_games(gen / "games") == 4 * 24
    assert not list((gen / "games").rglob("*.tmp"))
    from flows.stages import shard_stats

    assert sum(shard_stats(x)["games"] for x in shards) == 4 * 24
    window = json.loads((gen / "window.json").read_text())
    assert [s["generation"] for s in window["shards"]][-4:] == [g] * 4
    # one MLflow run and one model version for the generation
    t = p.tracker()
    runs = generation_runs(t, g)
    assert len(runs) == 1 and runs[0].info.status == "FINISHED"
    assert [v.tags["zero.generation"] for v in t.versions()] == [str(i) for i in range(g + 1)]
    gate = json.loads((gen / "gate/result.json").read_text())
    champion = t.champion()
    if gate["passed"]:
        assert champion.tags["zero.generation"] == str(g)
    else:
        assert champion.tags["zero.generation"] != str(g)
