"""The `zero` command line: init, selfplay, train, match, gtp, play, ladder, bench.

Every command reads the same params file (`--params`, default `params.yaml`
when present, else the built-in defaults) and takes `--set section.key=value`
overrides. Bad input ends with `zero: error: ...` naming what was wrong and
exit status 2, before anything is written; Ctrl-C ends a command with one line
and exit status 130, leaving no partial output file. Progress goes to stderr,
so stdout carries only a command's result.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path

from zero.cli_args import (Parser, UsageError, check_model, check_player, colour_arg, count_arg, counts_arg,
                           ladder_seed_arg, lineage_of, model_or_shipped, params_of, player_name_arg, player_params,
                           progress_for, seconds_arg, seed_arg, shipped_model)
from zero.config import MAX_CONCURRENT, MAX_GAMES, MAX_TREE_BYTES, MAX_VISITS, ConfigError, tree_bytes, usable_cores


def cmd_init(args) -> int:
    from zero.network import init_checkpoint

    init_checkpoint(params_of(args), args.out, args.seed)
    print(f"wrote {args.out}")
    return 0


def cmd_selfplay(args) -> int:
    from zero.bench import kernel_compiles
    from zero.games import make_game
    from zero.selfplay import play_shard

    params = params_of(args)
    check_model(params, make_game(params.game), args.model)
    games = args.games if args.games is not None else params.selfplay.games_per_shard
    bar, tick = progress_for(games, "self-play", at_once=params.selfplay.concurrent_games)
    with bar:
        summary = play_shard(params, args.model, args.out, args.seed, games, args.sgf_dir, progress=tick)
    summary["kernels"] = kernel_compiles()  # compiled inside this run: none after `zero warmup`
    print(json.dumps(summary, indent=2))
    return 0


def cmd_train(args) -> int:
    from zero.fileio import atomic_write
    from zero.train import train

    params = params_of(args)
    bar, tick = progress_for(params.train.steps, "training", "steps")
    with contextlib.ExitStack() as stack:
        # written beside its name and renamed once training is done: never a partial metrics file
        metrics_file = stack.enter_context(atomic_write(args.metrics_out, "w")) if args.metrics_out else None

        def on_step(step: int, metrics: dict) -> None:
            tick()
            if metrics_file:
                metrics_file.write(json.dumps({"step": step, **metrics}) + "\n")

        with bar:
            summary = train(params, args.init, args.data, args.out, args.seed, on_step=on_step)
    print(json.dumps(summary, indent=2, default=str))
    return 0


def _match_params(args):
    """The params of a match: `--a/--b shipped` named as the shipped champion's file; without --params, the
    search of the first network player with a lineage (both players search alike)."""
    params = params_of(args)
    for side in ("a", "b"):
        if getattr(args, side) == "shipped":
            shipped = shipped_model(params)
            if shipped is None:
                tag = params.game.tag
                raise UsageError(f"--{side} shipped: no champion is shipped for {tag} (models/{tag}.pt)")
            print(f"zero: --{side} is the shipped champion {shipped}", file=sys.stderr)
            setattr(args, side, str(shipped))
    networks = [spec for spec in (args.a, args.b) if lineage_of(_network_file(spec))]
    if networks:
        params = player_params(args, params, _network_file(networks[0]), measured_visits=False)
    return params


def cmd_match(args) -> int:
    from zero.fileio import atomic_write_text
    from zero.games import make_game
    from zero.match import params_for_players, play_match

    params = _match_params(args)
    games = args.games if args.games is not None else params.gate.games
    visits = args.visits if args.visits is not None else params.gate.visits
    at_once = min(params.gate.concurrent_games, games)
    params = params_for_players(params, (args.a, args.b))  # a network with the liberty planes: a game with them
    game = make_game(params.game)
    uses = [check_player(params, game, spec) for spec in (args.a, args.b)]
    need = sum(tree_bytes(params.game, at_once, visits if v < 0 else v) for v in uses if v)
    if need > MAX_TREE_BYTES:
        raise UsageError(f"--visits {visits} (or mcts:N) with {at_once} games at once on {params.game.tag} needs "
                         f"{need / 2**30:.1f} GiB of search trees, more than the "
                         f"{MAX_TREE_BYTES / 2**30:.0f} GiB limit")
    bar, tick = progress_for(games, "match", at_once=1 if args.sequential else at_once)
    with bar:
        result = play_match(params, args.a, args.b, games, args.seed, args.sgf_dir, args.visits,
                            sequential=args.sequential, progress=tick, names=(args.a_name, args.b_name))
    out = result.to_dict()
    text = json.dumps(out, indent=2)
    if args.out:
        atomic_write_text(args.out, text + "\n")
    print(text)
    return 0


# An engine's search evaluates this many leaves of its one tree per network call (zero.virtual_loss),
# with this many such calls at the network at once (on the CPU, each on its share of the cores).
LEAF_BATCH = 8
IN_FLIGHT = 2


def _network_file(spec: str) -> str | None:
    """The network file of a match player spec (`PATH` or `PATH?v=N`), None for the players without one."""
    from zero.match import split_options

    if spec in ("random", "init") or spec.startswith(("mcts:", "gtp:", "gnugo:", "pachi:")):
        return None
    try:
        path, _ = split_options(spec)
    except ValueError:
        return None
    return path if Path(path).is_file() else None


def _leaf_batched(params, args):
    """The params with mcts.leaf_batch and leaf_batches_in_flight of the command line: an engine's
    single-game search, several leaves a network call, several calls at once."""
    return params.model_copy(update={"mcts": params.mcts.model_copy(
        update={"leaf_batch": args.leaf_batch, "leaf_batches_in_flight": args.in_flight})})


def cmd_gtp(args) -> int:
    from zero.gtp import run_gtp

    params = params_of(args)
    model = model_or_shipped(params, args.model)
    params = _leaf_batched(player_params(args, params, model), args)
    return run_gtp(params, model, args.visits, sys.stdin, sys.stdout) or 0  # the engine loads while it answers


def cmd_play(args) -> int:
    from zero.engine_loader import announce_compiles, build_engine
    from zero.play import run_play, warming

    params = params_of(args)
    model = model_or_shipped(params, args.model)
    params = _leaf_batched(player_params(args, params, model), args)
    announce_compiles(sys.stderr, "zero play")
    engine = build_engine(params, model, args.visits)  # a checkpoint that cannot play the board is refused here
    return run_play(params, model, args.visits, args.color, sys.stdin, sys.stdout, engine=warming(engine)) or 0


def cmd_ladder(args) -> int:
    """Play the ladder of one network into a ladder directory, or (--plot) fit and draw an existing one."""
    from zero import ladder, ladder_plot, pairings
    from zero.games import make_game
    from zero.match import params_for_players

    params = params_of(args)
    cfg = params.ladder
    try:
        anchor = ladder.parse_anchor(args.anchor or cfg.anchor)
        if args.plot:
            out = Path(args.plot)
        else:
            model = model_or_shipped(params, args.model)
            if model is None:
                raise UsageError("zero ladder needs --model (no champion is shipped for this board)")
            params = params_for_players(params, [model])  # a network with the liberty planes: a game with them
            check_model(params, make_game(params.game), model)
            out = Path(args.out)
            opponents = args.opponents.split(",") if args.opponents else list(cfg.opponents)
            opponents = [o for o in opponents if not o.startswith("gen:")]  # networks of a pipeline line
            name = args.name or ladder.opponent_name(model)
            games = cfg.games if args.games is None else args.games
            if games == 0 and not args.calibration_games:
                raise UsageError("--games 0 plays only the calibration games: give --calibration-games too")
            for spec in opponents:  # every opponent is checked before any game is played
                if spec.startswith(("gnugo:", "pachi:")):
                    if params.game.name != "go":
                        engine = "GNU Go" if spec.startswith("gnugo:") else "Pachi"
                        raise UsageError(f"opponent {spec!r}: {engine} plays Go, "
                                         f"but the params are for {params.game.tag}")
                    ladder.player_spec(spec, cfg.gnugo)
                else:
                    check_player(params, make_game(params.game), spec)
            seed, extra = args.seed, None
            if seed == "fresh":
                seed, extra = ladder.fresh_seed(model), {"starts": "fresh"}
                print(f"fresh starts for {name}: seed {seed}, from its network's sha256", file=sys.stderr)
            for i, (x, y) in enumerate(ladder.calibration_pairs(opponents) if args.calibration_games else ()):
                key = f"{ladder.opponent_name(x)}--{ladder.opponent_name(y)}--calibration"
                if not (out / "pairings" / f"{key}.json").is_file():
                    _ladder_match(params, x, y, None, args.calibration_games, seed + 1000 + i, out, "calibration")
            if args.seconds_per_move is not None:
                if params.game.name != "go" or not 0 < args.seconds_per_move <= 600:
                    raise UsageError("--seconds-per-move takes 0 to 600 seconds, on Go")
                timed = ladder.kept_timing(out, params, model, args.seconds_per_move)
                if timed is not None:
                    print(f"{args.seconds_per_move:g} s a move: {name} plays at the {timed['visits']} visits this "
                          f"ladder measured first (on {timed.get('cpu', 'its machine')})", file=sys.stderr)
                else:
                    timed = ladder.visits_per_move(params, model, args.seconds_per_move)
                    print(f"{args.seconds_per_move:g} s a move buys {name} {timed['visits']} visits here "
                          f"({timed['visits_per_second']:.0f} a second, leaf batch {params.mcts.leaf_batch}, "
                          f"{params.gate.threads} threads)", file=sys.stderr)
                params = params.model_copy(update={"ladder": cfg.model_copy(update={"visits": timed["visits"]})})
                extra = {**(extra or {}), "time_per_move": timed, "leaf_batch": params.mcts.leaf_batch}
            for i, spec in enumerate(opponents if games else ()):
                _ladder_match(params, model, spec, name, games, seed + i, out, "ladder", extra)
        fitted = ladder.fit_dir(out, anchor)
        png = ladder_plot.plot_dir(out, fitted, Path(args.png) if args.png else None)
        rows = ladder.table(fitted, pairings.read_pairings(out))
    except ladder.LadderError as e:
        raise UsageError(str(e)) from None
    _print_ladder(fitted, rows, png)
    return 0


def _ladder_match(params, a: str, b: str, a_name: str | None, games: int, seed: int, out: Path, label: str,
                  extra: dict | None = None) -> None:
    from zero import ladder

    cfg = params.ladder
    pairing = f"{a_name or ladder.opponent_name(a)} against {ladder.opponent_name(b)}"
    print(f"{pairing}: {games} games ({label})", file=sys.stderr)
    bar, tick = progress_for(games, pairing, at_once=cfg.concurrent_games)
    with bar:
        rec = ladder.play_pairing(params, a, b, games, seed, cfg.visits, out, a_name, None, label,
                                  cfg.concurrent_games, cfg.opening_moves, cfg.gnugo, progress=tick, extra=extra)
    print(f"  {rec['wins']}-{rec['losses']}-{rec['draws']} in {rec['seconds']:.0f} s", file=sys.stderr)


def _print_ladder(fitted: dict, rows: list[dict], png: Path) -> None:
    """The ladder's pairings and ratings as tables."""
    from rich.console import Console
    from rich.table import Table

    from zero.ladder import scale_text

    t = Table(title=f"ratings {scale_text(fitted['anchor'])}")
    for col in ("player", "Elo", "95% interval", "games"):
        t.add_column(col)
    for name, r in fitted["ratings"].items():
        t.add_row(name, f"{r['elo']:.0f}", f"[{r['elo_low']:.0f}, {r['elo_high']:.0f}]", str(r["games"]))
    m = Table(title="matches")
    for col in ("a", "b", "kind", "games", "a's score (w-l-d)", "as black / as white", "a's win rate"):
        m.add_column(col)
    for r in rows:
        m.add_row(r["a"], r["b"], r["label"], str(r["games"]), r["score"], r["by_colour"],
                  f"{r['win_rate']:.3f}" if r["win_rate"] is not None else "")
    console = Console(file=sys.stdout, width=120)
    console.print(m)
    console.print(t)
    console.print(f"plot: {png}")


