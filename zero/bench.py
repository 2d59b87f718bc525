"""`zero bench`: speed and memory of the network, the rules engine and self-play.

Figures: the network alone at the self-play batch size, self-play with the
batched search (positions and network evaluations per second, the share of
self-play time the network (on CUDA: the GPU) is busy, and search_efficiency),
the search without a network (the tree and board work alone: the most leaves
per second the CPU side can feed a network), random legal Go moves per second
on 9x9, and the process's peak resident memory. A scan repeats the self-play
measure over numbers of concurrent games and of threads.
"""

from __future__ import annotations

import os
import platform
import resource
import threading
import time
from pathlib import Path

import numba
import numpy as np
import torch

from zero.config import usable_cores
from zero.evaluator import NetworkEvaluator, UniformEvaluator
from zero.games import make_game
from zero.games.go import GoGame
from zero.network import check_network_fits, init_network, load_checkpoint, pick_device, search_network, set_threads
from zero.selfplay import play_games


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def measure_network(net, planes: np.ndarray, seconds: float, device, half: bool = False) -> float:
    """Positions per second of the network alone on `planes` (one batch, repeated; bf16 on CUDA if half)."""
    x = torch.from_numpy(planes).to(device)
    with torch.inference_mode(), torch.autocast("cuda", dtype=torch.bfloat16, enabled=half and device.type == "cuda"):
        for _ in range(2):
            net(x)
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            logits, value = net(x)
            logits.cpu(), value.cpu()
            n += len(planes)
    return n / (time.perf_counter() - start)


class BoardOnlyEvaluator(UniformEvaluator):
    """Uniform priors and value 0, with the network's input planes built for every leaf: the search's
    tree and board work without the network."""

    needs_planes = True

    def __init__(self):
        self.nn_positions = 0  # leaves that a network would have evaluated

    def evaluate(self, game, batch, slots, paths, depth, inputs):
        self.nn_positions += int(np.isnan(inputs.terminal_value).sum())
        return super().evaluate(game, batch, slots, paths, depth, inputs)


def measure_selfplay(game, params, evaluator, seconds: float, warmup: float = 0.0) -> dict:
    """Self-play with `evaluator` for `seconds`: positions and evaluations per second, network busy share.

    With `warmup` seconds, `steady_evals_per_s` and `steady_busy_share` are measured over what follows the
    warm-up alone (kernels compiled, graphs captured, every slot in a game), sampled every 0.25 s.
    """
    start = time.perf_counter()
    marks: list[tuple[float, int, float]] = []  # (time, evaluations, network busy seconds), sampled
    stop = threading.Event()

    def mark():
        marks.append((time.perf_counter(), getattr(evaluator, "nn_positions", 0),
                      getattr(evaluator, "nn_seconds", 0.0)))

    def sample():
        while not stop.wait(0.25):
            mark()

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        records = play_games(game, evaluator, params.selfplay, params.mcts.search(params.selfplay.visits),
                             num_games=10**6, seed=1, deadline=start + seconds)
    finally:
        stop.set()
        sampler.join()
    mark()
    elapsed = time.perf_counter() - start
    positions = sum(len(r.moves) for r in records)
    evals = getattr(evaluator, "nn_positions", 0)
    out = {"positions_per_s": positions / elapsed, "evals_per_s": evals / elapsed,
           "busy_share": getattr(evaluator, "nn_seconds", 0.0) / elapsed}
    if warmup > 0:
        after = [m for m in marks if m[0] >= start + warmup] or marks[-1:]
        t0, e0, b0 = after[0]
        t1, e1, b1 = marks[-1]
        span = max(t1 - t0, 1e-9)
        out.update(steady_evals_per_s=(e1 - e0) / span if t1 > t0 else out["evals_per_s"],
                   steady_busy_share=(b1 - b0) / span if t1 > t0 else out["busy_share"],
                   steady_seconds=t1 - t0)
    return out


