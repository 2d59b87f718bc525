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

import contextlib
import json
import os
import time
from pathlib import Path

from prefect import flow, get_run_logger, task
from prefect.cache_policies import INPUTS, TASK_SOURCE
from prefect.context import get_run_context
from prefect.task_runners import ProcessPoolTaskRunner
from pydantic import BaseModel, ConfigDict, Field

from flows import lineage, stages
from flows.layout import Generation, LineError, Workspace, derive_seed, write_json

FLOW_NAME = "zero-generation"
CACHED = (INPUTS - "run_id") + TASK_SOURCE


class GenerationRequest(BaseModel):
    """The flow's parameters: which params file (plus overrides), which generation, which workspace."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    params_file: str = "params.yaml"
    overrides: list[str] = Field(default_factory=list)
    generation: int | None = Field(None, ge=1)
    workdir: str | None = None

    def root(self) -> Path:
        return Path(self.workdir or os.getcwd()).resolve()

    def load(self):
        """The validated Params (ConfigError naming the field on unknown keys or bad values)."""
        from zero.config import load_params

        path = Path(self.params_file)
        return load_params(path if path.is_absolute() else self.root() / path, list(self.overrides))


def _resources(num_gpus: float):
    """Ray resources for a task when the flow runs on a RayTaskRunner; nothing otherwise."""
    try:
        from prefect_ray.context import remote_options
    except ImportError:
        return contextlib.nullcontext()
    return remote_options(num_gpus=num_gpus)


# --- tasks ---------------------------------------------------------------------------------------
# Arguments are plain strings and numbers: the cache key is their hash plus the task's source.
# params_hash and champion_sha are there for the key: a change of params or network is a new task.


@task(name="selfplay-shard", persist_result=True, cache_policy=CACHED, retries=1)
def selfplay_shard_task(root: str, gen_rel: str, shard: int, params_hash: str, champion_sha: str) -> dict:
    return stages.selfplay_shard(stages.parse_gen_dir(gen_rel, root), shard)


@task(name="gate-part", persist_result=True, cache_policy=CACHED, retries=1)
def gate_part_task(root: str, gen_rel: str, part: int, params_hash: str, candidate_sha: str, champion_sha: str) -> dict:
    return stages.gate_part(stages.parse_gen_dir(gen_rel, root), part)


@task(name="train", persist_result=True, cache_policy=CACHED)
def train_task(root: str, gen_rel: str, params_hash: str, champion_sha: str, window_sha: str, run_id: str) -> dict:
    """Train the candidate, streaming per-step metrics to the generation's MLflow run."""
    from flows.tracking import Tracker

    gen = stages.parse_gen_dir(gen_rel, root)
    tracker = Tracker(root, gen.tag)
    log_step = tracker.step_logger(run_id)
    summary = stages.train(gen, on_step=log_step)
    log_step.flush()
    return summary


@task(name="init-network", persist_result=True, cache_policy=CACHED)
def init_task(root: str, gen_rel: str, params_hash: str) -> dict:
    return stages.init(stages.parse_gen_dir(gen_rel, root))


def _fan_out(task_fn, args_of, n: int, num_gpus: float, check) -> list[dict]:
    """Submit n tasks, wait, and re-run (cache refreshed) any whose output no longer checks."""
    with _resources(num_gpus):
        futures = [task_fn.submit(*args_of(i)) for i in range(n)]
    results = [_reused(f) for f in futures]
    stale = [i for i, r in enumerate(results) if not check(i, r)]
    if stale:
        with _resources(num_gpus):
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


# The default runner: one process per core on this machine, no extra services. Workers end with the flow.
LOCAL_RUNNER = ProcessPoolTaskRunner(initializer=stages.exit_with_parent)


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
    return run_generation(req.root(), params, req.generation)


