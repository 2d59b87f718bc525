"""Subtree value bias correction (KataGo): the network's value at a new leaf corrected by what deeper search
found at other nodes of the same local pattern.

Each node of a search tree falls in a bucket of its slot's bias table, keyed by the local pattern the move
into it made (the game's `pattern_keys`: in Go the mover, the last two moves' points and the 5x5 window
around the last one with its stones in atari). A node with children has an observed error: its network
value less the mean of the values backed up through it, both from its side to move's view. A bucket's bias
is its nodes' mean error, each weighted by (values backed up through it) ** exponent. A new leaf in a bucket
enters the tree with its network value less factor times that bias: where the network keeps misjudging one
tactic (it looks good, and every deeper search of it finds otherwise), the next time the tactic turns up in
the tree its first value is already corrected.

The table holds only the errors of the nodes in the tree: a node's contribution is replaced each time a
value passes through it, and a re-rooted tree keeps the contributions of the nodes it keeps (zero.tree).
A leaf's value is corrected once, when it is expanded; the values already backed up stay as they were
(KataGo also corrects the node's own value as later visits pass through it). Virtual visits do not enter the
errors: they count in a node's statistics only as the tree's edges, not in `Tree.bias_node`.
"""

from __future__ import annotations

import numba
import numpy as np

NO_KEY = -1  # a leaf without a bucket (a game start in Gomoku, a finished game)
MIN_WEIGHT = 0.001  # a bucket with less weight than this has no bias yet
_KEY_BITS = 62


def buckets_for(max_nodes: int) -> int:
    """Buckets of a slot's table for trees of max_nodes nodes: a power of two, at least four per node, so two
    of a tree's patterns rarely share one."""
    return max(256, 1 << int(np.ceil(np.log2(4 * max_nodes))))


def bucket_of(keys: np.ndarray, buckets: int) -> np.ndarray:
    """[L] int64: the bucket of each game pattern key (`Game.pattern_keys`), NO_KEY where the key is negative."""
    keys = np.asarray(keys, np.int64)
    return np.where(keys >= 0, keys % buckets, NO_KEY)


_RNG = np.random.default_rng(0x5B1A5)
_CELL = _RNG.integers(0, 1 << _KEY_BITS, size=(25, 8), dtype=np.int64)  # per window cell and cell code
_POINT = _RNG.integers(0, 1 << _KEY_BITS, size=(3, 1024), dtype=np.int64)  # last move, the one before, colour


def window_keys(codes: np.ndarray, centre: np.ndarray, extra: np.ndarray) -> np.ndarray:
    """[L] int64 keys, each from the 5x5 window of `codes` ([L, H, W] int: 0 empty, 1 the side to move's stone,
    2 the other side's, 4 more for a stone in atari) around `centre` ([L] flat point, -1: no window), off-board
    cells counted as a code of their own (3), and the `extra` columns ([L, 3] int: the last move's point, the one before's, the
    side to move; each taken modulo 1,024) hashed in."""
    L, H, W = codes.shape
    padded = np.full((L, H + 4, W + 4), 3, np.int64)  # 3 with no stone bit: off the board
    padded[:, 2:H + 2, 2:W + 2] = codes
    has = centre >= 0
    r = np.where(has, centre // W, 0)
    c = np.where(has, centre % W, 0)
    span = np.arange(5)
    window = padded[np.arange(L)[:, None, None], r[:, None, None] + span[None, :, None],
                    c[:, None, None] + span[None, None, :]].reshape(L, 25)
    window = np.where(has[:, None], window, 0)
    cell = np.bitwise_xor.reduce(_CELL[np.arange(25)[None, :], window], axis=1)
    cell = np.where(has, cell, 0)
    point = np.bitwise_xor.reduce(_POINT[np.arange(3)[None, :], np.asarray(extra) % _POINT.shape[1]], axis=1)
    return cell ^ point


@numba.njit(cache=True)
def leaf_correction(tree, b, k, factor):
    """What a new leaf of bucket k in slot b's tree takes off its network value: factor times the bucket's
    mean weighted error, 0 while the bucket is empty or for NO_KEY."""
    if k < 0:
        return 0.0
    weight = tree.bias_table[b, k, 1]
    if weight <= MIN_WEIGHT:
        return 0.0
    return factor * tree.bias_table[b, k, 0] / weight


@numba.njit(cache=True)
def observe(tree, b, node, v, exponent):
    """A value v (node's side to move's view) backed up through `node`: its statistics, its observed error
    (network value less the mean of what came back through it) and its share of its bucket, replaced."""
    k = tree.bias_key[b, node]
    if k < 0:
        return
    s = tree.bias_node[b, node]
    s[0] += 1.0
    s[1] += v
    error = tree.value[b, node] - s[1] / s[0]
    weight = s[0] ** exponent
    tree.bias_table[b, k, 0] += error * weight - s[3]
    tree.bias_table[b, k, 1] += weight - s[2]
    s[2] = weight
    s[3] = error * weight


@numba.njit(cache=True)
def enter(tree, b, node, k):
    """A node expanded into bucket k (NO_KEY: none), with nothing backed up through it yet."""
    tree.bias_key[b, node] = k
    tree.bias_node[b, node, :] = 0.0