def cmd_paired(args) -> int:
    """Two ladders' players on the same starts: who won which, and the exact McNemar test."""
    from rich.console import Console
    from rich.table import Table

    from zero import pairings
    from zero.fileio import atomic_write_text

    try:
        a = args.a or _ladder_player(args.dir_a)
        b = args.b or _ladder_player(args.dir_b)
        rows = pairings.paired(args.dir_a, a, args.dir_b, b)
    except pairings.LadderError as e:
        raise UsageError(str(e)) from None
    t = Table(title=f"{a} ({args.dir_a}) and {b} ({args.dir_b}) on the same starts")
    for col in ("opponent", "games", f"{a} won", f"{b} won", "both", f"{a} alone", f"{b} alone", "neither",
                "exact McNemar p"):
        t.add_column(col)
    for r in rows:
        t.add_row(r["opponent"], str(r["games"]), str(r["a_wins"]), str(r["b_wins"]), str(r["both"]),
                  str(r["a_only"]), str(r["b_only"]), str(r["neither"]), f"{r['p']:.2f}")
    Console(file=sys.stdout, width=120).print(t)
    if args.out:
        record = {"a": a, "a_dir": str(args.dir_a), "b": b, "b_dir": str(args.dir_b), "opponents": rows}
        atomic_write_text(args.out, json.dumps(record, indent=1) + "\n")
    return 0


