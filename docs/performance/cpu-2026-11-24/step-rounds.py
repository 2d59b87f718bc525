"""Network call sizes and tree-and-board leaves/s of self-play at each selfplay.step_rounds, with a stand-in
network (zero.bench.BoardOnlyEvaluator), params-gpu.yaml's search on the CPU, one thread:

    taskset -c 0 python docs/performance/cpu-2026-11-24/step-rounds.py 256 0,1,2,4
"""

import sys

import numpy as np

from zero.bench import BoardOnlyEvaluator, measure_selfplay
from zero.config import load_params
from zero.games import make_game
from zero.network import set_threads


class Counting(BoardOnlyEvaluator):
    """The stand-in network, keeping the number of leaves of each call."""

    def __init__(self):
        super().__init__()
        self.calls: list[int] = []

    def evaluate(self, game, batch, slots, *rest):
        self.calls.append(len(slots))
        return super().evaluate(game, batch, slots, *rest)


def main(concurrent: int, steps: list[int]) -> None:
    set_threads(1)
    for step in steps:
        params = load_params("params-gpu.yaml")
        params = params.model_copy(update={"selfplay": params.selfplay.model_copy(update={
            "device": "cpu", "threads": 1, "concurrent_games": concurrent, "search_groups": 1, "step_rounds": step})})
        game = make_game(params.game)
        measure_selfplay(game, params, Counting(), 3)  # compiles the kernels
        evaluator = Counting()
        m = measure_selfplay(game, params, evaluator, 15)
        print(concurrent, step, "leaves/s", round(m["evals_per_s"]), "positions/s", round(m["positions_per_s"]),
              "mean leaves per call", round(float(np.mean(evaluator.calls)), 1), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), [int(x) for x in sys.argv[2].split(",")])
