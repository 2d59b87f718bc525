"""`zero-generation`: one best-player generation as one Prefect flow run.

    champion -> self-play (K tasks) -> dataset (DVC) -> train (MLflow run) -> gate (J tasks) -> promote

Tasks are thin: they call the functions of flows.stages, which `dvc repro`
runs too, with the same derived seeds, so both write the same bytes. Heavy
tasks (self-play shards, training, gate parts) persist their results and are
cached on their inputs: a retried or re-triggered run of a generation takes
finished tasks from the cache, and a shard that exists and verifies is never
played twice. One run at a time may work on a game line; a second is refused.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import contextvars
import time
from collections.abc import Callable
from pathlib import Path

from prefect import flow, get_run_logger, task
from prefect.cache_policies import INPUTS, NO_CACHE, TASK_SOURCE
from prefect.context import get_run_context
from prefect.settings import get_current_settings
from prefect.task_runners import ProcessPoolTaskRunner

from flows import lineage, liveness, stages, standalone
from flows.capacity import require_resources
from flows.compute import cpu_seconds, earlier_cpu_seconds, fresh_cpu_seconds, machine_compute
from flows.ladder import run_ladder
from flows.layout import Generation, LineBusy, LineError, Workspace, read_json, write_json
from flows.request import GenerationRequest
from flows.ship import ship as ship_line
from flows.timeline import Timeline, pace, pace_text, records
from zero.config import usable_cores
from zero.ladder import LadderError

# flows.tracking (mlflow) and flows.actors (ray, an optional extra) are imported in the functions that use
# them: a task's worker process, which imports this module, loads neither unless its task needs it.

FLOW_NAME = "zero-generation"
CACHED = (INPUTS - "run_id" - "tracking" - "actor") + TASK_SOURCE


def _on_ray() -> bool:
    return type(get_run_context().task_runner).__name__ == "RayTaskRunner"


def _resources(num_gpus: float, delegated: bool = False):
    """Ray resources for a task when the flow runs on a RayTaskRunner (checked against the cluster); else none.

    A `delegated` task only waits for an actor that holds the resources, so it asks for none; its
    worker process ends with it, so no idle process keeps a handle on an actor when the actor is ended.
    """
    if not _on_ray():
        return contextlib.nullcontext()
    from prefect_ray.context import remote_options

    if delegated:
        return remote_options(num_cpus=0, num_gpus=0, max_calls=1)
    require_resources(num_gpus)  # a task asking for a GPU no node has would wait forever
    return remote_options(num_gpus=num_gpus)


# --- tasks ---------------------------------------------------------------------------------------
# Arguments are plain strings and numbers: the cache key is their hash plus the task's source.
# params_hash and champion_sha are there for the key: a change of params or network is a new task.


@task(name="selfplay-shard", persist_result=True, cache_policy=CACHED, retries=1)
def selfplay_shard_task(root: str, gen_rel: str, shard: int, params_hash: str, champion_sha: str,
                        actor: str | None = None) -> dict:
    """Play a shard here, or on the named self-play actor (flows.actors; not part of the cache key)."""
    if actor:
        from flows.actors import play_on

        return play_on(actor, root, gen_rel, shard)
    return stages.selfplay_shard(stages.parse_gen_dir(gen_rel, root), shard)


@task(name="gate-part", persist_result=True, cache_policy=CACHED, retries=1)
def gate_part_task(root: str, gen_rel: str, part: int, params_hash: str, candidate_sha: str, champion_sha: str) -> dict:
    return stages.gate_part(stages.parse_gen_dir(gen_rel, root), part)


@task(name="train", persist_result=True, cache_policy=CACHED)
def train_task(root: str, gen_rel: str, params_hash: str, champion_sha: str, window_sha: str, run_id: str,
               tracking: str | None = None) -> dict:
    """Train the candidate, streaming per-step metrics to the generation's MLflow run.

    `tracking` is the flow's MLflow tracking URI: a worker on another node (Ray) writes
    to the flow's tracking store whatever its own environment says.
    """
    from flows.tracking import Tracker

    gen = stages.parse_gen_dir(gen_rel, root)
    tracker = Tracker(root, gen.tag, uri=tracking)
    log_step = tracker.step_logger(run_id)
    # A resumed training first replays its kept steps: they fill the curve where a killed worker's unsent
    # buffer left a gap, and the logger skips the steps the run already holds.
    summary = stages.train(gen, on_step=log_step, replay_kept=True)
    kept = stages.trained_elsewhere(gen) if not summary.get("trained") else None
    if kept and kept["summary"].get("sha256") == summary["sha256"]:
        for i, metrics in kept["steps"]:  # trained by flows.standalone elsewhere: its curves, as if streamed
            log_step(i, metrics)
    log_step.flush()
    return summary


@task(name="init-network", persist_result=True, cache_policy=CACHED)
def init_task(root: str, gen_rel: str, params_hash: str) -> dict:
    return stages.init(stages.parse_gen_dir(gen_rel, root))


# A refused push is retried after 10 s, 1 min and 5 min: time for a remote to restart; one that stays down fails
# the run within minutes.
PUSH_RETRY_DELAYS_S = [10, 60, 300]


@task(name="dvc-push", cache_policy=NO_CACHE, retries=len(PUSH_RETRY_DELAYS_S), retry_delay_seconds=PUSH_RETRY_DELAYS_S)
def push_task(root: str, stage_names: list[str]) -> dict:
    """`dvc push` of the stages' outputs to the default remote; the remote ({"name", "url"}). A failure is
    lineage.PushError, naming the remote, the stages and dvc's message. Run in the flow's process (a thread of it
    for the early pushes), where the workspace is."""
    return lineage.push(root, stage_names)


def _fan_out(task_fn, args_of, n: int, num_gpus: float, check, delegated: bool = False) -> list[dict]:
    """Submit n tasks, wait, and re-run (cache refreshed) any whose output no longer checks."""
    with _resources(num_gpus, delegated):
        futures = [task_fn.submit(*args_of(i)) for i in range(n)]
    results = [_reused(f) for f in futures]
    stale = [i for i, r in enumerate(results) if not check(i, r)]
    if stale:
        with _resources(num_gpus, delegated):
            again = {i: task_fn.with_options(refresh_cache=True).submit(*args_of(i)) for i in stale}
        for i, f in again.items():
            results[i] = _reused(f)
    return results


def _reused(future) -> dict:
    """A task's result, marked `reused` when it came from the cache or from a file already on disk."""
    result = dict(future.result())
    result["reused"] = future.state.name == "Cached" or result.get("replayed") is False
    return result