def cmd_sgf_pack(args) -> int:
    """Folders of one-game SGF files (and tar archives of them) packed into gzip-compressed collections."""
    from zero.sgf_pack import PackError, pack

    total = {"games": 0, "black_wins": 0, "white_wins": 0, "other": 0}
    for folder in args.dirs:
        try:
            packed = pack(folder)
        except PackError as e:
            raise UsageError(str(e)) from None
        for p in packed:
            print(f"{p.collection}: {p.games} games ({p.black_wins} won by black, {p.white_wins} by white, "
                  f"{p.other} other) from {p.source}")
            for key in total:
                total[key] += getattr(p, key)
    print(f"{total['games']} games packed ({total['black_wins']} won by black, {total['white_wins']} by white, "
          f"{total['other']} other)")
    return 0


def cmd_sgf_shard(args) -> int:
    """The positions of SGF collections' Go games as a shard (zero.sgf_shard), for `flows.readout`."""
    from zero.shards import write_shard
    from zero.sgf_shard import sgf_shard

    params = params_of(args)
    if args.opening < 0:
        raise UsageError(f"--opening {args.opening}: the moves left out cannot be fewer than none")
    try:
        shard, summary = sgf_shard(args.collections, params, args.opening)
    except ValueError as e:
        if isinstance(e, _user_errors()):
            raise
        raise UsageError(str(e)) from None
    write_shard(args.out, shard)
    print(f"{args.out}: {summary.positions:,} positions of {summary.games} games after their first {args.opening} "
          f"moves; {summary.counted} games counted (ownership and score targets), {summary.resigned} resigned, "
          f"{summary.count_differs} whose result their final board's count does not give (no ownership targets)")
    return 0


