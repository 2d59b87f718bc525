"""Training: fit the network to a window of recent self-play positions.

Each step draws a minibatch uniformly from the window, maps every position
through a random one of the board's symmetries (planes and policy target
together) and takes one SGD step on AlphaGo Zero's loss

    l = (z - v)^2 - pi^T log p + c ||theta||^2

with momentum and a step-wise learning-rate schedule. The c ||theta||^2 term
is the optimizer's weight decay: `params.train.weight_decay` is the paper's c,
and since d/dtheta c||theta||^2 = 2 c theta, SGD gets `weight_decay = 2c`. It
applies to every parameter (batch-norm scales and biases too), as in the paper.

The window is kept bit-packed and unpacked one minibatch at a time. The same
seed and inputs give the same weights on the same machine.

Switches of a faster recipe, all off by default (params.train):

- auxiliary targets (with network.aux_heads): KataGo's ownership and score
  losses (Wu 2019, "Accelerating Self-Play Learning in Go"), on the positions
  whose shard carries them (`aux_losses`);
- `max_samples_per_position`: fewer steps when a position would be drawn more
  often than that over its life in the window (`reuse`);
- `holdout_share`: a share of the newest generation's games, chosen by game,
  kept out of training and scored at intervals (`holdout_positions`);
- `mixed_precision`: bf16 autocast on CUDA (no effect on the CPU);
- `cpu_bf16`: bf16 autocast on the CPU (no effect on CUDA): about 1.7 times the positions a second on a
  CPU with bfloat16 instructions; the weights, their updates and the losses stay float32.

Every run reports how often positions are reused (`summary["reuse"]`).

A training that stops (a killed worker, a lost machine) goes on where it was: about once a minute it
keeps its state (weights, momentum, the sampler's and torch's random state, the metrics so far) in
`<out>.resume` beside the checkpoint it will write, and a training of the same inputs started again
continues from there to the same weights, byte for byte, as one that never stopped (`TrainState`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from zero.fileio import atomic_write
from zero.games.base import square_symmetries
from zero.network import grow_network, load_checkpoint, pick_device, save_checkpoint, set_threads
from zero.shards import file_sha256, read_shard

METRIC_KEYS = ("loss", "policy_loss", "value_loss", "l2", "entropy", "grad_norm", "lr", "positions_per_s")
AUX_METRIC_KEYS = ("ownership_loss", "score_loss")  # with network.aux_heads
HOLDOUT_PREFIX = "holdout_"  # holdout_policy_loss, holdout_value_loss, ...: with train.holdout_share
VALUE_STD_POSITIONS = 2048  # positions the value head's final spread is measured on without held-out games
TIMING_KEYS = ("positions_per_s",)  # metrics that measure the machine, not the network
HOLDOUT_EVALS = 10  # times the held-out loss is measured over a training (the last step always)
SCORE_HUBER_DELTA = 12.0  # points: the score loss is quadratic within it, linear beyond (as KataGo's)
RESUME_SUFFIX = ".resume"  # beside the checkpoint a training writes: its state while it runs
RESUME_EVERY_S = 60.0  # seconds of training between two saves of that state
RESUME_FORMAT = "zero-train-resume-1"

log = logging.getLogger(__name__)


class WindowError(ValueError):
    """Training data that cannot be used: no positions, or a shard shaped for another network."""


@dataclass
class Window:
    """The training positions, oldest first. N positions, A actions, planes [C, H, W]."""

    planes: np.ndarray  # [N, ceil(C*H*W/8)] uint8, bit-packed
    policy: np.ndarray  # [N, A] float16, search visit distribution
    value: np.ndarray  # [N] int8, z from the side to move's view
    plane_shape: tuple[int, int, int]
    num_actions: int
    shards: list[dict] = field(default_factory=list)  # {path, sha256, positions} of each shard used, oldest first
    game_index: np.ndarray | None = None  # [N] int32, the position's game within its shard
    ownership: np.ndarray | None = None  # [N, H*W] int8, side to move's view; None: no shard has aux targets
    score: np.ndarray | None = None  # [N] float32, side to move's view
    aux_mask: np.ndarray | None = None  # [N] bool, the position carries ownership and score

    def __len__(self) -> int:
        return len(self.value)

    def shard_number(self) -> np.ndarray:
        """[N] int, which of `shards` each position comes from."""
        return np.repeat(np.arange(len(self.shards)), [s["positions"] for s in self.shards])

    def aux_batch(self, index: np.ndarray, inverse: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Ownership [B, H*W] float32 (moved by the same symmetries as `batch`), score [B] float32, mask [B] bool."""
        hw = self.ownership.shape[1]
        own = np.take_along_axis(self.ownership[index], inverse[:, :hw], axis=1).astype(np.float32)
        return own, self.score[index], self.aux_mask[index]

    def batch(self, index: np.ndarray, inverse: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The positions at `index`, each under its own symmetry.

        Args:
            index: [B] int, positions of the window.
            inverse: [B, A] int, per position the inverse of its symmetry's
                permutation (`inverse[b, perm[a]] = a`).
        Returns:
            planes [B, C, H, W] float32, pi [B, A] float32 (rows sum to 1), z [B] float32.
        """
        c, h, w = self.plane_shape
        bits = np.unpackbits(self.planes[index], axis=1, count=c * h * w).reshape(len(index), c, h * w)
        planes, pi = apply_symmetry(bits, self.policy[index].astype(np.float32), inverse)
        pi /= pi.sum(axis=1, keepdims=True)
        return planes.reshape(-1, c, h, w).astype(np.float32), pi, self.value[index].astype(np.float32)


def apply_symmetry(planes: np.ndarray, policy: np.ndarray, inverse: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Move planes and policy through per-position board symmetries.

    With perm the symmetry's permutation (`square_symmetries`) and inverse its
    inverse, the result has out[..., perm[a]] = in[..., a] for the board points
    of the planes and for every action of the policy (pass maps to itself).

    Args:
        planes: [B, C, H*W] flattened input planes.
        policy: [B, A] policy targets.
        inverse: [B, A] int, inverse permutation per position.
    """
    hw = planes.shape[-1]
    moved_planes = np.take_along_axis(planes, inverse[:, None, :hw], axis=2)
    moved_policy = np.take_along_axis(policy, inverse, axis=1)
    return moved_planes, moved_policy


def load_window(
    shard_paths: list[str | Path],
    max_positions: int,
    plane_shape: tuple[int, int, int] | None = None,
    num_actions: int | None = None,
) -> Window:
    """The most recent `max_positions` positions of the shards (given oldest first).

    Shards are read newest first; once the window is full the older ones are
    not read at all (and are not listed in `Window.shards`). Every shard read
    must have the same plane shape and action count, and those of the network
    when `plane_shape` / `num_actions` are given; WindowError names the shard.
    """
    if not shard_paths:
        raise WindowError("no shards given to train on")
    parts, used = [], []
    remaining = max_positions
    for path in reversed([Path(p) for p in shard_paths]):
        shard = read_shard(path)
        shape, actions = tuple(shard.plane_shape), int(shard.header["num_actions"])
        if plane_shape is None:
            plane_shape, num_actions = shape, actions
        if shape != tuple(plane_shape) or actions != num_actions:
            raise WindowError(
                f"{path}: shard has planes {shape} and {actions} actions, "
                f"but the network takes planes {tuple(plane_shape)} and {num_actions} actions"
            )
        take = min(len(shard.value), remaining)
        if take:
            keep = slice(len(shard.value) - take, None)  # the latest positions of a partly used shard
            aux = (shard.ownership[keep], shard.score[keep], shard.aux_mask[keep]) if shard.has_aux else None
            parts.append((shard.planes[keep], shard.policy[keep], shard.value[keep], shard.game_index[keep], aux))
            used.append({"path": str(path), "sha256": file_sha256(path), "positions": take})
            remaining -= take
        if remaining == 0:
            break
    if not parts:
        raise WindowError(f"the {len(shard_paths)} shard(s) given hold no positions")
    parts.reverse()
    used.reverse()
    aux = {}
    if any(p[4] is not None for p in parts):
        hw = plane_shape[1] * plane_shape[2]
        filled = [p[4] or (np.zeros((len(p[2]), hw), np.int8), np.zeros(len(p[2]), np.float32),
                           np.zeros(len(p[2]), np.bool_)) for p in parts]
        aux = {name: np.concatenate([f[i] for f in filled]) for i, name in enumerate(("ownership", "score", "aux_mask"))}
    return Window(
        planes=np.concatenate([p[0] for p in parts]),
        policy=np.concatenate([p[1] for p in parts]),
        value=np.concatenate([p[2] for p in parts]),
        plane_shape=tuple(plane_shape),
        num_actions=int(num_actions),
        shards=used,
        game_index=np.concatenate([p[3] for p in parts]),
        **aux,
    )


def holdout_positions(window: Window, newest_shards: int, share: float) -> np.ndarray:
    """[N] bool: the positions of the games held out of training.

    The games are those of the window's newest `newest_shards` shards (the
    newest generation); `round(share * games)` of them are held out (at least
    one when share > 0, never all), chosen by a hash of (shard sha256, game
    index): the same data always gives the same split, whatever the seed, and
    a game is never split between training and held-out positions.
    """
    held = np.zeros(len(window), np.bool_)
    if share <= 0:
        return held
    shard_no = window.shard_number()
    first = max(0, len(window.shards) - newest_shards)
    keys = {}
    for k in range(first, len(window.shards)):
        sha = window.shards[k]["sha256"]
        for g in np.unique(window.game_index[shard_no == k]):
            keys[(k, int(g))] = hashlib.sha256(f"{sha}:{int(g)}".encode()).hexdigest()
    if len(keys) < 2:
        return held
    count = min(len(keys) - 1, max(1, round(share * len(keys))))
    chosen = sorted(keys, key=keys.get)[:count]
    for k, g in chosen:
        held |= (shard_no == k) & (window.game_index == g)
    return held


def reuse(steps: int, batch_size: int, train_positions: int, new_positions: int,
          max_samples_per_position: float | None = None) -> dict:
    """How often positions are drawn, and the steps that keep it within the cap.

    Each step draws `batch_size` positions uniformly from the `train_positions`
    of the window. `samples_per_position` is the mean number of draws of a
    position in this training; `lifetime_samples_per_position` the mean over a
    position's whole life in the window, in the steady state where every
    generation trains as long and adds `new_positions`: each generation's draws
    are shared, over the generations it stays, by the positions it added, so
    the life figure is draws per training / new positions. With the cap, steps
    are cut to floor(cap * new_positions / batch_size) (at least 1) when above it.

    Returns:
        {steps, planned_steps, samples_per_position, lifetime_samples_per_position, train_positions,
        new_positions}, the figures for the steps actually run.
    """
    run = steps
    if max_samples_per_position is not None:
        run = max(1, min(steps, int(max_samples_per_position * new_positions // batch_size)))
    draws = run * batch_size
    return {
        "steps": run,
        "planned_steps": steps,
        "samples_per_position": draws / max(train_positions, 1),
        "lifetime_samples_per_position": draws / max(new_positions, 1),
        "train_positions": int(train_positions),
        "new_positions": int(new_positions),
    }


def aux_losses(ownership: torch.Tensor, score: torch.Tensor, own_target: torch.Tensor, score_target: torch.Tensor,
               mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """KataGo's auxiliary losses, averaged over the positions that carry targets (Wu 2019, section 3.4).

    Ownership: the cross-entropy between (1 + target) / 2 and (1 + ownership) / 2
    at each point, averaged over the points. Score: a Huber loss in points
    (quadratic within SCORE_HUBER_DELTA). Positions with mask False contribute
    nothing; with none in the batch both losses are 0.

    Args:
        ownership: [B, H*W] predicted, in (-1, 1); score: [B] predicted, in points.
        own_target: [B, H*W] in {-1, 0, 1}; score_target: [B]; mask: [B] bool.
    """
    m = mask.to(ownership.dtype)
    count = m.sum().clamp(min=1)
    p = ((1 + ownership) / 2).clamp(1e-6, 1 - 1e-6)
    t = (1 + own_target) / 2
    own_ce = -(t * torch.log(p) + (1 - t) * torch.log1p(-p)).mean(dim=1)
    huber = F.huber_loss(score, score_target, reduction="none", delta=SCORE_HUBER_DELTA)
    return (own_ce * m).sum() / count, (huber * m).sum() / count


@contextlib.contextmanager
def _deterministic(device: torch.device, seed: int):
    """Seed torch and pin cuDNN to deterministic kernels, restoring global state afterwards.

    (On a GPU, bitwise repeatability across processes may also need
    CUBLAS_WORKSPACE_CONFIG=:4096:8 set before CUDA starts.)
    """
    cudnn = torch.backends.cudnn
    saved = (cudnn.deterministic, cudnn.benchmark)
    devices = [device.index or 0] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        cudnn.deterministic, cudnn.benchmark = True, False
        try:
            yield
        finally:
            cudnn.deterministic, cudnn.benchmark = saved


def _bf16(cfg, device: torch.device) -> bool:
    """Whether training runs under bf16 autocast: mixed_precision on CUDA, cpu_bf16 on the CPU."""
    return cfg.mixed_precision if device.type == "cuda" else cfg.cpu_bf16


def _autocast(device: torch.device, on: bool):
    """bf16 autocast on the device when `on` (no loss scaling is needed for bf16); nothing otherwise."""
    if on and device.type in ("cuda", "cpu"):
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def _step_losses(net, x, pi, z, aux, device, amp: bool) -> dict:
    """The losses of one batch: policy, value, and with `aux` = (ownership, score, mask) the auxiliary ones.

    The network runs under autocast when `amp`; the losses are taken in float32.
    """
    with _autocast(device, amp):
        out = net.forward_aux(x) if aux is not None else net(x)
    logits, v = out[0].float(), out[1].float()
    log_p = F.log_softmax(logits, dim=1)
    losses = {
        "policy_loss": -(pi * log_p).sum(dim=1).mean(),
        "value_loss": ((z - v) ** 2).mean(),
        "log_p": log_p,
        "value": v.detach(),
    }
    if aux is not None:
        own_loss, score_loss = aux_losses(out[2].float(), out[3].float(), *aux)
        losses.update(ownership_loss=own_loss, score_loss=score_loss)
    return losses


def _layout(cfg) -> torch.memory_format:
    """The memory layout of the network and its batches: channels-last under `channels_last`."""
    return torch.channels_last if cfg.channels_last else torch.contiguous_format


def _optimizer(net, cfg) -> torch.optim.SGD:
    """SGD with momentum; the L2 term c||theta||^2 as weight_decay = 2c (see the module's docstring)."""
    return torch.optim.SGD(net.parameters(), lr=cfg.learning_rate, momentum=cfg.momentum,
                           weight_decay=2 * cfg.weight_decay)


def _objective(losses: dict, cfg) -> torch.Tensor:
    """What a step minimises (the L2 term aside): policy and value losses, plus the weighted auxiliary
    losses when the batch had their targets."""
    objective = losses["policy_loss"] + losses["value_loss"]
    if "ownership_loss" in losses:
        objective = objective + cfg.ownership_weight * losses["ownership_loss"] + cfg.score_weight * losses["score_loss"]
    return objective


def measure_training(net, cfg, seconds: float, seed: int = 0) -> dict:
    """Training positions a second of `net` under the train section `cfg` (its batch size, mixed precision,
    channels_last, device; torch threads as set by the caller): SGD steps of train's loss, the auxiliary
    losses too when the network has their heads, on random positions and targets. The network is trained
    in place (pass a copy). One warm-up step is not timed."""
    device = pick_device(cfg.device)
    amp = _bf16(cfg, device)
    layout = _layout(cfg)
    net = net.to(device).to(memory_format=layout).train()
    nc, b = net.config, cfg.batch_size
    rng = np.random.default_rng(seed)
    planes = (rng.random((b, nc.in_planes, nc.height, nc.width)) < 0.3).astype(np.float32)
    pi = rng.dirichlet(np.ones(nc.num_actions), size=b).astype(np.float32)
    z = rng.choice([-1.0, 1.0], size=b).astype(np.float32)
    x, pi_t, z_t = _tensors(device, planes, pi, z)
    x = x.contiguous(memory_format=layout)
    aux = None
    if nc.aux_heads:
        own = rng.choice([-1.0, 0.0, 1.0], size=(b, nc.height * nc.width)).astype(np.float32)
        aux = _tensors(device, own, rng.normal(0, 10, b).astype(np.float32), np.ones(b, np.bool_))
    optimizer = _optimizer(net, cfg)
    steps, started = -1, 0.0
    while steps < 0 or time.perf_counter() - started < seconds:
        objective = _objective(_step_losses(net, x, pi_t, z_t, aux, device, amp), cfg)
        optimizer.zero_grad(set_to_none=True)
        objective.backward()
        optimizer.step()
        float(objective.detach())  # waits for the device
        steps += 1
        if steps == 0:
            started = time.perf_counter()
    elapsed = time.perf_counter() - started
    return {"positions_per_s": round(steps * b / elapsed, 1), "steps": steps, "seconds": round(elapsed, 2),
            "batch_size": b, "channels_last": layout is torch.channels_last,
            "mixed_precision": amp and device.type == "cuda", "cpu_bf16": amp and device.type == "cpu",
            "device": str(device)}


def _tensors(device, *arrays) -> list[torch.Tensor]:
    return [torch.from_numpy(np.ascontiguousarray(a)).to(device) for a in arrays]


def evaluate(net, window: Window, index: np.ndarray, batch_size: int, device: torch.device,
             use_aux: bool, amp: bool = False,
             layout: torch.memory_format = torch.contiguous_format) -> dict:
    """Mean losses of the network (eval mode, no symmetry) on the window's positions `index`, its
    batches in the network's memory `layout`.

    Returns {policy_loss, value_loss, value_std} and, with `use_aux`, {ownership_loss, score_loss}
    averaged over the positions that carry targets (left out when none does: a held-out set of resigned
    games only). `value_std` is the standard deviation of the
    value head's outputs over the positions: 0 for a dead value head, which says the same of every
    position (its one-channel convolution's ReLU never firing).
    """
    identity = np.arange(window.num_actions)
    totals: dict[str, float] = {}
    v_sum = v_sq = 0.0
    aux_count = 0
    was_training = net.training
    net.eval()
    with torch.no_grad():
        for start in range(0, len(index), batch_size):
            part = index[start : start + batch_size]
            inverse = np.broadcast_to(identity, (len(part), len(identity)))
            planes, pi, z = window.batch(part, inverse)
            aux = _tensors(device, *window.aux_batch(part, inverse)) if use_aux else None
            x, pi_t, z_t = _tensors(device, planes, pi, z)
            losses = _step_losses(net, x.contiguous(memory_format=layout), pi_t, z_t, aux, device, amp)
            v = losses["value"].double()
            v_sum, v_sq = v_sum + float(v.sum()), v_sq + float((v * v).sum())
            for k in ("policy_loss", "value_loss"):
                totals[k] = totals.get(k, 0.0) + float(losses[k]) * len(part)
            if use_aux:
                n = int(aux[2].sum())
                aux_count += n
                for k in AUX_METRIC_KEYS:
                    totals[k] = totals.get(k, 0.0) + float(losses[k]) * n
    net.train(was_training)
    n = max(len(index), 1)
    result = {k: totals[k] / n for k in ("policy_loss", "value_loss")}
    result["value_std"] = math.sqrt(max(v_sq / n - (v_sum / n) ** 2, 0.0))
    if use_aux and aux_count:
        result.update({k: totals[k] / aux_count for k in AUX_METRIC_KEYS})
    return result


def _trunk(config) -> tuple[int, int, int]:
    """A NetConfig's trunk: blocks, filters, pooled channels."""
    return config.blocks, config.filters, config.pooling_channels


def _trunk_of(network) -> tuple[int, int, int]:
    """The trunk a params network section asks for, as `_trunk` reads a NetConfig."""
    return network.blocks, network.filters, network.pooling_channels if network.global_pooling else 0


class TrainState:
    """A training's state between two steps, kept in `<out>.resume` so that a training stopped on the way
    goes on from its last save (every `every_s` seconds) to the weights it would have reached.

    `key` names what the training depends on (the starting checkpoint, the shards, the seed, the
    settings, the network, the device); a state kept for anything else, or a file that does not read
    (torn, or not a zero training state), is logged and the training starts over. Written atomically,
    read with weights_only.
    """

    def __init__(self, out_checkpoint: str | Path, key: dict, every_s: float = RESUME_EVERY_S):
        self.path = Path(str(out_checkpoint) + RESUME_SUFFIX)
        self.key = json.dumps(key, sort_keys=True)
        self.every_s = every_s
        self.saved_at = time.monotonic()

    def load(self) -> dict | None:
        """{step, net, optimizer, rng, torch_rng, cuda_rng, history, holdout} kept for this key, or None."""
        if not self.path.is_file():
            return None
        try:
            blob = torch.load(self.path, map_location="cpu", weights_only=True)
            if not isinstance(blob, dict) or blob.get("format") != RESUME_FORMAT:
                raise ValueError(f"no {RESUME_FORMAT!r} format tag")
            if blob["key"] != self.key:
                log.warning("%s: kept by a training of other inputs; this one starts at step 0", self.path)
                return None
            metrics = json.loads(blob["metrics"])
            return {**blob, "rng": json.loads(blob["rng"]), "history": metrics["history"],
                    "holdout": metrics["holdout"]}
        except Exception as e:  # a torn file or not ours: it only saves time, so start over
            log.warning("%s: unreadable (%s: %s); training starts at step 0", self.path, type(e).__name__,
                        str(e)[:200])
            return None

    def due(self) -> bool:
        return time.monotonic() - self.saved_at >= self.every_s

    def save(self, step: int, net, optimizer, rng: np.random.Generator, history: list, holdout: dict,
             device: torch.device) -> None:
        """Keep the state before step `step` (the steps before it done)."""
        blob = {
            "format": RESUME_FORMAT, "key": self.key, "step": step,
            "net": {k: v.detach().cpu().clone() for k, v in net.state_dict().items()},
            "optimizer": optimizer.state_dict(),
            "rng": json.dumps(rng.bit_generator.state),
            "torch_rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state(device) if device.type == "cuda" else None,
            "metrics": json.dumps({"history": history, "holdout": holdout}),
        }
        with atomic_write(self.path) as f:
            torch.save(blob, f)
        self.saved_at = time.monotonic()

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)


def train(
    params,
    init_checkpoint: str | Path,
    shard_paths: list[str | Path],
    out_checkpoint: str | Path,
    seed: int,
    on_step: Callable[[int, dict], None] | None = None,
    meta: dict | None = None,
    newest_shards: int | None = None,
    network=None,
    resume_every_s: float = RESUME_EVERY_S,
    replay_kept: bool = False,
) -> dict:
    """Train the network of `init_checkpoint` on the shards' window and write `out_checkpoint`.

    Args:
        params: the run's Params; reads `params.train` (and `pipeline.selfplay_shards`
            when `newest_shards` is not given).
        shard_paths: self-play shards, oldest first.
        seed: drives minibatch sampling and symmetries (numpy) and torch.
        on_step: called after every step as on_step(step, metrics), step from 0,
            metrics with the keys of METRIC_KEYS (`loss` is the whole objective,
            `l2` its c||theta||^2 part, `entropy` the mean entropy of the
            network's policy on the batch, in nats, `grad_norm` the norm of the
            loss's gradient before train.max_grad_norm clips it); with network.aux_heads also
            AUX_METRIC_KEYS (their weighted sum is part of `loss`); with
            train.holdout_share, at HOLDOUT_EVALS evenly spaced steps (the last
            included), the held-out losses as holdout_<name>.
        meta: extra entries for the checkpoint's meta (e.g. the generation).
        newest_shards: how many of the last shards are the newest generation
            (for the held-out games and the lifetime reuse figure); default
            `params.pipeline.selfplay_shards`, at most all of them.
        network: a NetworkConfig section whose trunk is larger than the checkpoint's: the network is
            grown into it first (zero.network.grow_network, seeded by `seed`); None or the same trunk
            trains the checkpoint's network as it is.
        resume_every_s: seconds between two saves of the training's state in `<out_checkpoint>.resume`
            (TrainState), from which a training of the same inputs started again goes on; the file is
            removed once the checkpoint is written.
        replay_kept: a training that resumes first passes the kept steps' metrics to on_step (for a caller
            that keeps its own record of every step; not for one whose record has them from the first run).
    Returns:
        {steps, positions, shards, seconds, final, reuse} and, with
        train.holdout_share, holdout: `final` holds each metric averaged over
        the last ~10% of steps (and the last held-out losses) and `value_std`, the
        spread of the value head's outputs at the end (see `evaluate`); `reuse` is
        `reuse(...)`'s figures; `holdout` has the held-out games, positions
        and losses at the end; `grown_from`, the size the network was grown
        from, when it was; `resumed_at_step`, the step a kept state let it start at, when one did.
    """
    cfg = params.train
    set_threads(cfg.threads)
    device = pick_device(cfg.device)
    amp = _bf16(cfg, device)
    started = time.perf_counter()
    net, init_meta = load_checkpoint(init_checkpoint, device)
    grown_from = None
    if network is not None and _trunk(net.config) != _trunk_of(network):
        grown_from = f"b{net.config.blocks}c{net.config.filters}"
        net = grow_network(net.cpu(), network.blocks, network.filters, network.pooling_channels, seed).to(device)
    layout = _layout(cfg)
    net = net.to(memory_format=layout)
    nc = net.config
    window = load_window(shard_paths, cfg.max_window_positions, (nc.in_planes, nc.height, nc.width), nc.num_actions)
    use_aux = nc.aux_heads and window.aux_mask is not None
    perms = square_symmetries(nc.height, nc.width, extra_actions=nc.num_actions - nc.height * nc.width)
    inverses = np.argsort(perms, axis=1)  # [S, A]: inverses[s, perms[s, a]] = a

    if newest_shards is None:
        newest_shards = params.pipeline.selfplay_shards
    newest_shards = max(1, min(newest_shards, len(window.shards)))
    held = holdout_positions(window, newest_shards, cfg.holdout_share)
    pool = np.flatnonzero(~held) if held.any() else None  # training positions; None: all of the window
    held_index = np.flatnonzero(held)
    newest = window.shard_number() >= len(window.shards) - newest_shards
    figures = reuse(cfg.steps, cfg.batch_size, len(window) - len(held_index), int((newest & ~held).sum()),
                    cfg.max_samples_per_position)
    steps = figures["steps"]
    milestones = [round(m * steps / cfg.steps) for m in cfg.lr_milestones]  # unchanged unless the cap cut steps
    eval_every = max(1, steps // HOLDOUT_EVALS)

    rng = np.random.default_rng(seed)
    c = cfg.weight_decay
    history: list[dict] = []
    holdout: dict = {}
    init_sha256 = file_sha256(init_checkpoint)
    state = TrainState(out_checkpoint, {
        "init_checkpoint": init_sha256, "shards": [s["sha256"] for s in window.shards],
        "seed": seed, "steps": steps, "newest_shards": newest_shards, "train": cfg.model_dump(mode="json"),
        "network": list(_trunk(nc)), "device": device.type, "bf16": amp,
    }, resume_every_s)
    first = 0

    with _deterministic(device, seed):
        optimizer = _optimizer(net, cfg)
        schedule = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=milestones, gamma=cfg.lr_gamma)
        kept = state.load()
        if kept:
            first, history, holdout = kept["step"], kept["history"], kept["holdout"]
            net.load_state_dict(kept["net"])
            optimizer.load_state_dict(kept["optimizer"])  # with the learning rate the schedule had reached
            schedule.last_epoch = first
            rng.bit_generator.state = kept["rng"]
            torch.set_rng_state(kept["torch_rng"])
            if kept["cuda_rng"] is not None:
                torch.cuda.set_rng_state(kept["cuda_rng"], device)
            log.info("%s: training resumes at step %d of %d", state.path, first, steps)
            for i, metrics in enumerate(history if replay_kept and on_step is not None else ()):
                on_step(i, dict(metrics))
        net.train()
        for step in range(first, steps):
            t0 = time.perf_counter()
            if pool is None:
                index = rng.integers(0, len(window), size=cfg.batch_size)
            else:
                index = pool[rng.integers(0, len(pool), size=cfg.batch_size)]
            sym = rng.integers(0, len(perms), size=cfg.batch_size)
            planes, pi, z = window.batch(index, inverses[sym])
            aux = _tensors(device, *window.aux_batch(index, inverses[sym])) if use_aux else None
            x, pi_t, z_t = _tensors(device, planes, pi, z)
            x = x.contiguous(memory_format=layout)

            losses = _step_losses(net, x, pi_t, z_t, aux, device, amp)
            objective = _objective(losses, cfg)
            lr = optimizer.param_groups[0]["lr"]
            optimizer.zero_grad(set_to_none=True)
            objective.backward()  # the L2 term's gradient comes from weight_decay
            grad_norm = torch.nn.utils.get_total_norm([p.grad for p in net.parameters() if p.grad is not None])
            if cfg.max_grad_norm:
                torch.nn.utils.clip_grads_with_norm_(net.parameters(), cfg.max_grad_norm, grad_norm)
            optimizer.step()
            schedule.step()

            with torch.no_grad():
                log_p = losses["log_p"]
                l2 = c * sum((p.detach() ** 2).sum() for p in net.parameters())
                entropy = -(log_p.exp() * log_p).sum(dim=1).mean()
                names = ["policy_loss", "value_loss", *(AUX_METRIC_KEYS if use_aux else ())]
                values = torch.stack([losses[k].detach() for k in names] + [l2, entropy, grad_norm]).cpu().tolist()
            found = dict(zip(names, values[:-3]))
            l2v, ent, gnorm = values[-3:]
            metrics = {
                "loss": found["policy_loss"] + found["value_loss"] + l2v,
                "policy_loss": found["policy_loss"],
                "value_loss": found["value_loss"],
                "l2": l2v,
                "entropy": ent,
                "grad_norm": gnorm,
                "lr": lr,
                "positions_per_s": cfg.batch_size / max(time.perf_counter() - t0, 1e-9),
            }
            if use_aux:
                metrics["loss"] += cfg.ownership_weight * found["ownership_loss"] + cfg.score_weight * found["score_loss"]
                metrics.update({k: found[k] for k in AUX_METRIC_KEYS})
            if len(held_index) and ((step + 1) % eval_every == 0 or step == steps - 1):
                holdout = evaluate(net, window, held_index, cfg.batch_size, device, use_aux, amp, layout)
                metrics.update({HOLDOUT_PREFIX + k: v for k, v in holdout.items()})
            history.append(metrics)
            if on_step is not None:
                on_step(step, dict(metrics))  # a copy: history keeps its own
            if step + 1 < steps and state.due():
                state.save(step + 1, net, optimizer, rng, history, holdout, device)

    if holdout:  # the value head's spread at the end: on the held-out positions, or else on a sample
        spread = holdout["value_std"]
    else:
        sample = np.sort(np.random.default_rng(seed).permutation(len(window))[:VALUE_STD_POSITIONS])
        spread = evaluate(net, window, sample, cfg.batch_size, device, False, amp, layout)["value_std"]
    net = net.eval().to(memory_format=torch.contiguous_format)  # the checkpoint's bytes do not depend on it
    tail = history[-max(1, len(history) // 10) :]
    keys = METRIC_KEYS + (AUX_METRIC_KEYS if use_aux else ())
    final = {k: float(np.mean([m[k] for m in tail])) for k in keys}
    final.update({HOLDOUT_PREFIX + k: v for k, v in holdout.items()})
    final["value_std"] = spread
    summary = {
        "steps": steps,
        "positions": len(window),
        "shards": len(window.shards),
        "seconds": time.perf_counter() - started,
        "final": final,
        "reuse": figures,
    }
    if len(held_index):
        games = len({(int(k), int(g)) for k, g in zip(window.shard_number()[held], window.game_index[held])})
        summary["holdout"] = {"games": games, "positions": len(held_index), **holdout}
    if grown_from:
        summary["grown_from"] = grown_from
    if first:
        summary["resumed_at_step"] = first
    out_meta = {k: init_meta[k] for k in ("game",) if k in init_meta}
    out_meta.update(
        {
            "steps": steps,
            "seed": seed,
            "positions": len(window),
            "shards": [s["sha256"] for s in window.shards],
            "init_checkpoint_sha256": init_sha256,
            **({"grown_from": grown_from} if grown_from else {}),
            # no wall-clock figures: the same weights must give the same file bytes
            "final": {k: v for k, v in final.items() if k not in TIMING_KEYS},
        }
    )
    out_meta.update(meta or {})
    save_checkpoint(net, out_checkpoint, out_meta, checksum=True)
    state.clear()
    return summary
