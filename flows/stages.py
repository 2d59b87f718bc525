"""The work of one generation as plain functions over files: what DVC runs and Prefect tasks call.

Each function reads the generation's params snapshot (`gens/<tag>/gNNNN/params.yaml`),
derives its seed from (pipeline.seed, generation, shard index) and calls the
`zero` library. The Prefect tasks in flows.generation call the per-shard
functions (`selfplay_shard`, `gate_part`) and the rest; `python -m flows.stages`
runs a whole stage the same way, so a flow's fan-out and `dvc repro` write the
same bytes. Every output is written to a temp name and renamed; a shard or
part that exists and verifies is not played again.

Usage (dvc.yaml's commands, run from the workspace root):
    python -m flows.stages init gens/go-9/g0000
    python -m flows.stages selfplay gens/go-9/g0003
    python -m flows.stages dataset gens/go-9/g0003
    python -m flows.stages train gens/go-9/g0003
    python -m flows.stages gate gens/go-9/g0003
    python -m flows.stages champion gens/go-9/g0003
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import traceback
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from flows.compute import stage_cpu_seconds
from flows.layout import Generation, derive_seed, read_json, split_counts, write_json
from flows.progress import StepProgress
from zero.config import usable_cores


def parse_gen_dir(gen_dir: str | Path, root: str | Path = ".") -> Generation:
    """`gens/go-9/g0003` -> Generation(root, "go-9", 3)."""
    parts = Path(gen_dir).parts
    if len(parts) < 3 or parts[-3] != "gens" or not parts[-1].startswith("g") or not parts[-1][1:].isdigit():
        raise ValueError(f"{gen_dir}: not a generation directory of the form gens/<tag>/gNNNN")
    return Generation(Path(root).resolve(), parts[-2], int(parts[-1][1:]))


def load_gen_params(gen: Generation):
    from zero.config import load_params

    return load_params(gen.params_file)


def share_cores(threads: int, tasks: int) -> None:
    """Torch threads for one of `tasks` parallel self-play or gate processes.

    `threads` > 0 (the params' own setting) is left to the library; 0 splits the
    cores this process may use (zero.config.usable_cores) between the processes that
    run at once, so they do not oversubscribe them. The flow's tasks and `dvc repro` run the same number of
    processes, so they use the same setting and write the same bytes.
    """
    if threads > 0:
        return
    import torch

    cores = usable_cores()
    torch.set_num_threads(max(1, cores // max(1, min(tasks, cores))))


def _fresh_dir(path: Path) -> Path:
    """An empty temp directory beside `path`, for files that appear under `path` only when complete."""
    tmp = path.with_name("." + path.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    return tmp


def _publish_dir(tmp: Path, path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    tmp.replace(path)


def clean_tmp(directory: Path) -> None:
    """Remove what interrupted writes left in an output directory (*.tmp files and dirs)."""
    for path in sorted(directory.rglob("*.tmp"), reverse=True):
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def file_sha256(path: str | Path) -> str:
    from zero.shards import file_sha256 as sha

    return sha(path)


# --- generation 0 -------------------------------------------------------------------------------


def init(gen: Generation) -> dict:
    """Generation 0: a freshly initialised champion (or pipeline.init_from's) and its training window:
    empty, or with pipeline.init_window the window that champion was trained on (flows.carry)."""
    from flows.carry import carry_window
    from zero.network import init_checkpoint

    if gen.g != 0:
        raise ValueError(f"init makes generation 0, not {gen.name}")
    params = load_gen_params(gen)
    p = params.pipeline
    seed = derive_seed(p.seed, 0, "init")
    if not _checkpoint_ok(gen.champion):
        if p.init_from:
            _start_from(params, gen.root / p.init_from, gen.champion)
        else:
            first = params.model_copy(update={"network": params.network.for_generation(0)})
            init_checkpoint(first, gen.champion, seed)
    champion_sha = file_sha256(gen.champion)
    start_sha = file_sha256(gen.root / p.init_from) if p.init_from else champion_sha
    carried = carry_window(gen, gen.root / p.init_window if p.init_window else None, start_sha)
    window = {"generation": 0, "window_generations": 0, "shards": carried}
    if carried:
        window["window_generations"] = params.train.window_generations
    write_json(gen.window_file, window)
    return {"seed": seed, "sha256": champion_sha, "carried_shards": len(carried),
            "carried_positions": sum(s["positions"] for s in carried)}


def _start_from(params, source: Path, out: Path) -> None:
    """Generation 0 as a copy of an existing checkpoint (a shipped champion), checked against the params."""
    from zero.games import go_kernels as K
    from zero.games import make_game
    from zero.network import CHECKSUM_KEY, load_checkpoint, save_checkpoint, widen_inputs

    net, meta = load_checkpoint(source)  # CheckpointError names the file
    game = make_game(params.game)
    tmp = out.with_name(out.name + ".tmp")
    if (net.config.num_actions == game.num_actions and params.game.liberty_planes
            and net.config.in_planes + K.LIBERTY_PLANES == game.num_planes):
        # a champion without the liberty planes, for a line with them: the same network on a wider input
        meta = {**meta, "widened_from": file_sha256(source), "liberty_planes": True}
        meta.pop(CHECKSUM_KEY, None)
        save_checkpoint(widen_inputs(net, game.num_planes), tmp, meta, checksum=True)
        tmp.replace(out)
        return
    if net.config.num_actions == game.num_actions and net.config.in_planes == game.num_planes + K.LIBERTY_PLANES:
        raise ValueError(f"pipeline.init_from: {source} was trained with the liberty planes ({net.config.in_planes} "
                         f"input planes) and the params' game has {game.num_planes}: set game.liberty_planes: true")
    if net.config.num_actions != game.num_actions or net.config.in_planes != game.num_planes:
        raise ValueError(f"pipeline.init_from: {source} is a network for another game or board than {params.game.tag}"
                         f" ({net.config.in_planes} input planes, the params' game has {game.num_planes})")
    shutil.copyfile(source, tmp)
    tmp.replace(out)


def _checkpoint_ok(path: Path) -> bool:
    from zero.network import CheckpointError, load_checkpoint

    if not path.is_file():
        return False
    try:
        load_checkpoint(path)
    except CheckpointError:
        return False
    return True


# --- self-play ----------------------------------------------------------------------------------


def shard_stats(path: Path) -> dict:
    """The deterministic summary of a shard, read back from the file itself."""
    from zero.shards import read_shard, shard_summary

    return {
        **shard_summary(read_shard(path)),
        "sha256": file_sha256(path),
    }


def generation_params(gen: Generation, params) -> tuple[object, dict]:
    """The params generation g runs with, as the recipe sets them, and what it set.

    Self-play visits follow `selfplay.visits_schedule`. With
    `selfplay.resign_calibration_rate` above 0, the resign threshold is the
    highest, at most `selfplay.resign_calibration_max`, whose false-positive
    rate on generation g-1's played-out games stays within that rate
    (zero.selfplay.calibrate_resign_threshold); the result goes into g's params
    snapshot, so `dvc repro` plays with it too.
    """
    from zero.selfplay import calibrate_resign_threshold, resign_false_positive_rate
    from zero.shards import read_shard

    sp = params.selfplay.for_generation(gen.g)
    facts: dict = {"selfplay_visits": sp.visits, "resign_threshold": sp.resign_threshold}
    rate = sp.resign_calibration_rate
    shards = sorted(gen.prev.games_dir.glob("shard-*.npz")) if rate > 0 and gen.g > 1 else []
    if shards:
        played = [read_shard(p) for p in shards]
        threshold = calibrate_resign_threshold(played, rate, sp.resign_calibration_max)
        fp_rate, games = resign_false_positive_rate(played, threshold)
        if games:
            sp = sp.model_copy(update={"resign_threshold": threshold})
            facts.update(resign_threshold=threshold, resign_false_positive_rate=round(fp_rate, 4),
                         resign_calibration_games=games, resign_calibrated_on=gen.prev.key)
    return params.model_copy(update={"selfplay": sp}), facts


def selfplay_shard(gen: Generation, k: int, load_network=None) -> dict:
    """Play shard k of generation g with the previous generation's champion (skipped if done).

    `load_network`: how a long-lived player (flows.actors) gets the network it holds; see play_shard.
    """
    from zero.selfplay import play_shard
    from zero.shards import verify_shard

    params = load_gen_params(gen)
    seed = derive_seed(params.pipeline.seed, gen.g, "selfplay", k)
    out, sgf = gen.shard(k), gen.shard_sgf_dir(k)
    played, cpu0 = None, stage_cpu_seconds()
    if not (verify_shard(out) and sgf.is_dir()):
        share_cores(params.selfplay.threads, params.pipeline.selfplay_shards)
        tmp_sgf = _fresh_dir(sgf)
        with StepProgress(f"{gen.key} self-play shard {k}", params.selfplay.games_per_shard,
                          key=f"{gen.key}-selfplay-{k}", at_once=params.selfplay.concurrent_games) as report:
            played = play_shard(params, gen.prev.champion, out, seed, sgf_dir=tmp_sgf, progress=report,
                                load_network=load_network)
        _publish_dir(tmp_sgf, sgf)
    stats = shard_stats(out)
    stats.update(shard=k, seed=seed, replayed=played is not None)
    if played is not None:
        stats["seconds"] = played["seconds"]
        stats["nn_evals"] = played["nn_evals"]
        stats["cpu_s"] = _spent(gen, f"selfplay-{k:03d}", cpu0)
    else:
        stats.update(_spent_before(gen, f"selfplay-{k:03d}"))
    return stats


def _spent(gen: Generation, step: str, cpu0: float) -> float:
    """The CPU time this process spent on `step` since `cpu0`, kept in the generation's spent/ file too."""
    cpu_s = round(stage_cpu_seconds() - cpu0, 2)
    write_json(gen.spent_file(step), {"cpu_s": cpu_s})
    return cpu_s


def _spent_before(gen: Generation, step: str) -> dict:
    """{"earlier_cpu_s": ...}: what the run that made `step`'s output spent on it, when it kept the figure."""
    try:
        return {"earlier_cpu_s": float(json.loads(gen.spent_file(step).read_text())["cpu_s"])}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def selfplay(gen: Generation, workers: int | None = None) -> list[dict]:
    """All self-play shards of a generation, in parallel processes (what `dvc repro` runs)."""
    params = load_gen_params(gen)
    results = _fan_out(selfplay_shard, gen, params.pipeline.selfplay_shards, workers)
    clean_tmp(gen.games_dir)
    return results


def _fan_out(fn, gen: Generation, n: int, workers: int | None) -> list[dict]:
    workers = max(1, min(n, workers or usable_cores()))  # a process pinned to one core plays its shards in turn
    if workers == 1:
        return [fn(gen, i) for i in range(n)]
    with ProcessPoolExecutor(workers, mp_context=worker_context(), initializer=started_like_parent,
                             initargs=parent_state(_log_to_stderr)) as pool:
        return list(pool.map(fn, [gen] * n, range(n)))


# What every worker of a stage imports: torch, the engine and the stages (several seconds a process).
WORKER_PRELOAD = ("torch", "zero.selfplay", "zero.train", "zero.match", "flows.stages")


def worker_context(*also: str):
    """The start method of the stages' worker processes: forked from a server that imported WORKER_PRELOAD
    (and `also`) once for this process, so that a worker starts in a fraction of a second and each pool of a
    generation (self-play, the gate, each generation of a loop) does not import them again. The server imports
    no CUDA and starts no thread a fork could copy. Its workers end with the process that made their pool
    (started_like_parent), and the server once they have."""
    import multiprocessing

    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([*WORKER_PRELOAD, *also])  # read when the server starts, the first pool's
    return ctx


def parent_state(then=None, *args) -> tuple:
    """The initargs of started_like_parent: this process, its directory and environment now, then `then(*args)`."""
    return os.getpid(), os.getcwd(), dict(os.environ), then, args


def started_like_parent(creator: int, cwd: str, environ: dict, then, args: tuple) -> None:
    """Pool initializer: a forked worker ends with the process that made its pool (a killed flow or `dvc
    repro` would otherwise leave it playing on, holding its output pipe open, so that Prefect never sees the run
    crash; whatever it was writing is a temp file never published), and takes that process's directory and
    environment (as a spawned one would; the fork server has those of the pool that started it); then `then`."""
    from flows.liveness import exit_with

    exit_with(creator)
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(environ)
    if then is not None:
        then(*args)


def _log_to_stderr() -> None:
    """Progress lines (flows.progress) on stderr, for `python -m flows.stages` under `dvc repro`."""
    import logging

    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")


# --- dataset ------------------------------------------------------------------------------------


def dataset(gen: Generation) -> dict:
    """The training window of generation g: its shards plus the previous window's last W-1 generations.

    Written as window.json listing each shard's path (relative to the workspace
    root), generation and sha256, so the train stage depends on exactly the data
    it reads.
    """
    params = load_gen_params(gen)
    w = params.train.window_generations
    prev = read_json(gen.prev.window_file)
    shards = [s for s in prev["shards"] if s["generation"] > gen.g - w]
    k_all = params.pipeline.selfplay_shards
    for k in range(k_all):
        path = gen.shard(k)
        st = shard_stats(path)
        shards.append(
            {
                "path": str(path.relative_to(gen.root)),
                "generation": gen.g,
                "sha256": st["sha256"],
                "games": st["games"],
                "positions": st["positions"],
            }
        )
    window = {"generation": gen.g, "window_generations": w, "shards": shards}
    write_json(gen.window_file, window)
    return window


def window_paths(gen: Generation) -> list[Path]:
    """The window's shard paths, oldest first, each checked against its recorded sha256."""
    window = read_json(gen.window_file)
    paths = []
    for s in window["shards"]:
        path = gen.root / s["path"]
        if not path.is_file() or file_sha256(path) != s["sha256"]:
            raise FileNotFoundError(
                f"{path}: shard of the training window is missing or changed (expected sha256 {s['sha256']}); "
                f"`dvc pull` or `dvc repro` the generation that made it"
            )
        paths.append(path)
    return paths


# --- training -----------------------------------------------------------------------------------


def train(gen: Generation, on_step=None, replay_kept: bool = False) -> dict:
    """Train the candidate from the previous champion on the window (skipped if done). A training stopped
    on the way goes on from its kept state; with `replay_kept` on_step gets the kept steps first."""
    from zero.train import train as train_net

    params = load_gen_params(gen)
    seed = derive_seed(params.pipeline.seed, gen.g, "train")
    if _checkpoint_ok(gen.candidate):
        sha = file_sha256(gen.candidate)
        kept = trained_elsewhere(gen)  # the summary flows.standalone kept of the training that made it
        if kept and kept["summary"].get("sha256") == sha:
            return {**kept["summary"], "trained": False}
        return {"seed": seed, "sha256": sha, "trained": False, **_spent_before(gen, "train")}
    share_cores(params.train.threads, 1)  # a reused worker process may have been set to fewer threads
    cpu0 = stage_cpu_seconds()
    batch = params.train.batch_size
    with StepProgress(f"{gen.key} train", params.train.steps, unit="steps", key=f"{gen.key}-train") as report:

        def step(i: int, metrics: dict) -> None:
            report(i + 1, positions=(i + 1) * batch)
            if on_step is not None:
                on_step(i, metrics)

        summary = train_net(
            params, gen.prev.champion, [str(p) for p in window_paths(gen)], gen.candidate, seed,
            on_step=step, meta={"generation": gen.g}, network=params.network.for_generation(gen.g),
            replay_kept=replay_kept,
        )
    summary.update(seed=seed, sha256=file_sha256(gen.candidate), trained=True, cpu_s=_spent(gen, "train", cpu0))
    return summary


TRAINED_FILE = "train.json"


def trained_elsewhere(gen: Generation) -> dict | None:
    """{"summary": ..., "steps": [[i, metrics], ...]} kept by flows.standalone beside a candidate it trained."""
    path = gen.dir / TRAINED_FILE
    return read_json(path) if path.is_file() else None


# --- gate ---------------------------------------------------------------------------------------


def gate_counts(params) -> list[int]:
    """Games of each gate part: whole colour-swapped pairs, spread over pipeline.gate_shards."""
    return split_counts(params.gate.games, params.pipeline.gate_shards, unit=2)


def gate_part(gen: Generation, j: int) -> dict:
    """Part j of the gate: candidate (a) against the previous champion (b) (skipped if done)."""
    from zero.match import play_match

    params = load_gen_params(gen)
    counts = gate_counts(params)
    seed = derive_seed(params.pipeline.seed, gen.g, "gate", j)
    out, sgf = gen.gate_part(j), gen.gate_sgf_dir(j)
    if out.is_file() and sgf.is_dir():
        try:
            return {**json.loads(out.read_text()), **_spent_before(gen, f"gate-{j:03d}")}
        except ValueError:
            pass
    share_cores(params.gate.threads, params.pipeline.gate_shards)
    cpu0 = stage_cpu_seconds()
    tmp_sgf = _fresh_dir(sgf)
    stop = (GateTallies(gen, j, len(counts), params.gate.games, params.gate.threshold)
            if params.gate.sequential else None)
    with StepProgress(f"{gen.key} gate part {j}", counts[j], key=f"{gen.key}-gate-{j}",
                      at_once=params.gate.concurrent_games) as report:
        result = play_match(
            params, str(gen.candidate), str(gen.prev.champion), counts[j], seed, sgf_dir=tmp_sgf,
            first_index=sum(counts[:j]), progress=report, stop=stop,
        )
    _publish_dir(tmp_sgf, sgf)
    part = {"part": j, "seed": seed, "first_index": sum(counts[:j]), "scheduled": counts[j], **result.to_dict()}
    write_json(out, part)
    return {**part, "cpu_s": _spent(gen, f"gate-{j:03d}", cpu0)}  # a part read back has the maker's earlier_cpu_s


class GateTallies:
    """A sequential gate over all its parts: each part's running score in gate/live/part-<j>.json.

    Called as stop(wins, losses, draws) by a part before each new game, it
    writes the part's own score and sums every part's (finished parts from
    their results); once the whole gate is decided (zero.stats.gate_status),
    the part starts no more games. Which games get played can depend on
    timing; the decision cannot.
    """

    def __init__(self, gen: Generation, part: int, parts: int, games: int, threshold: float):
        self.gen, self.part, self.parts, self.games, self.threshold = gen, part, parts, games, threshold
        self.dir = gen.gate_dir / "live"

    def _read(self, j: int) -> tuple[int, int, int]:
        for path in (self.gen.gate_part(j), self.dir / f"part-{j}.json"):
            try:
                d = json.loads(path.read_text())
                return int(d["wins"]), int(d["losses"]), int(d["draws"])
            except (OSError, ValueError, KeyError):
                continue
        return 0, 0, 0

    def __call__(self, wins: int, losses: int, draws: int) -> bool:
        from zero.match import gate_decided

        write_json(self.dir / f"part-{self.part}.json", {"wins": wins, "losses": losses, "draws": draws})
        total = [wins, losses, draws]
        for j in range(self.parts):
            if j != self.part:
                total = [t + x for t, x in zip(total, self._read(j))]
        return gate_decided(self.games, self.threshold, *total)


def gate_combine(gen: Generation) -> dict:
    """Sum the parts into gate/result.json with the Elo interval, the pass decision and the promotion."""
    from zero.stats import MatchResult, combine, gate_passed, gate_status

    params = load_gen_params(gen)
    parts = [read_json(gen.gate_part(j)) for j in range(params.pipeline.gate_shards)]
    total = combine(MatchResult.from_dict(p) for p in parts)
    g = params.gate
    played = total.wins + total.losses + total.draws
    if played < g.games:
        status = gate_status(total.wins, total.losses, total.draws, g.games, g.threshold)
        if status == "undecided":
            raise RuntimeError(f"{gen.gate_dir}: the gate stopped after {played} of {g.games} games undecided "
                               f"(a part stopped on a stale score); delete {gen.gate_dir} and run the gate again")
        passed = status == "pass"
    else:
        passed = gate_passed(total.wins, total.losses, total.draws, g.threshold)
    refused = refusal(g, total, gen.candidate)
    result = {
        "generation": gen.g,
        "candidate_sha256": file_sha256(gen.candidate),
        "champion_sha256": file_sha256(gen.prev.champion),
        "threshold": params.gate.threshold,
        "passed": passed,
        "promoted": (passed or g.promote == "always") and refused is None,
        "promote_rule": g.promote,
        **({"refused": refused} if refused else {}),
        "seeds": [p["seed"] for p in parts],
        **total.to_dict(),
    }
    write_json(gen.gate_result, result)
    shutil.rmtree(gen.gate_dir / "live", ignore_errors=True)  # running scores (GateTallies), timing-dependent
    return result


def refusal(g, total, candidate: Path) -> str | None:
    """Why the gate section `g`'s guards keep the candidate out whatever the promotion rule, or None.

    `min_value_std`: the spread of the value head's outputs its training measured at the end (the
    checkpoint's meta; a checkpoint without the figure is not judged on it). `min_score`: the share of
    the gate's points the candidate took, draws counting half."""
    from zero.network import load_checkpoint

    if g.min_value_std:
        spread = load_checkpoint(candidate)[1].get("final", {}).get("value_std")
        if spread is not None and spread < g.min_value_std:
            return (f"dead value head: its outputs spread {spread:.4f} at the end of training "
                    f"(gate.min_value_std {g.min_value_std})")
    if g.min_score and total.win_rate < g.min_score:
        return f"scored {total.win_rate:.3f} of the gate's points (gate.min_score {g.min_score})"
    return None


def gate(gen: Generation, workers: int | None = None) -> dict:
    params = load_gen_params(gen)
    _fan_out(gate_part, gen, params.pipeline.gate_shards, workers)
    clean_tmp(gen.gate_dir)
    return gate_combine(gen)


# --- champion -----------------------------------------------------------------------------------


def champion(gen: Generation) -> dict:
    """The champion after generation g: the candidate if it passed the gate, else the previous one."""
    result = read_json(gen.gate_result)
    promoted = result.get("promoted", result["passed"])
    winner = gen.candidate if promoted else gen.prev.champion
    if file_sha256(winner) != (result["candidate_sha256"] if promoted else result["champion_sha256"]):
        raise RuntimeError(f"{winner} is not the network the gate of {gen.name} played")
    tmp = gen.champion.with_name(gen.champion.name + ".tmp")
    shutil.copyfile(winner, tmp)
    tmp.replace(gen.champion)
    return {"passed": result["passed"], "promoted": promoted, "sha256": file_sha256(gen.champion)}


# --- command line -------------------------------------------------------------------------------

STAGES = {
    "init": lambda gen, args: init(gen),
    "selfplay": lambda gen, args: selfplay(gen, args.workers),
    "dataset": lambda gen, args: dataset(gen),
    "train": lambda gen, args: train(gen),
    "gate": lambda gen, args: gate(gen, args.workers),
    "champion": lambda gen, args: champion(gen),
}


def _named_error(e: Exception) -> bool:
    """Whether `e` names what was wrong with which input, so that one line says it all."""
    from flows.lineage import LineageError
    from flows.layout import LineError
    from zero.config import ConfigError
    from zero.network import CheckpointError
    from zero.shards import ShardError
    from zero.train import WindowError

    return isinstance(e, (ConfigError, CheckpointError, ShardError, WindowError, LineError, LineageError))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m flows.stages", description=__doc__.split("\n\n")[0])
    ap.add_argument("stage", choices=sorted(STAGES))
    ap.add_argument("gen_dir", help="the generation's directory, e.g. gens/go-9/g0003")
    ap.add_argument("--root", default=".", help="workspace root (default: the current directory)")
    ap.add_argument("--workers", type=int, default=None, help="processes for self-play and gate parts")
    args = ap.parse_args(argv)
    _log_to_stderr()
    try:
        gen = parse_gen_dir(args.gen_dir, args.root)
    except ValueError as e:
        print(f"flows.stages {args.stage} {args.gen_dir}: {e}", file=sys.stderr)
        return 1
    try:
        out = STAGES[args.stage](gen, args)
    except Exception as e:
        # A named input error (bad params, checkpoint, shard, window, line) is one line; anything else is a
        # defect and DVC shows its whole traceback above that line.
        if not _named_error(e):
            traceback.print_exc(file=sys.stderr)
        print(f"flows.stages {args.stage} {args.gen_dir}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    summary = out if isinstance(out, dict) else {"parts": len(out)}
    print(json.dumps({k: v for k, v in summary.items() if k != "shards"}, sort_keys=True, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
