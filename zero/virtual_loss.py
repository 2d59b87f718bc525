"""Several leaves of one tree per network call: selection under virtual loss (Leela Zero, KataGo).

A single-game search (GTP, `zero play`, a match against an outside engine) has one
leaf a round, so each network call evaluates a batch of one. With
`SearchConfig.leaf_batch` = K, each slot selects up to K leaves a round: after each
walk from the root, every edge on its path takes a virtual visit that counts as a
loss for the player choosing it (N += 1, W -= 1, W2 += 1), so the next walk prefers other
lines. The K leaves are evaluated in one call, the virtual visits are taken back
and the real values backed up, so after a round the tree holds exactly the visits
and values of the leaves it evaluated. A walk that ends on a leaf already chosen
this round (a collision) ends the slot's batch. The trees differ from one-leaf
rounds' (later leaves of a round are chosen without the earlier leaves' values):
that is the cost in strength per visit, bought for more visits per second.
"""

from __future__ import annotations

import numba

from zero.tree_walk import NO_STDEV, walk


@numba.njit(cache=True)
def select_virtual(tree, slots, per_slot, c_puct, fpu_reduction, fpu_value, paths, depth, leaves, row_slot,
                   stdev=NO_STDEV) -> int:
    """Up to per_slot[i] leaves for each slot of `tree` (a zero.tree.Tree), each walk under the virtual
    losses of the ones before (`stdev`: zero.tree_walk.explore_factor's).

    Writes rows of (row_slot, paths, depth, leaves) and returns their number; every row's path
    carries one virtual visit until `undo_virtual`.
    """
    N, W, W2, parent, action = tree.N, tree.W, tree.W2, tree.parent, tree.action
    r = 0
    for i in range(slots.shape[0]):
        b = slots[i]
        first = r
        for _ in range(per_slot[i]):
            node, d = walk(tree, b, c_puct, fpu_reduction, fpu_value, 0.0, -1, paths[r], stdev)
            collided = False
            for j in range(first, r):
                if leaves[j] == node:
                    collided = True
                    break
            if collided:
                break
            leaves[r] = node
            depth[r] = d
            row_slot[r] = b
            while node != 0:  # the virtual visit: a loss for each chooser on the path
                p = parent[b, node]
                a = action[b, node]
                N[b, p, a] += 1
                W[b, p, a] -= 1.0
                W2[b, p, a] += 1.0
                node = p
            r += 1
    return r


@numba.njit(cache=True)
def undo_virtual(tree, row_slot, leaves, n):
    """Take back the virtual visits of the first n rows."""
    N, W, W2, parent, action = tree.N, tree.W, tree.W2, tree.parent, tree.action
    for i in range(n):
        b = row_slot[i]
        node = leaves[i]
        while node != 0:
            p = parent[b, node]
            a = action[b, node]
            N[b, p, a] -= 1
            W[b, p, a] += 1.0
            W2[b, p, a] -= 1.0
            node = p
