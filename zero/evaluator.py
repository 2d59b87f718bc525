"""Leaf evaluators for the search: the network, and rules-only yardsticks.

An evaluator has `needs_planes` and
`evaluate(game, batch, slots, paths, depth, inputs) -> (priors [L, A], values [L])`
with priors normalised over the legal actions and values from the side to
move at each leaf. Finished leaves (inputs.terminal_value not NaN) are scored
by the search itself; evaluators may return anything for them.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from zero.games.base import LeafInputs


def masked_softmax(logits: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """[L, A] probabilities over the legal actions only (uniform where none is legal)."""
    x = np.where(legal, logits, -np.inf).astype(np.float64)
    top = x.max(axis=1, keepdims=True)
    top[~np.isfinite(top)] = 0.0
    e = np.exp(x - top)
    total = e.sum(axis=1, keepdims=True)
    return np.where(total > 0, e / np.where(total > 0, total, 1), 1.0 / legal.shape[1]).astype(np.float32)


class NetworkEvaluator:
    """Evaluates leaves with a ZeroNet in one batched call, each under a random board symmetry.

    Args:
        net: the network (eval mode).
        symmetries: [S, A] action permutations (game.symmetries()), or None for identity only.
        seed: seeds the choice of symmetry per leaf.
        device: where the network lives.
    """

    needs_planes = True

    def __init__(self, net: torch.nn.Module, symmetries: np.ndarray | None, seed: int = 0,
                 device: torch.device | str = "cpu"):
        self.net = net.eval()
        self.device = torch.device(device)
        self.perms = symmetries
        if symmetries is not None:
            self.inverse = np.argsort(symmetries, axis=1)
        self._rng = np.random.default_rng(seed)
        self.nn_seconds = 0.0  # time spent inside the network, for the benchmark
        self.nn_positions = 0

    def evaluate(self, game, batch, slots, paths, depth, inputs: LeafInputs):
        L, A = inputs.legal.shape
        priors = np.zeros((L, A), np.float32)
        values = np.zeros(L, np.float32)
        live = np.flatnonzero(np.isnan(inputs.terminal_value))
        if len(live) == 0:
            return priors, values
        planes = inputs.planes[live]
        n, c, h, w = planes.shape
        sym = None
        if self.perms is not None and len(self.perms) > 1:
            sym = self._rng.integers(len(self.perms), size=n)
            flat = planes.reshape(n, c, h * w)
            # transformed[..., perm[s, a]] = planes[..., a]  <=>  transformed = planes[..., inverse[s]]
            gather = self.inverse[sym][:, : h * w]
            planes = np.take_along_axis(flat, gather[:, None, :], axis=2).reshape(n, c, h, w)
        logits, value = self.forward(planes)
        if sym is not None:
            logits = np.take_along_axis(logits, self.perms[sym], axis=1)
        priors[live] = masked_softmax(logits, inputs.legal[live])
        values[live] = value
        return priors, values

    def forward(self, planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Raw network call: ([n, A] logits, [n] values) for [n, C, H, W] planes."""
        start = time.perf_counter()
        with torch.inference_mode():
            x = torch.from_numpy(np.ascontiguousarray(planes, dtype=np.float32)).to(self.device)
            logits, value = self.net(x)
            out = logits.float().cpu().numpy(), value.float().cpu().numpy()
        self.nn_seconds += time.perf_counter() - start
        self.nn_positions += len(planes)
        return out


class UniformEvaluator:
    """Equal priors over legal actions and value 0: search guided by the rules alone."""

    needs_planes = False

    def evaluate(self, game, batch, slots, paths, depth, inputs: LeafInputs):
        legal = inputs.legal.astype(np.float32)
        priors = legal / np.maximum(legal.sum(axis=1, keepdims=True), 1.0)
        return priors, np.zeros(len(slots), np.float32)


class RolloutEvaluator(UniformEvaluator):
    """Pure MCTS: the result of one random playout as the value, and equal priors.

    Search it with fpu_value=1.0 (every move tried once before any twice, as in
    UCT). The priors carry a random jitter of at most `jitter` (relative) so that
    the untried moves are tried in random order rather than lowest action first.
    """

    def __init__(self, seed: int = 0, jitter: float = 1e-3):
        self._rng = np.random.default_rng(seed)
        self.jitter = jitter

    def evaluate(self, game, batch, slots, paths, depth, inputs: LeafInputs):
        legal = inputs.legal
        priors = np.where(legal, 1.0 + self.jitter * self._rng.random(legal.shape), 0.0)
        priors = (priors / np.maximum(priors.sum(axis=1, keepdims=True), 1e-9)).astype(np.float32)
        seed = int(self._rng.integers(2**31))
        return priors, game.rollout_values(batch, slots, paths, depth, seed)