def run_generation(root: Path, params, generation: int | None = None) -> dict:
    log = get_run_logger()
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
            log.info("zero-generation: %s generation %d has finished already; nothing to do", tag, g)
            return json.loads(gen.record_file.read_text())
        log.info("zero-generation: %s generation %d in %s (params hash %s)", tag, g, root, params.digest()[:12])
        started = time.time()
        lineage.ensure_dvc(root)
        _start_generation(ws, gen, params)

        from flows.tracking import Tracker

        tracker = Tracker(root, tag)
        champ = resolve_champion(ws, tracker, gen, params)
        record = {"generation": g, "game": tag, "params_hash": params.digest(), "flow_run_id": flow_run_id,
                  "champion_before": champ}

        selfplay = run_selfplay(gen, params, champ["sha256"])
        data = record_dataset(gen)
        run_id, train_summary = run_train(tracker, gen, params, champ, selfplay, data)
        gate = run_gate(tracker, gen, params, champ, run_id)
        promoted = promote(tracker, gen, params, run_id, gate, data)

        record.update(
            seeds=_seeds(gen, params),
            selfplay={**{k: sum(s[k] for s in selfplay) for k in ("games", "positions", "resigned")},
                      "shards_reused": sum(s["reused"] for s in selfplay)},
            train={k: train_summary.get(k) for k in ("steps", "positions", "seed", "sha256", "final")},
            gate=gate,
            data=data["hashes"],
            mlflow_run_id=run_id,
            model_version=promoted["version"],
            champion_after=promoted["champion"],
            dvc_lock_sha256=promoted["dvc_lock_sha256"],
            **lineage.code_state(),
            seconds=round(time.time() - started, 1),
        )
        from flows.ladder import machine_compute

        record["compute"] = machine_compute(record["seconds"], params.pipeline.num_gpus)
        write_json(gen.record_file, record)
        log.info(
            "zero-generation: %s g%04d done in %.0fs: gate %d-%d-%d (win rate %.3f) %s; champion is version %s",
            tag, g, record["seconds"], gate["wins"], gate["losses"], gate["draws"], gate["win_rate"],
            "PASSED" if gate["passed"] else "failed", promoted["champion"]["version"],
        )
    if params.ladder.enabled:
        record = _ladder_step(root, params, gen)
    return record


def _ladder_step(root: Path, params, gen: Generation) -> dict:
    """The optional last step: ladder the new champion; a ladder that cannot run never undoes the generation."""
    from flows.ladder import run_ladder
    from zero.ladder import LadderError

    try:
        run_ladder(root, params, gen.g)
    except (LadderError, LineError) as e:
        get_run_logger().error("ladder after generation %d not run: %s", gen.g, e)
    return json.loads(gen.record_file.read_text())


def _start_generation(ws: Workspace, gen: Generation, params) -> None:
    """Check the generation may start, write its params snapshot and list it for dvc.yaml."""
    import yaml

    listed = ws.generations(gen.tag)
    last = max(listed) if listed else 0
    if gen.g > last + 1 or (gen.g > 1 and not gen.prev.finished()):
        raise LineError(
            f"generation {gen.g} of {gen.tag} cannot start: generation {gen.g - 1} has not finished "
            f"(listed: {listed or 'none'})"
        )
    snapshot = yaml.safe_dump(params.model_dump(mode="json"), sort_keys=True)
    for target in ([ws.generation(gen.tag, 0)] if gen.g == 1 else []) + [gen]:
        path = target.params_file
        if path.is_file():
            from zero.config import load_params

            before = load_params(path)
            if target.g > 0 and before.digest() != params.digest():
                raise LineError(
                    f"generation {target.g} of {gen.tag} was started with other params (hash "
                    f"{before.digest()[:12]}, see {path}); resume it with the same params, or delete "
                    f"{target.rel} to start it over"
                )
            continue
        header = f"# Effective params of {target.key} (params file + overrides), written by zero-generation.\n"
        from flows.layout import atomic_write_text

        atomic_write_text(path, header + snapshot)
    if gen.g == 1:
        ws.register(ws.generation(gen.tag, 0))
    ws.register(gen)


