"""Generations of a line made by flows.stages alone, on a machine with only the library (a GPU box).

A machine that runs the heavy work need not run the servers: this makes one
generation after another with the same stage functions the zero-generation flow
and `dvc repro` call (same params snapshots, same derived seeds), writing each
generation's folder under gens/<tag>/ and a `standalone.json` beside it (when it
ran, where, with what compute). Nothing is registered: the workspace's flow
records them afterwards. `zero-loop` over the same params file finds every output
on disk and verified, plays and trains nothing again, and records each generation
in DVC, MLflow and the registry as if it had run them itself, with the compute of
the machine that did the work (flows.generation reads standalone.json).

Usage:
    python -m flows.standalone run params-gpu.yaml --minutes 9      # on the GPU machine
    python -m flows.standalone pending params-gpu.yaml              # how many wait to be recorded
    make record PARAMS=params-gpu.yaml                              # record them here (zero-loop)
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

from flows import stages
from flows.compute import compute_record, cpu_seconds, used_gpus
from flows.layout import Generation, LineError, Workspace, read_json, write_json
from flows.timeline import Timeline

MARK = "standalone.json"


def made_here(gen: Generation) -> dict | None:
    """The standalone record of a generation, or None if the flow made it (or nothing did)."""
    path = gen.dir / MARK
    return read_json(path) if path.is_file() else None


def _complete(gen: Generation) -> bool:
    return gen.champion.is_file() and (gen.dir / MARK).is_file()


def _write_snapshot(ws: Workspace, gen: Generation, params) -> None:
    """The params snapshot the flow would write (Workspace.start), refusing other params for a started one."""
    from zero.config import load_params

    if gen.params_file.is_file():
        if gen.g > 0 and load_params(gen.params_file).digest() != params.digest():
            raise LineError(f"{gen.rel} was started with other params ({gen.params_file}); delete it to start over")
        return
    ws.write_snapshot(gen, params)


def run(root: Path, params, generations: int | None = None, minutes: float | None = None,
        workers: int | None = None, say=print) -> list[dict]:
    """Make generations of params' line in `root` until `generations` are made or `minutes` would pass.

    Resumes after the last generation with a champion; a generation is started only if the last one's
    time still fits before the deadline. Returns each generation's standalone record.
    """
    from flows.request import runnable_here
    from zero.inference import arithmetic

    runnable_here(params)  # ConfigError: bfloat16 asked of a CPU without its instructions
    ws = Workspace(root)
    tag = params.game.tag
    deadline = None if minutes is None else time.time() + minutes * 60
    g0 = ws.generation(tag, 0)
    if not g0.champion.is_file():
        _write_snapshot(ws, g0, params)
        stages.init(g0)
    g = 1
    while ws.generation(tag, g).champion.is_file():
        g += 1
    done, last_s = [], 0.0
    while generations is None or len(done) < generations:
        if deadline is not None and time.time() + last_s > deadline:
            break
        gen = ws.generation(tag, g)
        if gen.record_file.is_file():
            raise LineError(f"{gen.rel} was recorded by the flow but has no champion: repair it there first")
        started, cpu0 = time.time(), cpu_seconds()
        timeline = Timeline(started)  # the flow's steps that this path has too (flows.timeline compares them)
        gparams, recipe = stages.generation_params(gen, params)
        _write_snapshot(ws, gen, gparams)
        timeline.lap("start")
        shards = stages.selfplay(gen, workers)
        timeline.lap("selfplay")
        stages.dataset(gen)
        timeline.lap("dataset")
        steps: list = []
        trained = stages.train(gen, on_step=lambda i, metrics: steps.append([i, metrics]), replay_kept=True)
        if trained.get("trained"):  # kept for the flow that records it: MLflow gets the curves
            write_json(gen.dir / stages.TRAINED_FILE, {"summary": trained, "steps": steps})
        timeline.lap("train")
        gate = stages.gate(gen, workers)
        timeline.lap("gate")
        champion = stages.champion(gen)
        timeline.lap("promote")
        last_s = time.time() - started
        record = {"generation": g, "host": platform.node(), "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                  "arithmetic": arithmetic(gparams),
                  "compute": compute_record(last_s, used_gpus(gparams), cpu_seconds() - cpu0),
                  "recipe": recipe, "games": sum(s["games"] for s in shards),
                  "positions": sum(s["positions"] for s in shards),
                  "nn_evals": sum(s.get("nn_evals", 0) for s in shards),
                  "train_sha256": trained["sha256"], "gate": {k: gate[k] for k in ("wins", "losses", "draws")
                                                               if k in gate},
                  "promoted": champion["promoted"], "timeline": timeline.steps}
        write_json(gen.dir / MARK, record)
        say(f"{gen.key}: {record['games']} games, {record['positions']} positions, "
            f"{record['nn_evals'] / max(last_s, 1e-9):,.0f} evaluations/s over the generation, "
            f"gate {record['gate']}, {last_s:.0f} s")
        done.append(record)
        g += 1
    return done


def pending(root: Path, params) -> list[int]:
    """Generations made here and not yet recorded by the flow, in order (each must follow the last recorded)."""
    ws = Workspace(root)
    tag = params.game.tag
    out, g = [], 1
    while True:
        gen = ws.generation(tag, g)
        if not gen.champion.is_file() and not gen.record_file.is_file():
            return out
        if _complete(gen) and not gen.record_file.is_file():
            out.append(g)
        g += 1


def main(argv: list[str] | None = None) -> int:
    from zero.config import ConfigError, load_params

    ap = argparse.ArgumentParser(prog="python -m flows.standalone", description=__doc__.split("\n\n")[0])
    ap.add_argument("action", choices=["run", "pending"])
    ap.add_argument("params", help="the line's params file (e.g. params-gpu.yaml)")
    ap.add_argument("--root", default=".", help="workspace root (default: the current directory)")
    ap.add_argument("--generations", type=int, default=None, help="at most this many (default: until --minutes)")
    ap.add_argument("--minutes", type=float, default=None, help="start no generation that would end past this")
    ap.add_argument("--workers", type=int, default=None, help="processes for self-play and gate parts")
    ap.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    args = ap.parse_args(argv)
    root = Path(args.root).resolve()
    try:
        params = load_params(root / args.params, args.set)
    except ConfigError as e:
        print(f"flows.standalone: {e}", file=sys.stderr)
        return 2
    if args.action == "pending":
        print(len(pending(root, params)))
        return 0
    if args.generations is None and args.minutes is None:
        ap.error("run needs --generations or --minutes")
    stages._log_to_stderr()
    run(root, params, args.generations, args.minutes, args.workers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
