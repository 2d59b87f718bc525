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
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from zero.games.base import square_symmetries
from zero.network import load_checkpoint, pick_device, save_checkpoint, set_threads
from zero.shards import file_sha256, read_shard

METRIC_KEYS = ("loss", "policy_loss", "value_loss", "l2", "entropy", "lr", "positions_per_s")
TIMING_KEYS = ("positions_per_s",)  # metrics that measure the machine, not the network


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

    def __len__(self) -> int:
        return len(self.value)

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
            parts.append((shard.planes[keep], shard.policy[keep], shard.value[keep]))
            used.append({"path": str(path), "sha256": file_sha256(path), "positions": take})
            remaining -= take
        if remaining == 0:
            break
    if not parts:
        raise WindowError(f"the {len(shard_paths)} shard(s) given hold no positions")
    parts.reverse()
    used.reverse()
    return Window(
        planes=np.concatenate([p[0] for p in parts]),
        policy=np.concatenate([p[1] for p in parts]),
        value=np.concatenate([p[2] for p in parts]),
        plane_shape=tuple(plane_shape),
        num_actions=int(num_actions),
        shards=used,
    )


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


def train(
    params,
    init_checkpoint: str | Path,
    shard_paths: list[str | Path],
    out_checkpoint: str | Path,
    seed: int,
    on_step: Callable[[int, dict], None] | None = None,
    meta: dict | None = None,
) -> dict:
    """Train the network of `init_checkpoint` on the shards' window and write `out_checkpoint`.

    Args:
        params: the run's Params; reads `params.train` only.
        shard_paths: self-play shards, oldest first.
        seed: drives minibatch sampling and symmetries (numpy) and torch.
        on_step: called after every step as on_step(step, metrics), step from 0,
            metrics with the keys of METRIC_KEYS (`loss` is the whole objective,
            `l2` its c||theta||^2 part, `entropy` the mean entropy of the
            network's policy on the batch, in nats).
        meta: extra entries for the checkpoint's meta (e.g. the generation).
    Returns:
        {steps, positions, shards, seconds, final}: `final` holds each metric
        averaged over the last ~10% of steps.
    """
    cfg = params.train
    set_threads(cfg.threads)
    device = pick_device(cfg.device)
    started = time.perf_counter()
    net, init_meta = load_checkpoint(init_checkpoint, device)
    nc = net.config
    window = load_window(shard_paths, cfg.max_window_positions, (nc.in_planes, nc.height, nc.width), nc.num_actions)
    perms = square_symmetries(nc.height, nc.width, extra_actions=nc.num_actions - nc.height * nc.width)
    inverses = np.argsort(perms, axis=1)  # [S, A]: inverses[s, perms[s, a]] = a
    rng = np.random.default_rng(seed)
    c = cfg.weight_decay
    history: list[dict] = []

    with _deterministic(device, seed):
        optimizer = torch.optim.SGD(
            net.parameters(), lr=cfg.learning_rate, momentum=cfg.momentum, weight_decay=2 * c
        )
        schedule = torch.optim.lr_scheduler.MultiStepLR(
            optimizer, milestones=list(cfg.lr_milestones), gamma=cfg.lr_gamma
        )
        net.train()
        for step in range(cfg.steps):
            t0 = time.perf_counter()
            index = rng.integers(0, len(window), size=cfg.batch_size)
            sym = rng.integers(0, len(perms), size=cfg.batch_size)
            planes, pi, z = window.batch(index, inverses[sym])
            x = torch.from_numpy(planes).to(device)
            pi_t = torch.from_numpy(pi).to(device)
            z_t = torch.from_numpy(z).to(device)

            logits, v = net(x)
            log_p = F.log_softmax(logits, dim=1)
            policy_loss = -(pi_t * log_p).sum(dim=1).mean()
            value_loss = ((z_t - v) ** 2).mean()
            lr = optimizer.param_groups[0]["lr"]
            optimizer.zero_grad(set_to_none=True)
            (policy_loss + value_loss).backward()  # the L2 term's gradient comes from weight_decay
            optimizer.step()
            schedule.step()

            with torch.no_grad():
                l2 = c * sum((p.detach() ** 2).sum() for p in net.parameters())
                entropy = -(log_p.exp() * log_p).sum(dim=1).mean()
                values = torch.stack([policy_loss.detach(), value_loss.detach(), l2, entropy]).cpu().tolist()
            pl, vl, l2v, ent = values
            metrics = {
                "loss": pl + vl + l2v,
                "policy_loss": pl,
                "value_loss": vl,
                "l2": l2v,
                "entropy": ent,
                "lr": lr,
                "positions_per_s": cfg.batch_size / max(time.perf_counter() - t0, 1e-9),
            }
            history.append(metrics)
            if on_step is not None:
                on_step(step, metrics)

    net.eval()
    tail = history[-max(1, len(history) // 10) :]
    final = {k: float(np.mean([m[k] for m in tail])) for k in METRIC_KEYS}
    summary = {
        "steps": cfg.steps,
        "positions": len(window),
        "shards": len(window.shards),
        "seconds": time.perf_counter() - started,
        "final": final,
    }
    out_meta = {k: init_meta[k] for k in ("game",) if k in init_meta}
    out_meta.update(
        {
            "steps": cfg.steps,
            "seed": seed,
            "positions": len(window),
            "shards": [s["sha256"] for s in window.shards],
            "init_checkpoint_sha256": file_sha256(init_checkpoint),
            # no wall-clock figures: the same weights must give the same file bytes
            "final": {k: v for k, v in final.items() if k not in TIMING_KEYS},
        }
    )
    out_meta.update(meta or {})
    save_checkpoint(net, out_checkpoint, out_meta, checksum=True)
    return summary