def resolve_champion(ws: Workspace, tracker, gen: Generation, params) -> dict:
    """The network generation g plays with: the registry's `champion`, made at generation 0 if there is none.

    The registry's champion must be the very file the workspace's lineage
    says (the champion after g-1), or, for a resumed generation, this
    generation's own candidate already promoted by the interrupted run.
    """
    from flows.tracking import champion_uri

    log = get_run_logger()
    prev = gen.prev
    version = tracker.champion()
    if version is None:
        if gen.g != 1:
            raise LineError(
                f"the registry {tracker.uri} has no {champion_uri(gen.tag)}, but generation {gen.g} needs "
                f"the champion after generation {gen.g - 1}; use the MLflow database that made this workspace"
            )
        version = _generation_zero(tracker, prev, params)
    if not prev.champion.is_file():
        lineage.dvc(ws.root, "pull", prev.stage("champion"), check=False)
    if not prev.champion.is_file():
        raise LineError(f"{prev.champion} is missing: `dvc pull` or `dvc repro` generation {prev.g} first")
    local_sha = stages.file_sha256(prev.champion)
    fetched = prev.dir / ".registry-champion.pt.tmp"
    tracker.fetch_network(champion_uri(gen.tag), fetched)
    reg_sha = stages.file_sha256(fetched)
    fetched.unlink()
    own = version.tags.get("zero.generation") == str(gen.g)
    if reg_sha != local_sha and not own:
        raise LineError(
            f"the registry's champion ({champion_uri(gen.tag)}: version {version.version}, sha256 {reg_sha[:12]}) "
            f"is not {prev.champion} (sha256 {local_sha[:12]}): this workspace and {tracker.uri} disagree"
        )
    log.info("champion: %s is version %s (generation %s, sha256 %s)", champion_uri(gen.tag), version.version,
             version.tags.get("zero.generation"), local_sha[:12])
    return {"version": str(version.version), "generation": version.tags.get("zero.generation"), "sha256": local_sha}


def _generation_zero(tracker, gen0: Generation, params):
    """Initialise generation 0, log it, register it and make it the first champion."""
    log = get_run_logger()
    init = init_task(str(gen0.root), gen0.rel, params.digest())
    stage = gen0.stage("init")
    lineage.commit(gen0.root, [stage])
    lineage.push(gen0.root, [stage])
    code = lineage.code_state()
    tags = {
        "zero.seed.init": init["seed"],
        "zero.checkpoint_sha256": init["sha256"],
        "zero.dvc_lock_sha256": lineage.lock_sha256(gen0.root),
        **{f"zero.{k}": v for k, v in code.items()},
    }
    run_id, _ = tracker.generation_run(0, params.digest(), tags)
    tracker.log_params(run_id, params.model_dump(mode="json"))
    tracker.log_network(run_id, gen0.champion)
    tracker.log_artifacts(run_id, gen0.params_file, "config")
    tracker.finish(run_id)
    version = tracker.register(run_id, {"zero.generation": 0, "zero.run_id": run_id, "zero.gate": "none (initial network)",
                                        **tags}, description=f"{gen0.key}: " + (
        f"started from {params.pipeline.init_from}" if params.pipeline.init_from else "freshly initialised network"))
    tracker.promote(version.version, "generation 0: the first champion")
    log.info("generation 0: registered %s version %s as the first champion", tracker.model, version.version)
    return tracker.champion()


def run_selfplay(gen: Generation, params, champion_sha: str) -> list[dict]:
    root, digest, k = str(gen.root), params.digest(), params.pipeline.selfplay_shards

    def ok(i, r):
        path = gen.shard(i)
        return path.is_file() and stages.file_sha256(path) == r["sha256"] and gen.shard_sgf_dir(i).is_dir()

    results = _fan_out(selfplay_shard_task, lambda i: (root, gen.rel, i, digest, champion_sha), k,
                       params.pipeline.num_gpus, ok)
    stages.clean_tmp(gen.games_dir)
    get_run_logger().info(
        "self-play: %d shards, %d games, %d positions (%d shards played now, %d from earlier runs)",
        k, sum(r["games"] for r in results), sum(r["positions"] for r in results),
        sum(not r["reused"] for r in results), sum(r["reused"] for r in results),
    )
    return results


def record_dataset(gen: Generation) -> dict:
    """Write the window, record self-play and dataset in dvc.lock, push them; the data hashes."""
    window = stages.dataset(gen)
    names = [gen.stage("selfplay"), gen.stage("dataset")]
    lineage.commit(gen.root, names)
    lineage.push(gen.root, names)
    window_gens = sorted({s["generation"] for s in window["shards"]})
    ws = Workspace(gen.root)
    hashes = {}
    for g in window_gens:
        other = ws.generation(gen.tag, g)
        hashes[other.name] = lineage.out_hashes(gen.root, other.stage("selfplay")).get(f"{other.rel}/games", "")
    return {
        "hashes": hashes,
        "window_sha256": stages.file_sha256(gen.window_file),
        "window_positions": sum(s["positions"] for s in window["shards"]),
        "window_shards": len(window["shards"]),
        "dvc_lock_sha256": lineage.lock_sha256(gen.root),
    }


