"""The `zero` command line: init, selfplay, train, match, gtp, play, bench.

Every command reads the same params file (`--params`, default `params.yaml`
when present, else the built-in defaults) and takes `--set section.key=value`
overrides. Bad input ends with `zero: error: ...` naming what was wrong and
exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from zero.config import ConfigError, load_params


def _params(args):
    path = args.params
    if path is None and Path("params.yaml").is_file():
        path = "params.yaml"
    return load_params(path, args.set)


def _progress(total: int, label: str):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   transient=False, disable=not sys.stderr.isatty(), console=None)
    task = bar.add_task(label, total=total)
    return bar, (lambda: bar.advance(task))


def cmd_init(args) -> int:
    from zero.network import init_checkpoint

    init_checkpoint(_params(args), args.out, args.seed)
    print(f"wrote {args.out}")
    return 0


def cmd_selfplay(args) -> int:
    from zero.selfplay import play_shard

    params = _params(args)
    games = args.games or params.selfplay.games_per_shard
    bar, tick = _progress(games, "self-play games")
    with bar:
        summary = play_shard(params, args.model, args.out, args.seed, games, args.sgf_dir, progress=tick)
    print(json.dumps(summary, indent=2))
    return 0


def cmd_train(args) -> int:
    from zero.train import train

    params = _params(args)
    bar, tick = _progress(params.train.steps, "training steps")
    metrics_file = open(args.metrics_out, "w") if args.metrics_out else None

    def on_step(step: int, metrics: dict) -> None:
        tick()
        if metrics_file:
            metrics_file.write(json.dumps({"step": step, **metrics}) + "\n")

    try:
        with bar:
            summary = train(params, args.init, args.data, args.out, args.seed, on_step=on_step)
    finally:
        if metrics_file:
            metrics_file.close()
    print(json.dumps(summary, indent=2, default=str))
    return 0


def cmd_match(args) -> int:
    from zero.match import play_match

    params = _params(args)
    games = args.games or params.gate.games
    result = play_match(params, args.a, args.b, games, args.seed, args.sgf_dir, args.visits,
                        sequential=args.sequential)
    out = result.to_dict()
    text = json.dumps(out, indent=2)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text)
    return 0


def cmd_gtp(args) -> int:
    from zero.gtp import run_gtp

    return run_gtp(_params(args), args.model, args.visits, sys.stdin, sys.stdout) or 0


def cmd_play(args) -> int:
    from zero.play import run_play

    color = 1 if args.color.lower().startswith("b") else -1
    return run_play(_params(args), args.model, args.visits, color, sys.stdin, sys.stdout) or 0


def cmd_bench(args) -> int:
    from zero.bench import run_bench

    result = run_bench(_params(args), seconds=args.seconds, concurrent=args.games, visits=args.visits,
                       quiet=args.json)
    if args.json:
        print(json.dumps(result))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="zero", description=__doc__.splitlines()[0])
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--params", default=None, help="params file (default: params.yaml if present)")
    common.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="override one parameter; repeatable")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("init", parents=[common], help="write a freshly initialised network")
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(fn=cmd_init)

    p = sub.add_parser("selfplay", parents=[common], help="play one shard of self-play games")
    p.add_argument("--model", required=True, help="network checkpoint")
    p.add_argument("--out", required=True, help="shard file to write (.npz)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--games", type=int, default=None)
    p.add_argument("--sgf-dir", default=None)
    p.set_defaults(fn=cmd_selfplay)

    p = sub.add_parser("train", parents=[common], help="train a network on shards")
    p.add_argument("--init", required=True, help="checkpoint to start from")
    p.add_argument("--data", nargs="+", required=True, help="shards, oldest first")
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--metrics-out", default=None, help="write per-step metrics as JSON lines")
    p.set_defaults(fn=cmd_train)

    p = sub.add_parser("match", parents=[common], help="play a match between two players")
    p.add_argument("--a", required=True, help="checkpoint, 'random', 'mcts:N' or 'init'")
    p.add_argument("--b", required=True, help="checkpoint, 'random', 'mcts:N' or 'init'")
    p.add_argument("--games", type=int, default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--visits", type=int, default=None)
    p.add_argument("--sequential", action="store_true", help="stop once the gate's outcome is certain")
    p.add_argument("--out", default=None)
    p.add_argument("--sgf-dir", default=None)
    p.set_defaults(fn=cmd_match)

    p = sub.add_parser("gtp", parents=[common], help="GTP v2 engine on stdin/stdout")
    p.add_argument("--model", default=None)
    p.add_argument("--visits", type=int, default=None)
    p.set_defaults(fn=cmd_gtp)

    p = sub.add_parser("play", parents=[common], help="play against the engine in the terminal")
    p.add_argument("--model", default=None)
    p.add_argument("--visits", type=int, default=None)
    p.add_argument("--color", default="black", help="your colour: black or white")
    p.set_defaults(fn=cmd_play)

    p = sub.add_parser("bench", parents=[common], help="measure speed and memory")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--games", type=int, default=128, help="concurrent self-play games")
    p.add_argument("--visits", type=int, default=100)
    p.set_defaults(fn=cmd_bench)
    return parser


def main(argv: list[str] | None = None) -> int:
    from zero.games.base import IllegalMove
    from zero.network import CheckpointError
    from zero.shards import ShardError
    from zero.sgf import SgfError
    from zero.train import WindowError

    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except (ConfigError, CheckpointError, ShardError, WindowError, SgfError, IllegalMove, FileNotFoundError) as e:
        print(f"zero: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