# --- the flow ------------------------------------------------------------------------------------


class WarmProcessPoolTaskRunner(ProcessPoolTaskRunner):
    """Prefect's process pool with its workers forked from a server that has imported the stages and this
    module once (stages.worker_context), where Prefect spawns each worker afresh: every generation, each
    worker would import torch, Prefect and the engine again, seconds of a generation's time.

    One worker per core this process may use (its affinity; Prefect's own default counts the machine's): a
    campaign pinned to one core plays its self-play shards in turn, not time-sliced on that core, where they
    took 1.19 times as long (docs/performance/cpu-2026-11-29). Prefect's
    `tasks.runner.process_pool_max_workers` setting still rules where it is set."""

    def __init__(self, max_workers: int | None = None, **kwargs):
        setting = get_current_settings().tasks.runner.process_pool_max_workers
        super().__init__(max_workers=max_workers or setting or usable_cores(), **kwargs)

    def __enter__(self):
        super().__enter__()
        spawning = self._executor  # created with no worker yet: workers start on the first task
        prefects_setup = spawning._initializer  # forwards a worker's logs and events, then runs ours
        queue, ours, our_args = spawning._initargs
        self._executor = concurrent.futures.ProcessPoolExecutor(
            self._max_workers, mp_context=stages.worker_context("flows.generation"), initializer=prefects_setup,
            initargs=(queue, stages.started_like_parent, stages.parent_state(ours, *our_args)))
        spawning.shutdown(wait=False)
        return self


# The default runner: one process per core this process may use, no extra services. Workers end with the flow.
LOCAL_RUNNER = WarmProcessPoolTaskRunner()