def _seeds(gen: Generation, params) -> dict:
    s, p = params.pipeline.seed, params.pipeline
    return {
        "run_seed": s,
        "selfplay": [derive_seed(s, gen.g, "selfplay", k) for k in range(p.selfplay_shards)],
        "train": derive_seed(s, gen.g, "train"),
        "gate": [derive_seed(s, gen.g, "gate", j) for j in range(p.gate_shards)],
    }


def run_train(tracker, gen: Generation, params, champ: dict, selfplay: list[dict], data: dict) -> tuple[str, dict]:
    """Open the generation's MLflow run (params, tags, self-play stats) and train the candidate in it."""
    seeds = _seeds(gen, params)
    tags = {
        "zero.champion_version": champ["version"],
        "zero.champion_sha256": champ["sha256"],
        "zero.dvc_lock_sha256": data["dvc_lock_sha256"],
        "zero.window_sha256": data["window_sha256"],
        "zero.seed.run": seeds["run_seed"],
        "zero.seed.selfplay": json.dumps(seeds["selfplay"]),
        "zero.seed.train": seeds["train"],
        "zero.seed.gate": json.dumps(seeds["gate"]),
        "zero.flow_run_id": str(get_run_context().flow_run.id),
        **{f"zero.data.{name}": md5 for name, md5 in data["hashes"].items()},
        **{f"zero.{k}": v for k, v in lineage.code_state().items()},
    }
    run_id, resumed = tracker.generation_run(gen.g, params.digest(), {})
    tracker.set_tags(run_id, tags)
    tracker.log_params(run_id, params.model_dump(mode="json"))
    games = sum(s["games"] for s in selfplay)
    timed = [s for s in selfplay if s.get("seconds")]
    tracker.log_metrics(run_id, {
        "selfplay_games": games,
        "selfplay_positions": sum(s["positions"] for s in selfplay),
        "selfplay_mean_moves": sum(s["moves"] for s in selfplay) / max(games, 1),
        "selfplay_resigned": sum(s["resigned"] for s in selfplay) / max(games, 1),
        "selfplay_black_win_rate": sum(s["black_wins"] for s in selfplay) / max(games, 1),
        "selfplay_games_per_s": (sum(s["games"] for s in timed) / sum(s["seconds"] for s in timed)) if timed else None,
        "window_positions": data["window_positions"],
        "window_shards": data["window_shards"],
    })
    args = (str(gen.root), gen.rel, params.digest(), champ["sha256"], data["window_sha256"], run_id)
    with _resources(params.pipeline.num_gpus):
        summary = train_task.submit(*args).result()
    if not gen.candidate.is_file() or stages.file_sha256(gen.candidate) != summary["sha256"]:
        with _resources(params.pipeline.num_gpus):
            summary = train_task.with_options(refresh_cache=True).submit(*args).result()
    lineage.commit(gen.root, [gen.stage("train")])
    tracker.log_network(run_id, gen.candidate)
    tracker.log_artifacts(run_id, gen.params_file, "config")
    tracker.log_artifacts(run_id, gen.window_file, "config")
    final = summary.get("final") or {}
    tracker.log_metrics(run_id, {f"final_{k}": v for k, v in final.items()})
    if summary.get("seconds"):
        tracker.log_metrics(run_id, {"train_seconds": summary["seconds"]})
    tracker.set_tags(run_id, {"zero.candidate_sha256": summary["sha256"]})
    get_run_logger().info("train: candidate %s (sha256 %s), MLflow run %s%s", gen.candidate.name,
                          summary["sha256"][:12], run_id, " (resumed)" if resumed else "")
    return run_id, summary