def _ladder_player(folder: str) -> str:
    """The one player a ladder directory's ladder pairings were played for."""
    from zero import pairings

    names = sorted({r["a"] for r in pairings.read_pairings(folder) if r.get("label", "ladder") == "ladder"})
    if len(names) != 1:
        raise UsageError(f"{folder}: ladder pairings of {len(names)} players ({', '.join(names) or 'none'}): "
                         "name one with --a / --b")
    return names[0]


def cmd_warmup(args) -> int:
    from zero.bench import warm_up
    from zero.games import make_game
    from zero.match import params_for_players

    params = params_of(args)
    model = model_or_shipped(params, args.model)  # the player `zero gtp` and `zero play` start with these args
    params = player_params(args, params, model, measured_visits=False)
    if model is not None:
        params = params_for_players(params, [model])  # the planes the network was trained with
        check_model(params, make_game(params.game), model)
    done = warm_up(params, model)
    print(f"{done['compiled']} kernels compiled and {done['loaded']} loaded from the cache in {done['seconds']:g} s")
    return 0


def cmd_bench(args) -> int:
    from zero.bench import run_bench
    from zero.match import params_for_players

    params = params_of(args)
    if args.gtp_latency:
        return _bench_gtp_latency(args, params)
    if args.model:
        params = params_for_players(params, [args.model])  # the planes the network was trained with
    for games in [args.games] + (args.scan_games or []):
        need = tree_bytes(params.game, games, args.visits)
        if need > MAX_TREE_BYTES:
            raise UsageError(f"--games {games} with --visits {args.visits} on {params.game.tag} needs "
                             f"{need / 2**30:.1f} GiB of search trees, more than the "
                             f"{MAX_TREE_BYTES / 2**30:.0f} GiB limit")
    if args.leaf_batches:
        from zero.bench import measure_single_game

        if args.seconds_per_move is not None and params.game.name != "go":
            raise UsageError("--seconds-per-move measures Go positions; this params file plays "
                             f"{params.game.name}")
        rows = measure_single_game(params, args.model, args.leaf_batches, args.visits, threads=args.threads,
                                   seconds_per_move=args.seconds_per_move)
        if args.json:
            print(json.dumps({"single_game": rows, "model": args.model, "game": params.game.tag}))
        else:
            for r in rows:
                timed = r.get("time_per_move")
                print(f"one game's search, leaf batch {r['leaf_batch']:>3}, {r['in_flight']} in flight: "
                      f"{r['visits_per_s']:,.0f} visits/s ({r['visits']} visits a move, {r['moves']} moves, "
                      f"{r['threads']} threads)" + (f"; {timed['seconds_per_move']:g} s a move buys "
                                                    f"{timed['visits']:,} visits" if timed else ""))
        return 0
    if args.train:
        from zero.bench import measure_train

        row = measure_train(params, args.model, args.seconds, threads=args.threads)
        if args.json:
            print(json.dumps({"train": row, "model": args.model, "game": params.game.tag}))
        else:
            print(f"training, batch {row['batch_size']}: {row['positions_per_s']:,.0f} positions/s "
                  f"({row['steps']} steps in {row['seconds']:.1f} s, {row['threads']} threads, "
                  f"channels_last {str(row['channels_last']).lower()}, {row['device']}"
                  f"{', CUDA graph' if row.get('cuda_graph') else ''}), whole steps; drawing the "
                  f"minibatch takes {row['minibatch_ms']:.1f} ms of a step")
        return 0
    if args.scan_games and not args.scan_threads:
        args.scan_threads = [params.selfplay.threads or usable_cores()]
    result = run_bench(params, seconds=args.seconds, concurrent=args.games, visits=args.visits,
                       quiet=args.json, scan_games=args.scan_games, scan_threads=args.scan_threads,
                       model=args.model, warmup=args.warmup, profile=args.profile, processes=args.processes)
    if args.json:
        print(json.dumps(result))
    return 0


