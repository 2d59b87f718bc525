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

import platform
import resource
import time

import numba
import numpy as np
import torch

from zero.evaluator import NetworkEvaluator, UniformEvaluator
from zero.games import make_game
from zero.games.go import GoGame
from zero.network import init_network, pick_device, set_threads
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


def measure_selfplay(game, params, evaluator, seconds: float) -> dict:
    """Self-play with `evaluator` for `seconds`: positions and evaluations per second, network busy share."""
    start = time.perf_counter()
    records = play_games(game, evaluator, params.selfplay, params.mcts.search(params.selfplay.visits),
                         num_games=10**6, seed=1, deadline=start + seconds)
    elapsed = time.perf_counter() - start
    positions = sum(len(r.moves) for r in records)
    evals = getattr(evaluator, "nn_positions", 0)
    return {"positions_per_s": positions / elapsed, "evals_per_s": evals / elapsed,
            "busy_share": getattr(evaluator, "nn_seconds", 0.0) / elapsed}


def run_bench(params, seconds: float = 20.0, concurrent: int = 128, visits: int = 100, quiet: bool = False,
              scan_games: list[int] | None = None, scan_threads: list[int] | None = None) -> dict:
    """Run the benchmark; return one dict of figures and the settings used.

    scan_games, scan_threads: also measure self-play at each number of concurrent games and of
    threads (torch and numba), seconds / 4 each, into `scan`.
    """
    say = (lambda *a: None) if quiet else print
    params = params.model_copy(update={
        "selfplay": params.selfplay.model_copy(update={"concurrent_games": concurrent, "visits": visits}),
    })
    sp = params.selfplay
    game = make_game(params.game)
    device = pick_device(sp.device)
    net = init_network(params, game, seed=0).to(device)
    sym = game.symmetries() if params.mcts.symmetries else None

    rng = np.random.default_rng(0)
    planes = (rng.random((concurrent, game.num_planes, game.height, game.width)) < 0.3).astype(np.float32)
    nn_rate = measure_network(net, planes, seconds * 0.2, device, half=sp.half_precision)
    say(f"network alone, batch {concurrent}: {nn_rate:,.0f} positions/s")

    # warm the JIT-compiled kernels on a tiny run, then measure
    play_games(game, NetworkEvaluator(net, sym, 0, device), sp.model_copy(update={"concurrent_games": 2}),
               params.mcts.search(4), num_games=2, seed=0, deadline=time.perf_counter() + 1.0)
    evaluator = NetworkEvaluator(net, sym, 0, device, half=sp.half_precision)
    m = measure_selfplay(game, params, evaluator, seconds * 0.5)
    sp_positions, sp_evals, busy = m["positions_per_s"], m["evals_per_s"], m["busy_share"]
    say(f"self-play, {concurrent} games x {visits} visits in {sp.search_groups} group(s): "
        f"{sp_positions:,.1f} positions/s, {sp_evals:,.0f} evaluations/s, network busy {busy:.0%}")
    search_leaves = measure_selfplay(game, params, BoardOnlyEvaluator(), seconds * 0.15)["evals_per_s"]
    say(f"search without the network: {search_leaves:,.0f} leaves/s (the most the CPU side can feed a network)")

    engine = GoGame(9).random_moves_per_second(seconds=max(1.0, seconds * 0.1))
    say(f"rules engine: {engine['moves_per_s']:,.0f} random legal 9x9 Go moves/s")
    scan = []
    for threads in scan_threads or []:
        for games in scan_games or [concurrent]:
            set_threads(threads)
            scanned = params.model_copy(update={"selfplay": sp.model_copy(update={"concurrent_games": games})})
            got = measure_selfplay(game, scanned, NetworkEvaluator(net, sym, 0, device, half=sp.half_precision),
                                   seconds / 4)
            scan.append({"threads": threads, "numba_threads": numba.get_num_threads(), "concurrent_games": games,
                         **{k: round(v, 3 if k == "busy_share" else 1) for k, v in got.items()}})
            say(f"  {threads:>3} threads, {games:>5} games: {got['evals_per_s']:,.0f} evaluations/s, "
                f"{got['positions_per_s']:,.1f} positions/s, network busy {got['busy_share']:.0%}")
    result = {
        "nn_positions_per_s": round(nn_rate, 1),
        "selfplay_positions_per_s": round(sp_positions, 2),
        "selfplay_evals_per_s": round(sp_evals, 1),
        "search_efficiency": round(sp_evals / nn_rate, 3),
        "nn_busy_share": round(busy, 3),
        "search_leaves_per_s": round(search_leaves, 1),
        "engine_moves_per_s": round(engine["moves_per_s"], 0),
        "peak_rss_mb": round(_peak_rss_mb(), 1),
        "settings": {
            "game": params.game.tag,
            "network": params.network.size,
            "concurrent_games": concurrent,
            "visits": visits,
            "seconds": seconds,
            "device": str(device),
            "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
            "search_groups": sp.search_groups,
            "half_precision": sp.half_precision and device.type == "cuda",
            "torch_threads": torch.get_num_threads(),
            "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}",
        },
    }
    if scan:
        result["scan"] = scan
    say(f"peak memory: {result['peak_rss_mb']:.0f} MB")
    return result