def run_gate(tracker, gen: Generation, params, champ: dict, run_id: str) -> dict:
    """Candidate against champion over J parallel parts; the sum, logged to the generation's run."""
    root, digest = str(gen.root), params.digest()
    cand_sha = stages.file_sha256(gen.candidate)

    def ok(j, r):
        part = {k: v for k, v in r.items() if k != "reused"}
        return gen.gate_part(j).is_file() and json.loads(gen.gate_part(j).read_text()) == part

    _fan_out(gate_part_task, lambda j: (root, gen.rel, j, digest, cand_sha, champ["sha256"]),
             params.pipeline.gate_shards, params.pipeline.num_gpus, ok)
    stages.clean_tmp(gen.gate_dir)
    result = stages.gate_combine(gen)
    lineage.commit(gen.root, [gen.stage("gate")])
    tracker.log_metrics(run_id, {f"gate_{k}": result[k] for k in
                                 ("wins", "losses", "draws", "games", "win_rate", "elo", "elo_low", "elo_high")})
    tracker.set_tags(run_id, {"zero.gate_passed": str(result["passed"]).lower()})
    tracker.log_artifacts(run_id, gen.gate_dir, "gate")
    get_run_logger().info(
        "gate: candidate %d-%d-%d against version %s, win rate %.3f, Elo %s [%s, %s]: %s",
        result["wins"], result["losses"], result["draws"], champ["version"], result["win_rate"],
        _num(result["elo"]), _num(result["elo_low"]), _num(result["elo_high"]),
        "passed" if result["passed"] else "not passed",
    )
    return result


def _num(x) -> str:
    return "inf" if x is None else f"{x:+.0f}"


def promote(tracker, gen: Generation, params, run_id: str, gate: dict, data: dict) -> dict:
    """Register the candidate; move `champion` to it only if it passed; record the champion after g."""
    stages.champion(gen)
    names = [gen.stage(s) for s in ("selfplay", "dataset", "train", "gate", "champion")]
    lineage.commit(gen.root, [gen.stage("champion")])
    lineage.push(gen.root, names)
    lock_sha = lineage.lock_sha256(gen.root)
    tags = {
        "zero.generation": gen.g,
        "zero.run_id": run_id,
        "zero.params_hash": params.digest(),
        "zero.checkpoint_sha256": stages.file_sha256(gen.candidate),
        "zero.dvc_lock_sha256": lock_sha,
        "zero.gate_passed": str(gate["passed"]).lower(),
        "zero.gate": f"{gate['wins']}-{gate['losses']}-{gate['draws']} win rate {gate['win_rate']:.3f} "
                     f"Elo {_num(gate['elo'])} [{_num(gate['elo_low'])}, {_num(gate['elo_high'])}]",
        **{f"zero.gate_{k}": gate[k] for k in ("wins", "losses", "draws", "win_rate", "threshold")},
        **{f"zero.data.{name}": md5 for name, md5 in data["hashes"].items()},
        **{f"zero.{k}": v for k, v in lineage.code_state().items()},
    }
    version = tracker.register(run_id, tags, description=f"{gen.key}: candidate trained on {len(data['hashes'])} generation(s)")
    if gate["passed"]:
        tracker.promote(version.version, f"generation {gen.g}: passed the gate ({tags['zero.gate']})")
    tracker.set_tags(run_id, {"zero.model_version": version.version, "zero.dvc_lock_sha256": lock_sha})
    tracker.finish(run_id)
    champion = tracker.champion()
    get_run_logger().info("promote: %s version %s registered; champion is version %s", tracker.model,
                          version.version, champion.version)
    return {
        "version": str(version.version),
        "champion": {"version": str(champion.version), "sha256": stages.file_sha256(gen.champion)},
        "dvc_lock_sha256": lock_sha,
    }


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
    done = []
    while generations is None or len(done) < generations:
        record = zero_generation(params_file=params_file, overrides=overrides, workdir=workdir)
        done.append(record)
        if ship and record.get("gate", {}).get("passed"):
            from flows.ship import ship as ship_line

            req = GenerationRequest(params_file=params_file, overrides=overrides or [], workdir=workdir)
            lineage_ = ship_line(req.root(), req.load(), params_file)
            get_run_logger().info("shipped %s (sha256 %s) to models/", lineage_["file"], lineage_["sha256"][:12])
    return done