def _bench_gtp_latency(args, params) -> int:
    """`zero bench --gtp-latency`: how soon `zero gtp`, started with this command's --params, --set and --model,
    answers a controller's first commands, moves and scoring (zero.bench.measure_gtp_latency)."""
    from zero.bench import measure_gtp_latency

    if params.game.name != "go":
        raise UsageError(f"--gtp-latency measures `zero gtp`, which plays Go; the params are for {params.game.tag}")
    gtp_args = [*(["--params", args.params] if args.params else []), *[a for s in args.set for a in ("--set", s)],
                *(["--model", args.model] if args.model else [])]
    got = measure_gtp_latency(gtp_args, params.game.size, params.game.komi, cold_cache=args.cold_cache)
    if args.json:
        print(json.dumps({"gtp_latency": got}))
        return 0
    cache = "an empty numba cache" if args.cold_cache else "numba's cache as it is"
    print(f"{' '.join(['zero gtp', *gtp_args])} with {cache}, on cores {got['cores']}, load average "
          f"{got['load_before'][0]:g} before and {got['load_after'][0]:g} after"
          f"{'; it said it was compiling its kernels' if got['notice'] else ''}:")
    for r in got["rows"]:
        cpu = f"{r['cpu']:6.2f} s" if r["cpu"] is not None else "     ?"
        print(f"  {r['command']:<24} answered at {r['at']:6.2f} s ({r['took']:5.2f} s after it was sent), "
              f"engine CPU {cpu}: {r['answer']}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="zero", description=__doc__.splitlines()[0])
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--params", default=None, help="params file (default: params.yaml if present)")
    common.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="override one parameter; repeatable")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("init", parents=[common], help="write a freshly initialised network")
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=seed_arg, default=0)
    p.set_defaults(fn=cmd_init)

    p = sub.add_parser("selfplay", parents=[common], help="play one shard of self-play games")
    p.add_argument("--model", required=True, help="network checkpoint")
    p.add_argument("--out", required=True, help="shard file to write (.npz)")
    p.add_argument("--seed", type=seed_arg, default=0)
    p.add_argument("--games", type=count_arg(MAX_GAMES), default=None)
    p.add_argument("--sgf-dir", default=None, help="keep the games here as one SGF collection, <out's stem>.sgf.gz")
    p.set_defaults(fn=cmd_selfplay)

    p = sub.add_parser("train", parents=[common], help="train a network on shards")
    p.add_argument("--init", required=True, help="checkpoint to start from")
    p.add_argument("--data", nargs="+", required=True, help="shards, oldest first")
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=seed_arg, default=0)
    p.add_argument("--metrics-out", default=None, help="write per-step metrics as JSON lines")
    p.set_defaults(fn=cmd_train)

    p = sub.add_parser("match", parents=[common], help="play a match between two players")
    p.add_argument("--a", default="shipped",
                   help="checkpoint, 'shipped' (the champion shipped for the board; the default), 'random', "
                        "'mcts:N', 'init' or 'gtp:<command>'; a checkpoint may end in player options: "
                        "@v<N> visits, @cp<X> c_puct, @fpu<X> fpu_reduction, @su<X> score_utility, "
                        "@sd<X> c_puct_stdev_scale, @svb<X> subtree_bias_factor, @bf1/@bf0 "
                        "bfloat16/float32, @lb<N> leaf batch, @f<N> batches in flight (models/go-9.pt@cp2@v400)")
    p.add_argument("--b", required=True, help="like --a")
    p.add_argument("--games", type=count_arg(MAX_GAMES), default=None)
    p.add_argument("--seed", type=seed_arg, default=0)
    p.add_argument("--visits", type=count_arg(MAX_VISITS), default=None)
    p.add_argument("--sequential", action="store_true", help="stop once the gate's outcome is certain")
    p.add_argument("--out", default=None)
    p.add_argument("--sgf-dir", default=None)
    p.add_argument("--a-name", type=player_name_arg, default=None,
                   help="a's name in the SGFs (default: the checkpoint's file stem, or mcts-N, ...)")
    p.add_argument("--b-name", type=player_name_arg, default=None, help="like --a-name")
    p.set_defaults(fn=cmd_match)

    engine = argparse.ArgumentParser(add_help=False)  # the search a human or a GUI plays against
    engine.add_argument("--model", default=None)
    engine.add_argument("--visits", type=count_arg(MAX_VISITS), default=None)
    engine.add_argument("--leaf-batch", type=count_arg(256), default=LEAF_BATCH,
                        help=f"leaves evaluated per network call, under virtual loss (default {LEAF_BATCH}; 1: one)")
    engine.add_argument("--in-flight", type=count_arg(16), default=IN_FLIGHT,
                        help=f"leaf batches at the network at once, each on its share of the cores "
                             f"(default {IN_FLIGHT})")

    p = sub.add_parser("gtp", parents=[common, engine], help="GTP v2 engine on stdin/stdout")
    p.set_defaults(fn=cmd_gtp)

    p = sub.add_parser("play", parents=[common, engine], help="play against the engine in the terminal")
    p.add_argument("--color", type=colour_arg, default="black", help="your colour: black or white")
    p.set_defaults(fn=cmd_play)

    p = sub.add_parser("ladder", parents=[common],
                       help="a network against GNU Go and fixed opponents, rated; or --plot a ladder directory")
    p.add_argument("--model", default=None, help="checkpoint (default: the shipped champion for the board)")
    p.add_argument("--name", default=None, help="the network's name in the ratings (default: the file's stem)")
    p.add_argument("--out", default="ladder", help="ladder directory: pairings, SGFs, ratings.json, elo.png")
    p.add_argument("--opponents", default=None, help="comma-separated, e.g. gnugo:1,gnugo:5,mcts:1000 "
                                                     "(default: ladder.opponents)")
    p.add_argument("--games", type=count_arg(MAX_GAMES, least=0), default=None,
                   help="per opponent (default: ladder.games; 0: only the calibration games)")
    p.add_argument("--calibration-games", type=count_arg(MAX_GAMES, least=0), default=None,
                   help="games between consecutive fixed opponents, played once per directory (0: none)")
    p.add_argument("--anchor", default=None, help="player=rating held fixed (default: ladder.anchor, gnugo:1=0)")
    p.add_argument("--seed", type=ladder_seed_arg, default=0,
                   help="the starts' seed (default 0: the usual starts); fresh: starts of this network's own, "
                        "from its sha256, that no line selected on")
    p.add_argument("--plot", default=None, metavar="DIR", help="only fit and plot this ladder directory")
    p.add_argument("--png", default=None, help="where to draw the plot (default: DIR/elo.png)")
    p.add_argument("--seconds-per-move", type=float, default=None, metavar="S",
                   help="Go: play at the visits S seconds of one game's search buy the network here "
                        "(measured first with its leaf batch and gate.threads; recorded in each pairing)")
    p.set_defaults(fn=cmd_ladder)

    p = sub.add_parser("paired", help="two ladders' players on the same starts: which starts each won, "
                                      "and the exact McNemar test of the starts won by one alone")
    p.add_argument("dir_a", help="ladder directory of the first player")
    p.add_argument("dir_b", help="ladder directory of the second player (may be the same directory)")
    p.add_argument("--a", default=None, help="the first player's name (default: the one player of dir_a's ladder)")
    p.add_argument("--b", default=None, help="like --a, in dir_b")
    p.add_argument("--out", default=None, help="also write the rows as JSON here")
    p.set_defaults(fn=cmd_paired)

    sgf = sub.add_parser("sgf", help="SGF collections: `zero sgf pack DIR`, `zero sgf shard COLLECTION --out S.npz`")
    sgf_sub = sgf.add_subparsers(dest="sgf_command", required=True)
    p = sgf_sub.add_parser("pack", help="pack every folder of one-game SGF files (<name>-<index>.sgf) and every "
                                        "tar.gz of them under DIR into <name>.sgf.gz collections")
    p.add_argument("dirs", nargs="+", metavar="DIR", help="a ladder or match directory, or any folder above them")
    p.set_defaults(fn=cmd_sgf_pack)
    p = sgf_sub.add_parser("shard", parents=[common],
                           help="the positions of SGF collections' Go games as a shard: the move played as each "
                                "position's policy target, the result as its value, and for games that ended on a "
                                "counted board their final ownership and score (to read networks on with "
                                "python -m flows.readout)")
    p.add_argument("collections", nargs="+", metavar="COLLECTION", help="an SGF file or .sgf.gz collection")
    p.add_argument("--out", required=True, help="the shard file to write (.npz)")
    p.add_argument("--opening", type=int, default=2,
                   help="the first moves of each game, not recorded (the ladder's random stones: 2)")
    p.set_defaults(fn=cmd_sgf_shard)

    p = sub.add_parser("warmup", parents=[common],
                       help="compile the engine's kernels on this machine (numba caches them) for self-play and "
                            "the player `zero gtp` and `zero play` start with the same arguments, so that later "
                            "runs do not compile inside their own time (make install runs it)")
    p.add_argument("--model", default=None,
                   help="a checkpoint (default: the shipped champion for the board, else a fresh network); "
                        "without --params, searched with its lineage's settings as zero gtp does")
    p.set_defaults(fn=cmd_warmup)

    p = sub.add_parser("bench", parents=[common], help="measure speed and memory")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--seconds", type=seconds_arg, default=20.0)
    p.add_argument("--games", type=count_arg(MAX_CONCURRENT), default=128, help="concurrent self-play games")
    p.add_argument("--visits", type=count_arg(MAX_VISITS), default=100)
    p.add_argument("--scan-games", type=counts_arg(MAX_CONCURRENT), default=None, metavar="N,N,...",
                   help="also measure self-play at each number of concurrent games")
    p.add_argument("--scan-threads", type=counts_arg(1024), default=None, metavar="N,N,...",
                   help="also measure self-play with each number of torch and numba threads")
    p.add_argument("--model", default=None, help="a checkpoint to measure (default: a fresh network of the params)")
    p.add_argument("--warmup", type=seconds_arg, default=None,
                   help="seconds of self-play before the steady figures (default: a tenth of --seconds)")
    p.add_argument("--processes", type=counts_arg(64), default=None, metavar="N,N,...",
                   help="also measure self-play in N processes at once, the cores split between them")
    p.add_argument("--leaf-batches", type=counts_arg(256), default=None, metavar="N,N,...",
                   help="instead of self-play: visits a second of one game's search (zero gtp's engine) at "
                        "each leaf batch, --visits a move (e.g. 400), a fresh tree each move")
    p.add_argument("--train", action="store_true",
                   help="instead of self-play: training positions a second (the train section's batch size, "
                        "switches and device; random positions), for --seconds")
    p.add_argument("--threads", type=count_arg(64), default=None,
                   help="with --leaf-batches: torch and numba threads (default gate.threads); "
                        "with --train: torch threads (default train.threads)")
    p.add_argument("--seconds-per-move", type=seconds_arg, default=None,
                   help="with --leaf-batches (Go): also the visits this many seconds of the search buy a move")
    p.add_argument("--gtp-latency", action="store_true",
                   help="instead of self-play: how soon `zero gtp` (with this command's --params, --set and "
                        "--model) answers a controller's first command, set-up, first moves and scoring: wall "
                        "and CPU seconds from its start")
    p.add_argument("--cold-cache", action="store_true",
                   help="with --gtp-latency: on an empty numba cache, as a fresh clone before `zero warmup`")
    p.add_argument("--profile", default=None, metavar="PATH",
                   help="also profile self-play: PATH.txt (cProfile), PATH.kernels.txt (torch profiler), PATH.pstats")
    p.set_defaults(fn=cmd_bench)
    return parser