@flow(name=FLOW_NAME, task_runner=LOCAL_RUNNER, log_prints=True, persist_result=True)
def zero_generation(
    params_file: str = "params.yaml",
    overrides: list[str] | None = None,
    generation: int | None = None,
    workdir: str | None = None,
) -> dict:
    """Produce one best-player generation: self-play, train, gate and promote.

    Args:
        params_file: the params YAML, relative to the workspace (default params.yaml).
        overrides: `section.key=value` settings applied on top of the file.
        generation: the generation to run; by default the unfinished last one, else the next.
        workdir: the workspace (a DVC repo with dvc.yaml); by default the current directory.
    """
    req = GenerationRequest(params_file=params_file, overrides=overrides or [], generation=generation, workdir=workdir)
    params = req.load()  # stops here, naming the field, on a bad params file
    with liveness.recorded(str(get_run_context().flow_run.id)):  # so a run whose process is gone can be told
        try:
            return run_generation(req.root(), params, req.generation)
        except LineBusy:  # another run holds the line: Cancelled, naming it, since this one did nothing
            return req.refused(params)


def run_generation(root: Path, params, generation: int | None = None) -> dict:
    """The steps of one generation, in order, under the line's lock; then the optional ladder."""
    from flows import tracking
    from zero.inference import arithmetic

    log = get_run_logger()
    run = get_run_context().flow_run  # timed from the run's start, its set-up counted; a retried run from now
    timeline = Timeline(run.start_time.timestamp() if run.start_time and run.run_count <= 1 else None)
    ws = Workspace(root)
    if not (root / "dvc.yaml").is_file():
        raise LineError(f"{root} has no dvc.yaml: run the flow from the repository root or pass workdir")
    tag = params.game.tag
    g = generation or ws.next_generation(tag)
    flow_run_id = str(get_run_context().flow_run.id)
    with ws.lock(tag, g, owner=flow_run_id):
        g = generation or ws.next_generation(tag)  # settled under the lock
        gen = ws.generation(tag, g)
        if gen.finished():  # a finished generation is never redone (it could move the alias back)
            record = read_json(gen.record_file)
            if record.get("remote", {}).get("pushed") is False:
                log.info("zero-generation: %s generation %d has finished; pushing its outputs", tag, g)
                return publish(gen, record)
            log.info("zero-generation: %s generation %d has finished already; nothing to do", tag, g)
            return record
        params, recipe = stages.generation_params(gen, params)  # visits schedule, calibrated resignation
        log.info("zero-generation: %s generation %d in %s (params hash %s; self-play %d visits, resign below %.2f)",
                 tag, g, root, params.digest()[:12], recipe["selfplay_visits"], recipe["resign_threshold"])
        started, flow_cpu = time.time(), cpu_seconds()
        lineage.ensure_dvc(root)
        ws.start(gen, params)
        facts = tracking.GenerationFacts.of(g, params, flow_run_id)  # seeds and code state, once
        tracker = tracking.Tracker(root, tag)
        timeline.lap("start")

        champ = resolve_champion(tracker, gen, params, facts)
        timeline.lap("champion")
        selfplay, actors = run_selfplay(gen, params, champ["sha256"])
        timeline.lap("selfplay")
        window, recorded = record_dataset(gen)
        timeline.lap("dataset")
        run_id, trained, data, pushed = run_train(tracker, gen, params, facts, champ, selfplay, window, recorded)
        timeline.lap("train")
        gate = run_gate(tracker, gen, params, champ, run_id, trained["sha256"])
        timeline.lap("gate")
        promoted = promote(tracker, gen, facts, run_id, trained["sha256"], gate, data)
        timeline.lap("promote")

        record = tracking.generation_record(facts, tag, champ, selfplay, trained, gate, data, run_id, **promoted,
                                            seconds=time.time() - started)
        made = standalone.made_here(gen)  # made by flows.standalone elsewhere: its compute, not this run's
        record["compute"] = made["compute"] if made else generation_compute(
            record["seconds"], params, cpu_seconds() - flow_cpu, selfplay, trained, gate)
        if made:
            record["standalone"] = {k: made[k] for k in ("host", "finished_at")}
        # the CPU and the number formats the stages computed in: what dvc repro must match to give the same bytes
        record["arithmetic"] = made.get("arithmetic") if made else arithmetic(params)
        record["recipe"] = recipe
        try:
            earlier = records(gen.dir.parent, "flow")
        except LineError as e:  # a torn record of another generation: this one's pace goes unjudged, not its run
            log.warning("zero-generation: %s g%04d: self-play pace not judged: %s", tag, g, e)
            earlier = {}
        paced = pace({**record, "timeline": timeline.steps}, earlier)
        if paced is not None:
            record["pace"] = paced
            if paced.get("slow"):
                log.warning("zero-generation: %s g%04d ran slow: %s", tag, g, pace_text(paced))
        if actors:
            record["selfplay"]["actors"] = actors
        tracker.log_metrics(run_id, {k: v for k, v in recipe.items() if isinstance(v, (int, float))})
        tracker.log_metrics(run_id, {f"seconds_{k}": v for k, v in timeline.steps.items()})
        tracker.log_metrics(run_id, evaluation_metrics(record["selfplay"]["nn_evals"], timeline.total()))
        if paced is not None:  # beside the generations before it in the MLflow UI: a slow one stands out
            tracker.log_metrics(run_id, {"selfplay_evals_per_s": paced["evals_per_s"],
                                         **({"selfplay_pace": paced["ratio"]} if "ratio" in paced else {})})
        timeline.lap("record")
        record = publish(gen, record, timeline, pushed)
        log.info("zero-generation: %s g%04d done in %.0fs: gate %s (%s%s); champion is version %s", tag, g,
                 record["seconds"], tracking.gate_text(gate), "PASSED" if gate["passed"] else "failed",
                 f"; refused: {gate['refused']}" if gate.get("refused") else "", promoted["champion_after"]["version"])
    if params.ladder.enabled:
        if g % params.ladder.every == 0:
            record = _ladder_step(root, params, gen)
        else:
            log.info("ladder: not after generation %d (ladder.every %d)", g, params.ladder.every)
    return record