def _network(params, game, device, model: str | None):
    if model is None:
        return init_network(params, game, seed=0).to(device)
    net, _ = load_checkpoint(model, device)
    check_network_fits(net, game, model, params.game.tag)
    return net


def _evaluator(net, sym, device, sp, mcts=None) -> NetworkEvaluator:
    if mcts is not None:
        net = search_network(net, mcts.score_utility, mcts.score_utility_scale, head_value=sp.root_values)
    return NetworkEvaluator(net, sym, 0, device, half=sp.half_precision, fast=sp.fast_inference,
                            cpu_bf16=sp.cpu_bf16)


def measure_leafnet(net, game, sp, device, batch: int, seconds: float) -> float:
    """Positions per second of the evaluator's whole call (zero.inference.LeafNet: symmetries, network,
    softmax; a CUDA graph on CUDA) on one batch of random 0/1 planes, repeated, results on the host."""
    from zero.inference import LeafNet

    leaf = LeafNet(net, game.symmetries(), device, half=sp.half_precision if device.type == "cuda" else sp.cpu_bf16)
    rng = np.random.default_rng(0)
    dtype = torch.uint8 if device.type == "cuda" else torch.float32
    planes = torch.from_numpy(rng.random((batch, game.num_planes, game.height, game.width)) < 0.3).to(device, dtype)
    sym = torch.from_numpy(rng.integers(len(game.symmetries()), size=batch)).to(device)
    legal = torch.ones((batch, game.num_actions), dtype=torch.bool, device=device)
    for _ in range(3):
        leaf(planes, sym, legal)
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        priors, value = leaf(planes, sym, legal)
        priors.cpu(), value.cpu()
        n += batch
    return n / (time.perf_counter() - start)


def _profile(game, params, evaluator, seconds: float, path: str) -> None:
    """Where self-play's time goes: cProfile of the search (PATH.pstats, PATH.txt: top functions by own and
    cumulative time) and, on CUDA, the torch profiler's kernel table (PATH.kernels.txt)."""
    import cProfile
    import io
    import pstats

    profiler = cProfile.Profile()
    cuda = getattr(evaluator, "cuda", False)
    activities = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if cuda else [])
    with torch.profiler.profile(activities=activities) as tprof:
        profiler.enable()
        got = measure_selfplay(game, params, evaluator, seconds)
        profiler.disable()
    profiler.dump_stats(f"{path}.pstats")
    text = io.StringIO()
    stats = pstats.Stats(profiler, stream=text)
    text.write(f"self-play {seconds:.0f} s: {got['evals_per_s']:,.0f} evaluations/s, network busy "
               f"{got['busy_share']:.0%}\n\n")
    stats.sort_stats("tottime").print_stats(30)
    stats.sort_stats("cumulative").print_stats(30)
    with open(f"{path}.txt", "w") as f:
        f.write(text.getvalue())
    sort = "self_cuda_time_total" if cuda else "self_cpu_time_total"
    with open(f"{path}.kernels.txt", "w") as f:
        f.write(tprof.key_averages().table(sort_by=sort, row_limit=40))


def _child(params, model, seconds, warmup, threads, queue) -> None:
    """One process of a multi-process measure: its own network and search on `threads` threads."""
    set_threads(threads)
    sp = params.selfplay
    game = make_game(params.game)
    device = pick_device(sp.device)
    net = _network(params, game, device, model)
    sym = game.symmetries() if params.mcts.symmetries else None
    play_games(game, _evaluator(net, sym, device, sp, params.mcts), sp.model_copy(update={"concurrent_games": 2}),
               params.mcts.search(4), num_games=2, seed=0, deadline=time.perf_counter() + 1.0)
    queue.put(measure_selfplay(game, params, _evaluator(net, sym, device, sp, params.mcts), seconds, warmup=warmup))


