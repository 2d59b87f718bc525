"""A self-play shard end to end against the bench's steady rate at the same settings, where the network is
cheap (a fresh b1c16 on the CPU, so the tree and board work and the shard's own costs weigh as on a GPU):

    taskset -c 0 python docs/performance/cpu-2026-11-24/shard-vs-bench.py b1c16 128 256 1
"""

import json
import sys
import tempfile
import time
from pathlib import Path

import torch

from zero.bench import _evaluator, measure_selfplay
from zero.config import load_params
from zero.games import make_game
from zero.network import init_checkpoint, load_checkpoint, set_threads
from zero.selfplay import play_games, play_shard


def main(size: str, concurrent: int, games: int, groups: int) -> None:
    params = load_params("params-gpu.yaml")
    params = params.model_copy(update={
        "network": params.network.model_copy(update={"size": size}),
        "selfplay": params.selfplay.model_copy(update={
            "device": "cpu", "half_precision": False, "threads": 1, "concurrent_games": concurrent,
            "search_groups": groups, "games_per_shard": games})})
    set_threads(1)
    work = Path(tempfile.mkdtemp())
    init_checkpoint(params, work / "net.pt", 0)
    game = make_game(params.game)
    net, _ = load_checkpoint(work / "net.pt", "cpu")
    sp, cpu = params.selfplay, torch.device("cpu")
    play_games(game, _evaluator(net, game.symmetries(), cpu, sp, params.mcts), sp.model_copy(update={"concurrent_games": 2}),
               params.mcts.search(4), num_games=2, seed=0, deadline=time.perf_counter() + 1)  # compiles
    bench = measure_selfplay(game, params, _evaluator(net, game.symmetries(), cpu, sp, params.mcts), 60, warmup=15)
    print("bench", json.dumps({k: round(v, 3) for k, v in bench.items()}), flush=True)
    start = time.perf_counter()
    shard = play_shard(params, work / "net.pt", work / "shard.npz", 7)
    seconds = time.perf_counter() - start
    rate = shard["nn_evals"] / seconds
    print("shard", shard["games"], "games,", shard["nn_evals"], "evaluations in", round(seconds, 1), "s:",
          round(rate, 1), "evaluations/s,", round(rate / bench["steady_evals_per_s"], 3), "of the bench's steady rate")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