def evaluation_metrics(nn_evals: int, seconds: float) -> dict:
    """The network's evaluations in this run's self-play, and their rate over the generation's wall time."""
    return {"selfplay_nn_evals": nn_evals, "evals_per_s": nn_evals / seconds if seconds > 0 else 0.0}


def generation_compute(seconds: float, params, flow_cpu_s: float, selfplay: list[dict], trained: dict,
                       gate: dict) -> dict:
    """The compute record of a generation made by this flow: wall time x cores, and the CPU time of the work
    done in this run, stage by stage (each stage measures its own process; the flow's process counts its own
    and its finished children's, DVC's hashing among them).

    A run that resumes the generation reuses the shards, training or gate parts an earlier attempt finished;
    their CPU time, kept in the generation's spent/ files, is added as `earlier_attempts` (to the CPU time
    and to the core-hours). Work an attempt left unfinished is not counted anywhere."""
    by_stage = {"selfplay": fresh_cpu_seconds(selfplay), "train": fresh_cpu_seconds([trained]),
                "gate": gate.get("cpu_s", 0.0), "flow": flow_cpu_s}
    earlier = earlier_cpu_seconds(selfplay) + earlier_cpu_seconds([trained]) + gate.get("earlier_cpu_s", 0.0)
    record = machine_compute(seconds, params, sum(by_stage.values()) + earlier)
    record["cpu_s_by_stage"] = {k: round(v, 1) for k, v in by_stage.items()}
    if earlier:
        record["cpu_s_by_stage"]["earlier_attempts"] = round(earlier, 1)
        record["core_hours"] = round((seconds * record["cores"] + earlier) / 3600, 4)
    return record


def _ladder_step(root: Path, params, gen: Generation) -> dict:
    """The optional last step: ladder the new champion; a ladder that cannot run never undoes the generation."""
    try:
        run_ladder(root, params, gen.g)
    except (LadderError, LineError) as e:
        get_run_logger().error("ladder after generation %d not run: %s", gen.g, e)
        record = read_json(gen.record_file)  # the outcome stays in the generation's record
        record["ladder"] = {"error": f"{type(e).__name__}: {e}"}
        write_json(gen.record_file, record)
    return read_json(gen.record_file)