def measure_processes(params, model, processes: int, threads: int, seconds: float, warmup: float) -> dict:
    """Self-play in `processes` processes at once on one machine (one device), `threads` threads each:
    the summed figures (what `pipeline.selfplay_shards` workers sharing a GPU reach)."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_child, args=(params, model, seconds, warmup, threads, queue))
             for _ in range(processes)]
    for proc in procs:
        proc.start()
    got = [queue.get() for _ in procs]
    for proc in procs:
        proc.join()
    total = {k: sum(g[k] for g in got) for k in got[0]}
    # busy shares of processes sharing one GPU add up (each is its own kernels' time over the wall time)
    total.pop("steady_seconds", None)
    return {"processes": processes, "threads": threads,
            **{k: round(v, 3 if "share" in k else 1) for k, v in total.items()}}


KERNEL_MODULES = ("zero.mcts", "zero.tree", "zero.tree_walk", "zero.engine", "zero.virtual_loss",
                  "zero.games.go_kernels", "zero.games.gomoku")
WARM_UP_VISITS = 4


def kernel_compiles() -> dict:
    """This process's numba kernels so far: {"compiled": specialisations compiled here, "loaded": those read
    from numba's cache (NUMBA_CACHE_DIR: zero/__pycache__/numba-<digest of the kernels' files> unless set)}."""
    import importlib

    compiled = loaded = 0
    for name in KERNEL_MODULES:
        for f in vars(importlib.import_module(name)).values():
            if isinstance(f, numba.core.registry.CPUDispatcher) and f.__module__ == name:
                compiled += sum(f.stats.cache_misses.values())
                loaded += sum(f.stats.cache_hits.values())
    return {"compiled": compiled, "loaded": loaded}


def warm_up(params, model: str | None = None) -> dict:
    """Compile the engine's kernels for these params on this machine, so that later runs (a shard, a
    benchmark, the GTP engine) load them from numba's cache instead of compiling inside their own time:
    two self-play games at WARM_UP_VISITS visits with the selfplay section's settings (its device,
    evaluation and switches), written to a temp file and dropped, and the leaf-batched engine of `zero gtp`
    and `zero play` as it starts (zero.engine_loader.warm_up_engine: its search, tree reuse and, for Go,
    scoring). On a CPU without bfloat16 instructions the games play in float32: the kernels are the same,
    and bfloat16 there runs emulated, several times slower. Returns {seconds, compiled, loaded}
    (kernel_compiles)."""
    import tempfile

    from zero import inference
    from zero.config import params_from_dict
    from zero.engine import Engine, EngineConfig
    from zero.engine_loader import warm_up_engine
    from zero.network import init_checkpoint
    from zero.selfplay import play_shard

    start = time.perf_counter()
    sp = params.selfplay
    tiny = params_from_dict(params.model_dump(mode="json"), [
        "selfplay.games_per_shard=2", "selfplay.concurrent_games=2", f"selfplay.visits={WARM_UP_VISITS}",
        "selfplay.min_positions_per_shard=0", f"gate.visits={WARM_UP_VISITS}",
        *([f"selfplay.fast_visits={WARM_UP_VISITS // 2}"] if sp.full_search_share < 1 else []),
        *(["selfplay.cpu_bf16=false"] if sp.cpu_bf16 and inference.cpu_has_bfloat16() is False else []),
    ], source="warm-up")
    batched = tiny.model_copy(update={"mcts": tiny.mcts.model_copy(update={"leaf_batch": 2})})
    with tempfile.TemporaryDirectory(prefix="zero-warm-up-") as tmp:
        if model is None:
            model = str(Path(tmp) / "fresh.pt")
            init_checkpoint(tiny, model, 0)
        play_shard(tiny, model, Path(tmp) / "shard.npz", seed=0)
        warm_up_engine(Engine(EngineConfig.from_params(batched), model, seed=0))
    return {"seconds": round(time.perf_counter() - start, 1), **kernel_compiles()}


def measure_single_game(params, model: str | None, leaf_batches: list[int], visits: int = 400, moves: int = 6,
                        threads: int | None = None, seconds_per_move: float | None = None) -> list[dict]:
    """Visits a second of one game's search (the `zero gtp` / `zero play` engine) at each leaf batch.

    For each leaf batch: the engine thinks `visits` visits on the empty board and the `moves - 1` positions
    its own moves lead to, a fresh tree each time (no reuse), after one untimed search that compiles the
    kernels. threads: torch and numba threads (default params.gate.threads); with
    mcts.leaf_batches_in_flight > 1 the engine splits the cores between the batches in flight instead.
    With seconds_per_move (Go), each row also has `time_per_move`: the visits that many seconds of its
    search buy a move (zero.ladder.visits_per_move, what `zero ladder --seconds-per-move` plays at).
    """
    from zero.engine import Engine, EngineConfig
    from zero.games import initial_position

    set_threads(threads or params.gate.threads)
    out = []
    for lb in leaf_batches:
        lp = params.model_copy(update={"mcts": params.mcts.model_copy(update={"leaf_batch": lb})})
        engine = Engine(EngineConfig.from_params(lp, visits=visits), model, seed=0)
        start = initial_position(make_game(params.game))
        engine.analyse(start)  # compiles the kernels
        position, searched, spent = start, 0, 0.0
        for _ in range(moves):
            engine.forget()  # a fresh tree: no reuse from the previous move
            t = time.perf_counter()
            policy, _ = engine.analyse(position)
            spent += time.perf_counter() - t
            searched += visits
            position = position.play(int(np.argmax(policy)))
        flight = lp.mcts.leaf_batches_in_flight if lb > 1 else 1
        row = {"leaf_batch": lb, "in_flight": flight, "visits_per_s": round(searched / spent, 1),
               "visits": visits, "moves": moves, "threads": torch.get_num_threads(),
               "numba_threads": numba.get_num_threads(), "fast_inference": lp.gate.fast_inference,
               "cpu_bf16": lp.gate.cpu_bf16}
        if seconds_per_move is not None:
            from zero.ladder import visits_per_move

            timed = lp.model_copy(update={"gate": lp.gate.model_copy(update={"threads": threads or lp.gate.threads})})
            row["time_per_move"] = visits_per_move(timed, model, seconds_per_move)
        out.append(row)
    return out


# What a controller (GoGui, Sabaki) sends a GTP engine it starts, then a short game's moves and its scoring.
GTP_SETUP = ("name", "version", "list_commands")
GTP_GAME = ("genmove b", "genmove w", "final_score", "genmove b", "final_status_list dead")


def _cpu_seconds(pid: int) -> float | None:
    """User and system CPU seconds of a running process so far (all its threads; Linux /proc), else None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure_gtp_latency(gtp_args: list[str], size: int, komi: float, cold_cache: bool = False,
                        timeout: float = 600.0) -> dict:
    """How soon `zero gtp GTP_ARGS` answers, from its start: a controller's first command (protocol_version,
    sent at once), its set-up (GTP_SETUP, boardsize, komi, clear_board), then a short game (GTP_GAME).

    Each row: the command, `at` (wall seconds since the process started when the answer came), `took` (wall
    seconds since the command was sent), `cpu` (the engine's CPU seconds so far: the figure a loaded machine
    does not change) and the answer. cold_cache: with an empty numba cache (NUMBA_CACHE_DIR in a temp dir), as
    a fresh clone before `zero warmup`. Also the load average before and after.
    """
    import subprocess
    import sys
    import tempfile

    commands = ["protocol_version", *GTP_SETUP, f"boardsize {size}", f"komi {komi:g}", "clear_board", *GTP_GAME]
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="zero-gtp-latency-") as tmp:
        env = {**os.environ, **({"NUMBA_CACHE_DIR": tmp} if cold_cache else {})}
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "zero.cli", "gtp", *gtp_args], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        rows = []
        try:
            for command in commands:
                sent = time.perf_counter()
                proc.stdin.write(command + "\n")
                proc.stdin.flush()
                lines = []
                while (line := proc.stdout.readline()).strip():
                    lines.append(line.rstrip("\n"))
                now = time.perf_counter()
                if not lines or not lines[0].startswith("="):
                    raise RuntimeError(f"zero gtp {' '.join(gtp_args)} answered {command!r} with "
                                       f"{lines or 'nothing'}: {proc.stderr.read() if not lines else ''}".strip())
                if now - start > timeout:
                    raise RuntimeError(f"zero gtp took more than {timeout:g} s")
                rows.append({"command": command, "at": round(now - start, 3), "took": round(now - sent, 3),
                             "cpu": _cpu_seconds(proc.pid), "answer": lines[0][1:].strip()[:40]})
            proc.stdin.write("quit\n")
            proc.stdin.close()
            stderr = proc.stderr.read()
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return {"rows": rows, "notice": "compiling search kernels" in stderr, "cold_cache": cold_cache,
            "gtp_args": gtp_args, "load_before": [round(x, 2) for x in load_before],
            "load_after": [round(x, 2) for x in os.getloadavg()],
            "cores": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()}


