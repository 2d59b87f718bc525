"""Leaf evaluators for the search: the network, and rules-only yardsticks.

An evaluator has `needs_planes` and
`evaluate(game, batch, slots, paths, depth, inputs) -> (priors [L, A], values [L])`
with priors normalised over the legal actions and values from the side to
move at each leaf. Finished leaves (inputs.terminal_value not NaN) are scored
by the search itself; evaluators may return anything for them.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future

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
        half: on CUDA, run the network in bfloat16 (autocast); no effect elsewhere.
        fast: evaluate through zero.inference.LeafNet (batch norm folded; symmetries and softmax on the
            device; on CUDA, CUDA graphs over batch-size buckets). Changes the arithmetic slightly, so it
            is the params switch `fast_inference`; off keeps the eager path and its bytes.
        cpu_bf16: on the CPU, the fast path's network in bfloat16 (the params switch `cpu_bf16`; needs
            `fast`); no effect on CUDA, where `half` decides.
        cpu_workers: on the CPU, with more than 1, `submit` hands the network call to one of this many
            threads and returns at once, so that many calls run at the same time, each on its own core
            while torch's threads are split between them (mcts.leaf_batches_in_flight); the search
            selects its next leaves meanwhile. Torch releases the interpreter lock inside its kernels.

    `evaluate` is `collect(submit(...))`. On CUDA, `submit` copies the planes into a pinned
    buffer, starts the transfer and the network on the device's stream and returns at once;
    `collect` waits for that call's results. Several calls may be in flight (zero.mcts's
    Search.run_groups keeps one per group of games), so the search of one group overlaps the
    network call of another. On the CPU, `submit` runs the network before it returns (without cpu_workers).
    `nn_seconds` is the time the network was busy: measured on the device between CUDA events,
    or as the wall time of each call on the CPU.
    """

    needs_planes = True
    RING = 17  # pinned buffer sets on CUDA: more than the calls ever in flight at once (search_groups <= 16)

    def __init__(self, net: torch.nn.Module, symmetries: np.ndarray | None, seed: int = 0,
                 device: torch.device | str = "cpu", half: bool = False, fast: bool = False, cpu_workers: int = 0,
                 cpu_bf16: bool = False):
        self.net = net.eval()
        self.device = torch.device(device)
        self.cuda = self.device.type == "cuda"
        if cpu_bf16 and not fast and not self.cuda:
            raise ValueError("cpu_bf16 needs the fast evaluation (fast_inference): the eager path is float32")
        self.half = half if self.cuda else cpu_bf16
        self.value_width = getattr(net, "value_width", 1)  # 2: the utility and the value head (ScoreUtilityNet)
        self.perms = symmetries
        if symmetries is not None:
            self.inverse = np.argsort(symmetries, axis=1)
        self._rng = np.random.default_rng(seed)
        self.nn_seconds = 0.0  # time the network was busy, for the benchmark
        self.nn_positions = 0
        self.nn_calls = 0
        self._counting = threading.Lock()
        self._pinned: list | None = None
        self.leaf_net = None
        if fast:
            from zero.inference import LeafNet

            self.leaf_net = LeafNet(net, symmetries, self.device, half=self.half)
            self._fast_pinned: list | None = None
        self._workers = None
        if cpu_workers > 1 and not self.cuda:
            from concurrent.futures import ThreadPoolExecutor

            self._workers = ThreadPoolExecutor(cpu_workers, thread_name_prefix="zero-network")

    def evaluate(self, game, batch, slots, paths, depth, inputs: LeafInputs):
        return self.collect(self.submit(game, batch, slots, paths, depth, inputs))

    def submit(self, game, batch, slots, paths, depth, inputs: LeafInputs):
        """Start evaluating the leaves; returns a handle for `collect`."""
        live = np.flatnonzero(np.isnan(inputs.terminal_value))
        if len(live) == 0:
            return inputs.legal, live, None, None
        if self.leaf_net is not None:
            sym = self._draw_symmetries(len(live))  # drawn here, in order, whichever thread runs the call
            if self._workers is not None:
                return inputs.legal, live, None, self._workers.submit(self._launch_fast, inputs, live, sym)
            return inputs.legal, live, None, self._launch_fast(inputs, live, sym)
        planes = inputs.planes[live]
        n, c, h, w = planes.shape
        sym = self._draw_symmetries(n)
        if sym is not None:
            flat = planes.reshape(n, c, h * w)
            # transformed[..., perm[s, a]] = planes[..., a]  <=>  transformed = planes[..., inverse[s]]
            gather = self.inverse[sym][:, : h * w]
            planes = np.take_along_axis(flat, gather[:, None, :], axis=2).reshape(n, c, h, w)
        if self._workers is not None:
            return inputs.legal, live, sym, self._workers.submit(self._launch, planes)
        return inputs.legal, live, sym, self._launch(planes)

    def collect(self, handle) -> tuple[np.ndarray, np.ndarray]:
        """(priors [L, A] over the legal actions, values [L], or [L, 2] from a network that returns its value
        head beside a score utility: zero.mcts.split_values) of a `submit`ted batch of leaves."""
        legal, live, sym, call = handle
        if isinstance(call, Future):
            call = call.result()
        L, A = legal.shape
        priors = np.zeros((L, A), np.float32)
        values = np.zeros(self._value_shape(L), np.float32)
        if call is None:
            return priors, values
        if self.leaf_net is not None:
            priors[live], values[live] = self._wait_fast(call)
            return priors, values
        logits, value = self._wait(call)
        if sym is not None:
            logits = np.take_along_axis(logits, self.perms[sym], axis=1)
        priors[live] = masked_softmax(logits, legal[live])
        values[live] = value
        return priors, values

    def forward(self, planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Raw network call: ([n, A] logits, [n] values) for [n, C, H, W] planes."""
        return self._wait(self._launch(planes))

    def _count(self, n: int, seconds: float = 0.0) -> None:
        with self._counting:  # calls may run on several threads (cpu_workers)
            self.nn_positions += n
            self.nn_calls += 1 if n else 0
            self.nn_seconds += seconds

    def _launch(self, planes: np.ndarray):
        planes = np.ascontiguousarray(planes, dtype=np.float32)
        n = len(planes)
        if not self.cuda:
            start = time.perf_counter()
            with torch.inference_mode():
                logits, value = self.net(torch.from_numpy(planes).to(self.device))
                out = logits.float().numpy(), value.float().numpy()
            self._count(n, time.perf_counter() - start)
            return out
        self._count(n)
        x_host, logits_host, value_host = self._buffers(planes.shape)
        x_host[:n].numpy()[...] = planes
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with torch.inference_mode():
            x = x_host[:n].to(self.device, non_blocking=True)
            begin.record()
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=self.half):
                logits, value = self.net(x)
            end.record()
            logits_host[:n].copy_(logits.float(), non_blocking=True)
            value_host[:n].copy_(value.float().reshape(value_host[:n].shape), non_blocking=True)
        done = torch.cuda.Event()
        done.record()
        return done, begin, end, logits_host[:n], value_host[:n]

    def _wait(self, call):
        if not self.cuda:
            return call
        done, begin, end, logits, value = call
        done.synchronize()  # this call's events have completed (a later call's may not have)
        self._count(0, begin.elapsed_time(end) / 1000.0)
        return logits.numpy().copy(), value.numpy().copy()

    def _draw_symmetries(self, n: int) -> np.ndarray | None:
        return self._rng.integers(len(self.perms), size=n) if self.perms is not None and len(self.perms) > 1 else None

    def _launch_fast(self, inputs: LeafInputs, live: np.ndarray, sym: np.ndarray | None):
        """Start LeafNet on the live leaves: their planes, symmetries and legal masks go to the device."""
        n = len(live)
        every = n == len(inputs.terminal_value)
        planes = inputs.planes if every else inputs.planes[live]
        legal = inputs.legal if every else inputs.legal[live]
        net = self.leaf_net
        if not self.cuda:
            start = time.perf_counter()
            priors, value = net(torch.from_numpy(np.ascontiguousarray(planes)),
                                None if sym is None else torch.from_numpy(sym), torch.from_numpy(legal))
            out = priors.numpy(), value.numpy()
            self._count(n, time.perf_counter() - start)
            return out
        self._count(n)
        x_host, sym_host, legal_host, priors_host, value_host = self._fast_buffers(planes.shape, legal.shape[1])
        np.copyto(x_host[:n].numpy(), planes, casting="unsafe")  # the planes are 0/1: uint8 moves a quarter
        legal_host[:n].numpy()[...] = legal
        if sym is not None:
            sym_host[:n].numpy()[...] = sym
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with torch.inference_mode():
            x = x_host[:n].to(self.device, non_blocking=True)
            mask = legal_host[:n].to(self.device, non_blocking=True)
            s = None if sym is None else sym_host[:n].to(self.device, non_blocking=True)
            begin.record()
            priors, value = net(x, s, mask)
            end.record()
            priors_host[:n].copy_(priors, non_blocking=True)
            value_host[:n].copy_(value, non_blocking=True)
        done = torch.cuda.Event()
        done.record()
        return done, begin, end, priors_host[:n], value_host[:n]

    def _wait_fast(self, call) -> tuple[np.ndarray, np.ndarray]:
        if not self.cuda:
            return call
        done, begin, end, priors, value = call
        done.synchronize()
        self._count(0, begin.elapsed_time(end) / 1000.0)
        return priors.numpy(), value.numpy()

    def _fast_buffers(self, shape: tuple, A: int) -> tuple:
        """The next set of pinned host buffers of the fast path (planes as uint8, symmetries, legal masks,
        priors, values), grown to `shape`'s batch."""
        n = shape[0]
        if self._fast_pinned is None or self._fast_pinned[0][0].shape[0] < n:
            cap = max(n, 64)
            self._fast_pinned = [(torch.empty((cap, *shape[1:]), dtype=torch.uint8, pin_memory=True),
                                  torch.zeros(cap, dtype=torch.int64, pin_memory=True),
                                  torch.empty((cap, A), dtype=torch.bool, pin_memory=True),
                                  torch.empty((cap, A), pin_memory=True), torch.empty(self._value_shape(cap),
                                                                                      pin_memory=True))
                                 for _ in range(self.RING)]
            self._fast_slot = 0
        self._fast_slot = (self._fast_slot + 1) % self.RING
        return self._fast_pinned[self._fast_slot]

    def _buffers(self, shape: tuple) -> tuple:
        """The next set of pinned host buffers (input planes, logits, values), grown to `shape`'s batch."""
        n, c, h, w = shape
        if self._pinned is None or self._pinned[0][0].shape[0] < n:
            cap = max(n, 64)
            with torch.inference_mode():
                probe = self.net(torch.zeros((1, c, h, w), device=self.device))[0]
            A = probe.shape[1]
            self._pinned = [(torch.empty((cap, c, h, w), pin_memory=True), torch.empty((cap, A), pin_memory=True),
                             torch.empty(self._value_shape(cap), pin_memory=True)) for _ in range(self.RING)]
            self._slot = 0
        self._slot = (self._slot + 1) % self.RING
        return self._pinned[self._slot]

    def _value_shape(self, n: int) -> tuple:
        return (n, self.value_width) if self.value_width > 1 else (n,)


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
