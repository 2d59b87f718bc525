"""A training's data: the window of recent self-play positions, the games held out of it, and how many
steps the window's size allows.

The window is kept bit-packed and unpacked one minibatch at a time, each position under a random one of
the board's symmetries (planes and policy target together). zero.train trains on it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from zero.games.base import square_symmetries
from zero.shards import file_sha256, read_shard


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
    root_value: np.ndarray | None = None  # [N] float32, self-play's root value, side to move's view; NaN: none

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

    def batch(self, index: np.ndarray, inverse: np.ndarray, q_weight: float = 0.0
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The positions at `index`, each under its own symmetry.

        Args:
            index: [B] int, positions of the window.
            inverse: [B, A] int, per position the inverse of its symmetry's
                permutation (`inverse[b, perm[a]] = a`).
            q_weight: the value target is (1 - q_weight) z + q_weight q where the position has a root
                value q (train.value_q_weight); z alone where it has none.
        Returns:
            planes [B, C, H, W] float32, pi [B, A] float32 (rows sum to 1), value target [B] float32.
        """
        c, h, w = self.plane_shape
        bits = np.unpackbits(self.planes[index], axis=1, count=c * h * w).reshape(len(index), c, h * w)
        planes, pi = apply_symmetry(bits, self.policy[index].astype(np.float32), inverse)
        pi /= pi.sum(axis=1, keepdims=True)
        return planes.reshape(-1, c, h, w).astype(np.float32), pi, self.value_target(index, q_weight)

    def value_target(self, index: np.ndarray, q_weight: float = 0.0) -> np.ndarray:
        """[B] float32: z, mixed with the root value q as (1 - q_weight) z + q_weight q where there is one."""
        z = self.value[index].astype(np.float32)
        if q_weight <= 0.0 or self.root_value is None:
            return z
        q = self.root_value[index]
        return np.where(np.isnan(q), z, (1.0 - q_weight) * z + q_weight * q).astype(np.float32)


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
    b, c, hw = planes.shape
    # torch's gather with a broadcast index: the same values as np.take_along_axis, about 7x faster on
    # a minibatch of planes (which dominated a training step's batch assembly); the index a copy, since
    # `inverse` may be a read-only broadcast (the identity of an evaluation's batches)
    index = torch.from_numpy(np.array(inverse[:, None, :hw], dtype=np.int64)).expand(b, c, hw)
    moved_planes = torch.gather(torch.from_numpy(np.ascontiguousarray(planes)), 2, index).numpy()
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
            q = None if shard.root_value is None else shard.root_value[keep]
            parts.append((shard.planes[keep], shard.policy[keep], shard.value[keep], shard.game_index[keep], aux, q))
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
        aux = {name: np.concatenate([f[i] for f in filled])
               for i, name in enumerate(("ownership", "score", "aux_mask"))}
    if any(p[5] is not None for p in parts):
        aux["root_value"] = np.concatenate([np.full(len(p[2]), np.nan, np.float32) if p[5] is None else p[5]
                                            for p in parts])
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


@dataclass
class TrainData:
    """What a training draws from: the window, the positions it trains on and those it holds out, and its
    steps (`reuse`'s figures, the cap on draws per position applied)."""

    window: Window
    use_aux: bool  # the network has the auxiliary heads and some position carries their targets
    inverses: np.ndarray  # [S, A] int, inverses[s, perms[s, a]] = a for each board symmetry s
    held: np.ndarray  # [N] bool, the held-out positions (`holdout_positions`)
    held_index: np.ndarray  # [H] int, their indices (empty without train.holdout_share)
    pool: np.ndarray | None  # [N - H] int, the positions trained on; None: the whole window
    newest_shards: int  # the last shards that are the newest generation
    figures: dict  # `reuse`'s
    q_weight: float = 0.0  # train.value_q_weight: the training draws' value targets mix in the root value
    # [T] float64, the running sum of the training positions' draw weights (`weigh`); None: uniform draws
    cumulative_weights: np.ndarray | None = None

    @property
    def steps(self) -> int:
        return self.figures["steps"]

    def training_positions(self) -> np.ndarray:
        """[T] int: the window's positions a training draws from (all but the held-out ones), in order."""
        return np.arange(len(self.window)) if self.pool is None else self.pool

    def weigh(self, weights: np.ndarray) -> None:
        """Draw each training position (`training_positions`, in order) in proportion to its weight from now on."""
        weights = np.asarray(weights, dtype=np.float64)
        if weights.shape != (len(self.training_positions()),) or not np.isfinite(weights).all() \
                or (weights < 0).any() or weights.sum() <= 0:
            raise WindowError(f"draw weights: {len(self.training_positions())} finite non-negative weights with a "
                              f"positive sum are needed, not {weights.shape[0]} summing to {weights.sum():g}")
        self.cumulative_weights = np.cumsum(weights)

    def draw(self, rng: np.random.Generator, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
        """A minibatch: the positions' indices [B], uniform over the training positions (or in proportion to
        their weights, `weigh`), and each one's symmetry as the inverse of its permutation [B, A]."""
        if self.cumulative_weights is not None:
            total = self.cumulative_weights[-1]
            picked = np.searchsorted(self.cumulative_weights, rng.random(batch_size) * total, side="right")
            index = self.training_positions()[np.minimum(picked, len(self.cumulative_weights) - 1)]
        elif self.pool is None:
            index = rng.integers(0, len(self.window), size=batch_size)
        else:
            index = self.pool[rng.integers(0, len(self.pool), size=batch_size)]
        sym = rng.integers(0, len(self.inverses), size=batch_size)
        return index, self.inverses[sym]


def symmetry_inverses(net_config) -> np.ndarray:
    """[S, A] int: for each board symmetry s of the network config's board, inverses[s, perms[s, a]] = a."""
    nc = net_config
    return np.argsort(square_symmetries(nc.height, nc.width, extra_actions=nc.num_actions - nc.height * nc.width),
                      axis=1)


def training_data(shard_paths: list[str | Path], cfg, net_config, newest_shards: int) -> TrainData:
    """The window of `shard_paths` (oldest first) for a network of `net_config` under the train section
    `cfg`, its held-out games and its steps; `newest_shards` is clipped to the shards the window used."""
    nc = net_config
    window = load_window(shard_paths, cfg.max_window_positions, (nc.in_planes, nc.height, nc.width), nc.num_actions)
    newest_shards = max(1, min(newest_shards, len(window.shards)))
    held = holdout_positions(window, newest_shards, cfg.holdout_share)
    held_index = np.flatnonzero(held)
    newest = window.shard_number() >= len(window.shards) - newest_shards
    figures = reuse(cfg.steps, cfg.batch_size, len(window) - len(held_index), int((newest & ~held).sum()),
                    cfg.max_samples_per_position)
    return TrainData(window=window, use_aux=bool(nc.aux_heads and window.aux_mask is not None),
                     inverses=symmetry_inverses(nc), held=held, held_index=held_index,
                     pool=np.flatnonzero(~held) if held.any() else None, newest_shards=newest_shards,
                     figures=figures, q_weight=cfg.value_q_weight)