def resolve_champion(tracker, gen: Generation, params, facts) -> dict:
    """The network generation g plays with: the registry's `champion`, made at generation 0 if there is none."""
    from flows.tracking import champion_record, champion_uri

    version = tracker.champion()
    if version is None:
        if gen.g != 1:
            raise LineError(
                f"the registry {tracker.uri} has no {champion_uri(gen.tag)}, but generation {gen.g} needs "
                f"the champion after generation {gen.g - 1}; use the MLflow database that made this workspace"
            )
        version = _generation_zero(tracker, gen.prev, params, facts)
    prev = gen.prev
    if not prev.champion.is_file():
        lineage.dvc(gen.root, "pull", prev.stage("champion"), check=False)
    if not prev.champion.is_file():
        raise LineError(f"{prev.champion} is missing: `dvc pull` or `dvc repro` generation {prev.g} first")
    champ = champion_record(tracker, gen, version)
    get_run_logger().info("champion: %s is version %s (generation %s, sha256 %s)", champion_uri(gen.tag),
                          champ["version"], champ["generation"], champ["sha256"][:12])
    return champ


def _generation_zero(tracker, gen0: Generation, params, facts):
    """Initialise generation 0, record it in DVC, register it as the first champion."""
    from flows.tracking import register_initial

    init = init_task(str(gen0.root), gen0.rel, params.digest())
    stage = gen0.stage("init")
    lineage.commit(gen0.root, [stage])
    push_once(gen0, [stage])
    version = register_initial(tracker, gen0, params, init, facts, lineage.lock_sha256(gen0.root))
    get_run_logger().info("generation 0: registered %s version %s as the first champion", tracker.model,
                          version.version)
    return tracker.champion()


def run_selfplay(gen: Generation, params, champion_sha: str) -> tuple[list[dict], list[dict]]:
    """pipeline.selfplay_shards parallel shards; a shard already on disk and verified is kept.

    On a Ray cluster with pipeline.selfplay_actors > 0, the shards' tasks play on that many
    actors (flows.actors), each loading the network once. Returns the shards' results and
    the actors' reports (pid, network loads by checkpoint sha256, shards played; none without actors).
    """
    root, digest, k = str(gen.root), params.digest(), params.pipeline.selfplay_shards
    n, reports = params.pipeline.selfplay_actors, []

    def ok(i, r):
        path = gen.shard(i)
        return path.is_file() and stages.file_sha256(path) == r["sha256"] and gen.shard_sgf_dir(i).is_dir()

    if n and _on_ray():
        from flows.actors import SelfPlayActors

        actors = SelfPlayActors(gen.tag, n, params.pipeline.num_gpus)
        with actors as names:
            results = _fan_out(selfplay_shard_task,
                               lambda i: (root, gen.rel, i, digest, champion_sha, names[i % n]), k,
                               params.pipeline.num_gpus, ok, delegated=True)
        get_run_logger().info("self-play actors: %s", "; ".join(
            f"{a['name']} played {len(a['shards'])} shards, loaded the network {sum(a['loads'].values())} times"
            + (" (restarted)" if a["restarted"] else "") for a in actors.reports))
        reports = actors.reports
    else:
        if n:
            get_run_logger().info("pipeline.selfplay_actors=%d applies on a Ray cluster; here each shard is a "
                                  "task of its own", n)
        results = _fan_out(selfplay_shard_task, lambda i: (root, gen.rel, i, digest, champion_sha), k,
                           params.pipeline.num_gpus, ok)
    stages.clean_tmp(gen.games_dir)
    get_run_logger().info(
        "self-play: %d shards, %d games, %d positions (%d shards played now, %d from earlier runs)",
        k, sum(r["games"] for r in results), sum(r["positions"] for r in results),
        sum(not r["reused"] for r in results), sum(r["reused"] for r in results),
    )
    return results, reports


