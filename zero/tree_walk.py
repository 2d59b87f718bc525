"""The walk down one slot's search tree: PUCT at every node, the root's forced playouts, a new leaf allocated.

c_puct is the paper's constant unless a `stdev` triple (scale, prior, prior weight) with a scale above 0 is
given: then each node's c_puct grows or shrinks with the spread of the values backed up through it (KataGo's
dynamic variance-scaled c_puct, `explore_factor`).

These kernels work on one slot b of a zero.tree.Tree, which they take whole. zero.mcts's batched search
and zero.virtual_loss's leaf batches both walk with them, so each of those modules imports this one and
neither imports the other.
"""

from __future__ import annotations

import numba
import numpy as np

NO_STDEV = (0.0, 0.4, 2.0)  # (scale, prior, prior weight) of explore_factor: scale 0, the constant c_puct


@numba.njit(cache=True)
def explore_factor(tree, b, node, stdev):
    """What c_puct is multiplied by at `node`: 1 + scale * (sigma / prior - 1), at least 0 (KataGo's dynamic
    variance-scaled c_puct), for `stdev` = (scale, prior, prior weight); 1 when scale is 0.

    sigma is the standard deviation of the node's values, its own network value and every value backed up
    through its edges (W, W2, the chooser's view), shrunk toward `prior` as if `prior weight` more values
    had that spread around the same mean. Where deeper search keeps finding other values than the network
    (a tactic that works or fails), the node explores more; where they agree, less.
    """
    scale, prior, weight = stdev
    if scale == 0.0:
        return 1.0
    N, W, W2 = tree.N, tree.W, tree.W2
    v = np.float64(tree.value[b, node])
    n, s, s2 = 1.0, v, v * v
    for a in range(N.shape[2]):
        n += N[b, node, a]
        s += W[b, node, a]
        s2 += W2[b, node, a]
    if n <= 1.0:
        return 1.0
    mean = s / n
    mean2 = mean * mean
    sq = max(s2 / n, mean2)
    var = ((mean2 + prior * prior) * weight + sq * n) / (weight + n - 1.0) - mean2
    return max(0.0, 1.0 + scale * (np.sqrt(max(var, 0.0)) / prior - 1.0))


@numba.njit(cache=True)
def puct_select(tree, b, node, c_puct, fpu_reduction, fpu_value=np.nan, stdev=NO_STDEV):
    """The edge of `node` that maximises Q + U; ties go to the lowest action.

    Unvisited edges take Q = fpu_value, or value[b, node] - fpu_reduction when fpu_value is NaN. `stdev`:
    c_puct scaled by `explore_factor`.
    """
    N, W, P = tree.N, tree.W, tree.P
    A = N.shape[2]
    total = 0
    for a in range(A):
        total += N[b, node, a]
    sqrt_total = np.sqrt(max(total, 1))
    c_puct = c_puct * explore_factor(tree, b, node, stdev)
    fpu = tree.value[b, node] - fpu_reduction if np.isnan(fpu_value) else fpu_value
    best_a = -1
    best = -np.inf
    for a in range(A):
        p = P[b, node, a]
        if p < 0.0:
            continue
        n = N[b, node, a]
        q = W[b, node, a] / n if n > 0 else fpu
        score = q + c_puct * p * sqrt_total / (1.0 + n)
        if score > best:
            best = score
            best_a = a
    return best_a


@numba.njit(cache=True)
def forced_select(tree, b, c_puct, k, stdev=NO_STDEV):
    """The root edge that forced playouts take, or -1 when none is owed one (Wu 2019).

    An edge c with P(c) > 0 that has been visited at all is owed visits while
    N(c) < n_forced(c) = sqrt(k * P(c) * sum N) (the paper's "child that has received any
    playouts"; KataGo's rootDesiredPerChildVisitsCoeff): edges PUCT has not tried stay
    untried. Of the edges owed visits, the one with the highest Q + U goes first (ties:
    lowest action). `stdev`: c_puct scaled by `explore_factor`, as PUCT's.
    """
    N, W, P = tree.N, tree.W, tree.P
    A = N.shape[2]
    total = 0
    for a in range(A):
        total += N[b, 0, a]
    sqrt_total = np.sqrt(max(total, 1))
    c_puct = c_puct * explore_factor(tree, b, 0, stdev)
    best_a = -1
    best = -np.inf
    for a in range(A):
        p = P[b, 0, a]
        if p <= 0.0:
            continue
        n = N[b, 0, a]
        if n == 0 or n >= np.sqrt(k * p * total):
            continue
        score = W[b, 0, a] / n + c_puct * p * sqrt_total / (1.0 + n)
        if score > best:
            best = score
            best_a = a
    return best_a


@numba.njit(cache=True)
def walk(tree, b, c_puct, fpu_reduction, fpu_value, forced_k, root_action, path, stdev=NO_STDEV):
    """One walk of slot b's tree from the root to a new (or finished) leaf, allocating the new node; its
    actions go to `path`. Returns (leaf node, depth). At the root, root_action >= 0 is the edge to take;
    else, with forced_k > 0, an edge owed forced playouts; else PUCT, as below the root (c_puct scaled by
    `explore_factor` where `stdev` says so)."""
    expanded, terminal, child = tree.expanded, tree.terminal, tree.child
    node = 0
    d = 0
    while expanded[b, node] and np.isnan(terminal[b, node]):
        a = -1
        if node == 0:
            if root_action >= 0:
                a = root_action
            elif forced_k > 0.0:
                a = forced_select(tree, b, c_puct, forced_k, stdev)
        if a < 0:
            a = puct_select(tree, b, node, c_puct, fpu_reduction, fpu_value, stdev)
        path[d] = a
        d += 1
        c = child[b, node, a]
        if c < 0:
            return new_child(tree, b, node, a), d
        node = c
    return node, d


@numba.njit(cache=True)
def new_child(tree, b, node, a):
    """Allocate the node reached from `node` by edge `a` in slot b's tree (unexpanded, no edges visited)."""
    c = tree.num_nodes[b]
    tree.num_nodes[b] += 1
    tree.parent[b, c] = node
    tree.action[b, c] = a
    tree.child[b, node, a] = c
    tree.expanded[b, c] = False
    tree.terminal[b, c] = np.nan
    tree.value[b, c] = 0.0
    for k in range(tree.N.shape[2]):
        tree.N[b, c, k] = 0
        tree.W[b, c, k] = 0.0
        tree.W2[b, c, k] = 0.0
        tree.V[b, c, k] = 0.0
        tree.child[b, c, k] = -1
    return c