def measure_train(params, model: str | None, seconds: float, threads: int | None = None) -> dict:
    """Training positions a second of the params' network (or `model`'s) under its train section
    (zero.train.measure_training), with `threads` torch threads (default train.threads)."""
    from zero.train import measure_training

    threads = threads or params.train.threads
    set_threads(threads)
    game = make_game(params.game)
    net = _network(params, game, torch.device("cpu"), model)
    return {**measure_training(net, params.train, seconds), "threads": threads}


def run_bench(params, seconds: float = 20.0, concurrent: int = 128, visits: int = 100, quiet: bool = False,
              scan_games: list[int] | None = None, scan_threads: list[int] | None = None,
              model: str | None = None, warmup: float | None = None, profile: str | None = None,
              processes: list[int] | None = None) -> dict:
    """Run the benchmark; return one dict of figures and the settings used.

    model: a checkpoint to measure (default: a freshly initialised network of the params' size).
    warmup: seconds of self-play before the steady figures are read (default: a fifth of its time).
    scan_games, scan_threads: also measure self-play at each number of concurrent games and of
        threads (torch and numba), seconds / 4 each, into `scan`.
    profile: a path prefix: also profile self-play (see _profile) for seconds / 4.
    processes: also measure self-play in each number of processes at once, the machine's threads
        split between them, into `processes`.
    """
    say = (lambda *a: None) if quiet else print
    params = params.model_copy(update={
        "selfplay": params.selfplay.model_copy(update={"concurrent_games": concurrent, "visits": visits}),
    })
    sp = params.selfplay
    set_threads(sp.threads)
    game = make_game(params.game)
    device = pick_device(sp.device)
    net = _network(params, game, device, model)
    sym = game.symmetries() if params.mcts.symmetries else None

    rng = np.random.default_rng(0)
    planes = (rng.random((concurrent, game.num_planes, game.height, game.width)) < 0.3).astype(np.float32)
    nn_rate = measure_network(net, planes, seconds * 0.1, device, half=sp.half_precision)
    say(f"network alone, batch {concurrent}: {nn_rate:,.0f} positions/s")
    leaf_rate = measure_leafnet(net, game, sp, device, concurrent, seconds * 0.1)
    say(f"the fast evaluation's whole call (folded, {'a CUDA graph' if device.type == 'cuda' else 'eager'}), "
        f"batch {concurrent}: {leaf_rate:,.0f} positions/s")

    # warm the JIT-compiled kernels on a tiny run, then measure
    play_games(game, _evaluator(net, sym, device, sp, params.mcts), sp.model_copy(update={"concurrent_games": 2}),
               params.mcts.search(4), num_games=2, seed=0, deadline=time.perf_counter() + 1.0)
    evaluator = _evaluator(net, sym, device, sp, params.mcts)
    warm = seconds * 0.1 if warmup is None else warmup
    m = measure_selfplay(game, params, evaluator, seconds * 0.5, warmup=warm)
    sp_positions, sp_evals, busy = m["positions_per_s"], m["evals_per_s"], m["busy_share"]
    say(f"self-play, {concurrent} games x {visits} visits in {sp.search_groups} group(s): "
        f"{sp_positions:,.1f} positions/s, {sp_evals:,.0f} evaluations/s, network busy {busy:.0%}; "
        f"after {warm:.0f} s of warm-up: {m['steady_evals_per_s']:,.0f} evaluations/s, "
        f"busy {m['steady_busy_share']:.0%}")
    search_leaves = measure_selfplay(game, params, BoardOnlyEvaluator(), seconds * 0.15)["evals_per_s"]
    say(f"search without the network: {search_leaves:,.0f} leaves/s (the most the CPU side can feed a network)")

    engine = GoGame(9).random_moves_per_second(seconds=max(1.0, seconds * 0.05))
    say(f"rules engine: {engine['moves_per_s']:,.0f} random legal 9x9 Go moves/s")
    scan = []
    for threads in scan_threads or []:
        for games in scan_games or [concurrent]:
            set_threads(threads)
            scanned = params.model_copy(update={"selfplay": sp.model_copy(update={"concurrent_games": games})})
            evaluator = _evaluator(net, sym, device, sp, params.mcts)
            got = measure_selfplay(game, scanned, evaluator, seconds / 4, warmup=seconds / 16)
            got.pop("steady_seconds", None)
            scan.append({"threads": threads, "numba_threads": numba.get_num_threads(), "concurrent_games": games,
                         **{k: round(v, 3 if "share" in k else 1) for k, v in got.items()}})
            say(f"  {threads:>3} threads, {games:>5} games: {got['evals_per_s']:,.0f} evaluations/s "
                f"({got['steady_evals_per_s']:,.0f} steady), {got['positions_per_s']:,.1f} positions/s, "
                f"network busy {got['busy_share']:.0%} ({got['steady_busy_share']:.0%} steady)")
    multi = []
    cores = usable_cores()
    for n in processes or []:
        got = measure_processes(params, model, n, max(1, cores // n), seconds / 2, seconds / 8)
        multi.append(got)
        say(f"  {n:>3} processes x {got['threads']} threads: {got['evals_per_s']:,.0f} evaluations/s "
            f"({got['steady_evals_per_s']:,.0f} steady), network busy {got['steady_busy_share']:.0%} steady")
    if profile:
        set_threads(sp.threads)
        _profile(game, params, _evaluator(net, sym, device, sp, params.mcts), seconds / 4, profile)
        say(f"profile: {profile}.txt, {profile}.kernels.txt, {profile}.pstats")
    result = {
        "nn_positions_per_s": round(nn_rate, 1),
        "leafnet_positions_per_s": round(leaf_rate, 1),
        "selfplay_positions_per_s": round(sp_positions, 2),
        "selfplay_evals_per_s": round(sp_evals, 1),
        "selfplay_steady_evals_per_s": round(m["steady_evals_per_s"], 1),
        "search_efficiency": round(sp_evals / nn_rate, 3),
        "nn_busy_share": round(busy, 3),
        "nn_steady_busy_share": round(m["steady_busy_share"], 3),
        "search_leaves_per_s": round(search_leaves, 1),
        "engine_moves_per_s": round(engine["moves_per_s"], 0),
        "peak_rss_mb": round(_peak_rss_mb(), 1),
        "settings": {
            "game": params.game.tag,
            "network": params.network.size,
            "model": model,
            "concurrent_games": concurrent,
            "visits": visits,
            "seconds": seconds,
            "warmup_seconds": warm,
            "device": str(device),
            "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
            "search_groups": sp.search_groups,
            "half_precision": sp.half_precision and device.type == "cuda",
            "fast_inference": sp.fast_inference,
            "cpu_bf16": sp.cpu_bf16 and device.type == "cpu",
            "torch_threads": torch.get_num_threads(),
            "numba_threads": numba.get_num_threads(),
            "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}, {cores} cores",
            "torch": torch.__version__,
        },
    }
    if scan:
        result["scan"] = scan
    if multi:
        result["processes"] = multi
    say(f"peak memory: {result['peak_rss_mb']:.0f} MB")
    return result