def _missing_file(args) -> str | None:
    """A --params, --model or --init file that is not there, told before torch is imported (seconds)."""
    for flag, kind in (("params", "params file"), ("model", "checkpoint file"), ("init", "checkpoint file")):
        value = getattr(args, flag, None)
        if isinstance(value, str) and value and not Path(value).is_file():
            return f"--{flag} {value}: no such {kind}"
    return None


def _user_errors() -> tuple[type[Exception], ...]:
    """The errors a command ends with as `zero: error: ...`: bad input, named. Imported only when one is raised
    (some modules bring torch with them, which a command such as `zero gtp` loads on a thread instead)."""
    from zero.games.base import IllegalMove
    from zero.gtp_player import GtpEngineError
    from zero.network import CheckpointError
    from zero.sgf import SgfError
    from zero.shards import ShardError
    from zero.train import WindowError

    return (ConfigError, CheckpointError, ShardError, WindowError, SgfError, IllegalMove, UsageError,
            GtpEngineError, OSError)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    missing = _missing_file(args)
    if missing:
        print(f"zero: error: {missing}", file=sys.stderr)
        return 2
    try:
        return args.fn(args)
    except Exception as e:
        if not isinstance(e, _user_errors()):
            raise
        if isinstance(e, OSError) and e.strerror:
            e = f"{e.filename2 or e.filename or 'I/O'}: {e.strerror}"
        print(f"zero: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        if sys.stdout.isatty():
            print(file=sys.stdout)  # end a prompt or progress line
        print(f"zero: {args.command} interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
