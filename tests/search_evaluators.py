"""Evaluators for the search tests: no network, values that follow the leaf's path, and network calls that
come back late. A test module imports what it needs: `from search_evaluators import PathValues, Deferred`."""

import numpy as np

from zero.evaluator import UniformEvaluator


class CountingUniform(UniformEvaluator):
    """Uniform priors, value 0, and the number of leaves of each call."""

    def __init__(self):
        self.calls = []

    def evaluate(self, game, batch, slots, paths, depth, inputs):
        self.calls.append(len(slots))
        return super().evaluate(game, batch, slots, paths, depth, inputs)


class PathValues(UniformEvaluator):
    """Uniform priors and a value that follows the leaf's path, cos(1.7·move + depth_weight·depth)·0.8, `move`
    the path's first move (`by="first"`: the trees under different root moves differ) or the leaf's own
    (`by="last"`: nodes of the same move agree wherever they are, so their errors differ from their parents')."""

    def __init__(self, by: str = "first", depth_weight: float = 0.9):
        if by not in ("first", "last"):
            raise ValueError(f"by is 'first' or 'last', not {by!r}")
        self.by, self.depth_weight = by, depth_weight

    def evaluate(self, game, batch, slots, paths, depth, inputs):
        priors, _ = super().evaluate(game, batch, slots, paths, depth, inputs)
        paths, depth = np.asarray(paths), np.asarray(depth)
        move = paths[:, 0] if self.by == "first" else paths[np.arange(len(slots)), np.maximum(depth - 1, 0)]
        return priors, np.cos(move * 1.7 + depth * self.depth_weight).astype(np.float32) * 0.8


class Deferred(PathValues):
    """PathValues whose `submit` keeps the leaves and whose `collect` evaluates them: a batch's values reach the
    tree only after the next batch was selected, as with a network call running on another core. Counts the
    batches and leaves waiting at once."""

    def __init__(self, by: str = "first", depth_weight: float = 0.9):
        super().__init__(by, depth_weight)
        self.waiting, self.most_waiting, self.most_leaves = [], 0, 0

    def submit(self, game, batch, slots, paths, depth, inputs):
        self.waiting.append(len(slots))
        self.most_waiting = max(self.most_waiting, len(self.waiting))
        self.most_leaves = max(self.most_leaves, sum(self.waiting))
        return game, batch, slots, np.array(paths), np.array(depth), inputs

    def collect(self, handle):
        self.waiting.pop(0)
        return self.evaluate(*handle)


class DeferredUniform(Deferred):
    """Deferred, with uniform priors and value 0."""

    def evaluate(self, game, batch, slots, paths, depth, inputs):
        return UniformEvaluator.evaluate(self, game, batch, slots, paths, depth, inputs)
