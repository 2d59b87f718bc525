"""`zero bench`: speed and memory of the network, the rules engine and self-play.

Figures: the network alone at the self-play batch size, self-play with the
batched search (positions and network evaluations per second, and the share
of self-play time the network is busy: search_efficiency), random legal Go
moves per second on 9x9, and the process's peak resident memory.
"""

from __future__ import annotations

import platform
import resource
import time

import numpy as np
import torch

from zero.evaluator import NetworkEvaluator
from zero.games import make_game
from zero.games.go import GoGame
from zero.network import init_network, pick_device
from zero.selfplay import play_games


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def measure_network(net, planes: np.ndarray, seconds: float, device) -> float:
    """Positions per second of the network alone on `planes` (one batch, repeated)."""
    x = torch.from_numpy(planes).to(device)
    with torch.inference_mode():
        for _ in range(2):
            net(x)
        n, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            logits, value = net(x)
            logits.cpu(), value.cpu()
            n += len(planes)
    return n / (time.perf_counter() - start)


def run_bench(params, seconds: float = 20.0, concurrent: int = 128, visits: int = 100, quiet: bool = False) -> dict:
    """Run the benchmark; return one dict of figures and the settings used."""
    say = (lambda *a: None) if quiet else print
    params = params.model_copy(update={
        "selfplay": params.selfplay.model_copy(update={"concurrent_games": concurrent, "visits": visits}),
    })
    game = make_game(params.game)
    device = pick_device(params.selfplay.device)
    net = init_network(params, game, seed=0).to(device)
    sym = game.symmetries() if params.mcts.symmetries else None

    rng = np.random.default_rng(0)
    planes = (rng.random((concurrent, game.num_planes, game.height, game.width)) < 0.3).astype(np.float32)
    nn_rate = measure_network(net, planes, seconds * 0.25, device)
    say(f"network alone, batch {concurrent}: {nn_rate:,.0f} positions/s")

    # warm the JIT-compiled kernels on a tiny run, then measure
    play_games(game, NetworkEvaluator(net, sym, 0, device), params.selfplay.model_copy(update={"concurrent_games": 2}),
               params.mcts.search(4), num_games=2, seed=0, deadline=time.perf_counter() + 1.0)
    evaluator = NetworkEvaluator(net, sym, 0, device)
    start = time.perf_counter()
    records = play_games(game, evaluator, params.selfplay, params.mcts.search(visits), num_games=10**6, seed=1,
                         deadline=start + seconds * 0.6)
    elapsed = time.perf_counter() - start
    positions = sum(len(r.moves) for r in records)
    sp_positions = positions / elapsed
    sp_evals = evaluator.nn_positions / elapsed
    say(f"self-play, {concurrent} games x {visits} visits: {sp_positions:,.1f} positions/s, "
        f"{sp_evals:,.0f} evaluations/s, network busy {evaluator.nn_seconds / elapsed:.0%}")

    engine = GoGame(9).random_moves_per_second(seconds=max(1.0, seconds * 0.1))
    say(f"rules engine: {engine['moves_per_s']:,.0f} random legal 9x9 Go moves/s")
    result = {
        "nn_positions_per_s": round(nn_rate, 1),
        "selfplay_positions_per_s": round(sp_positions, 2),
        "selfplay_evals_per_s": round(sp_evals, 1),
        "search_efficiency": round(sp_evals / nn_rate, 3),
        "nn_busy_share": round(evaluator.nn_seconds / elapsed, 3),
        "engine_moves_per_s": round(engine["moves_per_s"], 0),
        "peak_rss_mb": round(_peak_rss_mb(), 1),
        "settings": {
            "game": params.game.tag,
            "network": params.network.size,
            "concurrent_games": concurrent,
            "visits": visits,
            "seconds": seconds,
            "device": str(device),
            "torch_threads": torch.get_num_threads(),
            "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}",
        },
    }
    say(f"peak memory: {result['peak_rss_mb']:.0f} MB")
    return result