def record_dataset(gen: Generation) -> tuple[dict, Callable[[], tuple[dict, list[str]]]]:
    """Write the window; then, in a thread of the flow's process while the candidate trains, record self-play
    and dataset in dvc.lock and push them. Returns the window's facts that need no DVC (window_sha256,
    window_positions, window_shards) and the call that waits for the recording and the push and returns the
    data's facts (lineage.window_facts) and the stages the push took to the remote."""
    window = stages.dataset(gen)
    summary = lineage.window_summary(gen, window)
    names = [gen.stage("selfplay"), gen.stage("dataset")]

    def commit_and_push() -> tuple[dict, list[str]]:
        lineage.commit(gen.root, names)
        data = lineage.window_facts(gen, window, summary)
        return data, names if push_once(gen, names) else []

    return summary, in_background(commit_and_push, "dvc-record")


def run_train(tracker, gen: Generation, params, facts, champ: dict, selfplay: list[dict], window: dict,
              recorded: Callable[[], tuple[dict, list[str]]]) -> tuple[str, dict, dict, list[str]]:
    """Open the generation's MLflow run and train the candidate in it; (run id, training summary, the data's
    facts, the stages already pushed). `recorded` waits for the data's recording in dvc.lock and its push,
    which run beside the training, before the candidate is recorded (one dvc at a time in the repo); the
    run's data tags follow them."""
    from flows.tracking import data_run_tags, log_candidate, open_generation_run

    run_id, resumed = open_generation_run(tracker, gen, params, facts, champ, window, selfplay)
    args = (str(gen.root), gen.rel, facts.params_hash, champ["sha256"], window["window_sha256"], run_id, tracker.uri)
    with _resources(params.pipeline.num_gpus):
        summary = _reused(train_task.submit(*args))
    if not gen.candidate.is_file() or stages.file_sha256(gen.candidate) != summary["sha256"]:
        with _resources(params.pipeline.num_gpus):
            summary = _reused(train_task.with_options(refresh_cache=True).submit(*args))
    data, pushed = recorded()
    tracker.set_tags(run_id, data_run_tags(data))
    lineage.commit(gen.root, [gen.stage("train")])
    log_candidate(tracker, run_id, gen, summary)
    get_run_logger().info("train: candidate %s (sha256 %s), MLflow run %s%s", gen.candidate.name,
                          summary["sha256"][:12], run_id, " (resumed)" if resumed else "")
    return run_id, summary, data, pushed


def run_gate(tracker, gen: Generation, params, champ: dict, run_id: str, candidate_sha: str) -> dict:
    """Candidate against champion over pipeline.gate_shards parallel parts; the sum, logged to the run."""
    from flows.tracking import gate_text, log_gate

    root, digest = str(gen.root), params.digest()

    def ok(j, r):
        part = {k: v for k, v in r.items() if k not in ("reused", "cpu_s", "earlier_cpu_s")}
        return gen.gate_part(j).is_file() and read_json(gen.gate_part(j)) == part

    parts = _fan_out(gate_part_task, lambda j: (root, gen.rel, j, digest, candidate_sha, champ["sha256"]),
             params.pipeline.gate_shards, params.pipeline.num_gpus, ok)
    stages.clean_tmp(gen.gate_dir)
    result = stages.gate_combine(gen)
    result["cpu_s"] = fresh_cpu_seconds(parts)
    result["earlier_cpu_s"] = earlier_cpu_seconds(parts)
    lineage.commit(gen.root, [gen.stage("gate")])
    log_gate(tracker, run_id, gen, result)
    get_run_logger().info("gate: candidate %s against version %s: %s", gate_text(result), champ["version"],
                          "passed" if result["passed"] else "not passed")
    return result


@task(name="promote", cache_policy=NO_CACHE, persist_result=False)
def promote(tracker, gen: Generation, facts, run_id: str, candidate_sha: str, gate: dict, data: dict) -> dict:
    """The gate's decision carried out, a task run of its own: the champion after g (the candidate if the gate
    promoted it, else the champion before) written and recorded in DVC, the candidate registered, and the
    `champion` alias moved to it only if promoted. Runs in the flow's process; each step is idempotent, so a
    retried run does it again rather than taking it from a cache."""
    from flows.tracking import gate_text, register_candidate

    stages.champion(gen)
    lineage.commit(gen.root, [gen.stage("champion")])
    lock_sha = lineage.lock_sha256(gen.root)
    version, champion = register_candidate(tracker, gen, run_id, facts, candidate_sha, lock_sha, gate, data)
    decision = ("promoted" if gate.get("promoted", gate["passed"]) else
                f"not promoted ({gate['refused']})" if gate.get("refused") else "not promoted")
    get_run_logger().info("promote: %s version %s (gate %s) %s; champion is version %s", tracker.model,
                          version.version, gate_text(gate), decision, champion.version)
    return {
        "version": str(version.version),
        "champion_after": {"version": str(champion.version), "sha256": stages.file_sha256(gen.champion)},
        "lock_sha": lock_sha,
    }


def push_once(gen: Generation, names: list[str]) -> bool:
    """Push stages' outputs as soon as they are recorded, once; whether they reached the remote. A refusal is
    logged, and the generation's last push (publish), which is retried, takes them too."""
    try:
        push_task.with_options(retries=0)(str(gen.root), names)
        return True
    except lineage.PushError as e:
        get_run_logger().warning("%s; pushed again at the end of generation %d", e, gen.g)
        return False


def in_background(fn: Callable[[], object], name: str) -> Callable[[], object]:
    """fn in a thread of the flow's process while the generation goes on (on a Ray cluster too: the
    workspace is this machine's), in the flow run's context as Prefect's own thread runner submits a task
    run; the call it returns waits for fn and returns its result (or raises its error)."""
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
    future = pool.submit(contextvars.copy_context().run, fn)
    pool.shutdown(wait=False)
    return future.result


def publish(gen: Generation, record: dict, timeline: Timeline | None = None, pushed: list[str] = ()) -> dict:
    """Write the finished generation's record, then push its outputs (generation 1 also generation 0's) to the
    default remote, retried, but for the stages `pushed` already took there; the record's `remote` says where
    and whether they all reached it, and its `timeline` (where the run that made it has one) each step's wall
    seconds, the push last.

    A remote still refusing after the retries fails the run with lineage.PushError and leaves `pushed: false`
    and the error in the record: the generation stays registered and on disk, and the next run of it (a retry
    of the flow run, or the generation run again) pushes its outputs and nothing else.
    """
    names = ([gen.prev.stage("init")] if gen.g == 1 else []) + [
        gen.stage(s) for s in ("selfplay", "dataset", "train", "gate", "champion")]
    record["remote"] = {**lineage.remote(gen.root), "stages": names, "pushed": False}
    if timeline:
        record["timeline"] = timeline.steps
    write_json(gen.record_file, record)  # the generation has finished; what remains is its push
    try:
        record["remote"].update(push_task(str(gen.root), [n for n in names if n not in pushed]))
    except lineage.PushError as e:
        record["remote"]["error"] = str(e)
        write_json(gen.record_file, record)
        raise
    if timeline:
        timeline.lap("publish")
    record["remote"]["pushed"] = True
    write_json(gen.record_file, record)
    return record


@flow(name="zero-loop", log_prints=True)
def zero_loop(
    params_file: str = "params.yaml",
    overrides: list[str] | None = None,
    generations: int | None = None,
    workdir: str | None = None,
    ship: bool = False,
) -> list[dict]:
    """Run zero-generation back to back, `generations` times or until the run is cancelled.

    With `ship`, each champion that passes its gate is written to models/<tag>.pt with its
    lineage models/<tag>.json (flows.ship), ready to commit.
    """
    if ship:
        lineage.require_committed()  # a shipped champion names the commit that made it
    done = []
    with liveness.recorded(str(get_run_context().flow_run.id)):
        while generations is None or len(done) < generations:
            record = zero_generation(params_file=params_file, overrides=overrides, workdir=workdir)
            done.append(record)
            if ship and record.get("gate", {}).get("promoted", record.get("gate", {}).get("passed")):
                req = GenerationRequest(params_file=params_file, overrides=overrides or [], workdir=workdir)
                lineage_ = ship_line(req.root(), req.load(), params_file)
                get_run_logger().info("shipped %s (sha256 %s) to models/", lineage_["file"],
                                      lineage_["sha256"][:12])
    return done
