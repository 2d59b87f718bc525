"""The search trees of B game slots: one numba structref of arrays shaped [B, M] (nodes) and [B, M, A] (edges).

The tree kernels (zero.tree_walk, zero.virtual_loss, zero.mcts) take a `Tree` whole and read its arrays
by name (`tree.N`, `tree.child`), so two arrays of one shape cannot be passed in each other's place.
Python reads the same arrays as attributes. A structref rather than a namedtuple of the arrays: numba
reads a structref's type off the object in one step and a namedtuple's element by element, which costs
each kernel call about 4 us more (a call with the ten arrays by position: the same as a structref's).
"""

from __future__ import annotations

import numba
import numpy as np
from numba.core import types
from numba.experimental import structref

FIELDS = ("N", "W", "W2", "V", "P", "child", "parent", "action", "expanded", "terminal", "value", "num_nodes",
          "bias_key", "bias_node", "bias_table")


@structref.register
class TreeType(types.StructRef):
    """numba's type of a Tree: its arrays, each by name."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(t)) for name, t in fields)


class Tree(structref.StructRefProxy):
    """Search trees for B slots, M nodes each, A actions. Node 0 is the root.

    Edge statistics are from the point of view of the player choosing the edge. The arrays are fixed when
    the tree is made: write into them, never replace one.
    """

    __slots__ = ("_arrays",)

    def __new__(cls, N, W, W2, V, P, child, parent, action, expanded, terminal, value, num_nodes,
                bias_key, bias_node, bias_table) -> "Tree":
        arrays = (N, W, W2, V, P, child, parent, action, expanded, terminal, value, num_nodes,
                  bias_key, bias_node, bias_table)
        tree = _new_tree(*arrays)
        tree._arrays = arrays
        return tree

    N = property(lambda self: self._arrays[0], doc="[B, M, A] int32, edge visit counts")
    W = property(lambda self: self._arrays[1], doc="[B, M, A] float32, edge total value, chooser's view")
    W2 = property(lambda self: self._arrays[2], doc="[B, M, A] float32, edge total of the squared values "
                                                   "(their variance, for the lower confidence bound)")
    V = property(lambda self: self._arrays[3], doc="[B, M, A] float32, edge total of the value head's values, "
                                                  "chooser's view: W where the search's value is the value head's; "
                                                  "apart from W under a score utility (mcts.score_utility)")
    P = property(lambda self: self._arrays[4], doc="[B, M, A] float32, edge priors; -1 where the action is illegal")
    child = property(lambda self: self._arrays[5], doc="[B, M, A] int32, child node of each edge, -1 if none")
    parent = property(lambda self: self._arrays[6], doc="[B, M] int32")
    action = property(lambda self: self._arrays[7], doc="[B, M] int32, action from the parent")
    expanded = property(lambda self: self._arrays[8], doc="[B, M] bool")
    terminal = property(lambda self: self._arrays[9], doc="[B, M] float32, game value at a finished node "
                                                          "(side to move's view), NaN otherwise")
    value = property(lambda self: self._arrays[10], doc="[B, M] float32, network value of the node "
                                                       "(side to move's view)")
    num_nodes = property(lambda self: self._arrays[11], doc="[B] int32, nodes in use")
    # The subtree value bias correction (zero.subtree_bias), each with a second dimension of 0 when it is off.
    bias_key = property(lambda self: self._arrays[12], doc="[B, M] int32, the node's bucket in its slot's "
                                                          "bias table, -1 for none")
    bias_node = property(lambda self: self._arrays[13], doc="[B, M, 4] float64, per node: values backed up "
                                                           "through it, their sum (its side to move's view), "
                                                           "and the weight and weighted error it last put "
                                                           "in its bucket")
    bias_table = property(lambda self: self._arrays[14], doc="[B, K, 2] float64, per bucket: the sum of its "
                                                            "nodes' weighted errors and of their weights")

    @classmethod
    def allocate(cls, batch_size: int, max_nodes: int, num_actions: int, bias_buckets: int = 0) -> "Tree":
        """Empty trees; `bias_buckets` > 0: with the subtree value bias arrays, that many buckets a slot."""
        shape3 = (batch_size, max_nodes, num_actions)
        bias_nodes = max_nodes if bias_buckets > 0 else 0
        return cls(
            N=np.zeros(shape3, np.int32),
            W=np.zeros(shape3, np.float32),
            W2=np.zeros(shape3, np.float32),
            V=np.zeros(shape3, np.float32),
            P=np.zeros(shape3, np.float32),
            child=np.full(shape3, -1, np.int32),
            parent=np.full((batch_size, max_nodes), -1, np.int32),
            action=np.full((batch_size, max_nodes), -1, np.int32),
            expanded=np.zeros((batch_size, max_nodes), np.bool_),
            terminal=np.full((batch_size, max_nodes), np.nan, np.float32),
            value=np.zeros((batch_size, max_nodes), np.float32),
            num_nodes=np.ones(batch_size, np.int32),
            bias_key=np.full((batch_size, bias_nodes), -1, np.int32),
            bias_node=np.zeros((batch_size, bias_nodes, 4), np.float64),
            bias_table=np.zeros((batch_size, bias_buckets, 2), np.float64),
        )

    @property
    def max_nodes(self) -> int:
        return self.N.shape[1]

    def reset(self, slot: int) -> None:
        """Forget slot's tree: a fresh, unexpanded root."""
        _reset_root(self, slot)

    def advance(self, slot: int, action: int) -> None:
        """Make the child reached by `action` the new root, keeping its subtree (tree reuse)."""
        _promote(self, slot, action)

    def root_visits(self, slots: np.ndarray) -> np.ndarray:
        """[len(slots)] int: total visits of each slot's root."""
        return self.N[slots, 0, :].sum(axis=1)

    def searched(self, slots: np.ndarray, target) -> np.ndarray:
        """[len(slots)] bool: each slot's search is over (its root expanded, and `target` visits or a
        finished game there)."""
        return self.expanded[slots, 0] & ((self.root_visits(slots) >= target) | ~np.isnan(self.terminal[slots, 0]))

    def root_policy(self, slots: np.ndarray) -> np.ndarray:
        """[len(slots), A] float32: the visit distribution at each root."""
        n = self.N[slots, 0, :].astype(np.float32)
        return n / np.maximum(n.sum(axis=1, keepdims=True), 1.0)

    def best_actions(self, slots: np.ndarray, lcb_stdevs: float = 0.0, lcb_min_visit_share: float = 0.1) -> np.ndarray:
        """[len(slots)] int: the move each root's search chooses to play.

        lcb_stdevs 0: the most visited edge (the paper). Else the edge whose value has the highest lower
        confidence bound, Q - lcb_stdevs * sqrt(var / N) over the values backed up through it, among the
        edges with at least 2 visits and lcb_min_visit_share of the most visited one's (Leela Zero's and
        KataGo's move choice): a move the search found better late, with too few visits to be the most
        visited, is played when its bound says it is better. Ties go to the lowest action.
        """
        n = self.N[slots, 0, :]
        most = n.argmax(axis=1)
        if lcb_stdevs <= 0.0:
            return most
        nf = n.astype(np.float64)
        w = self.W[slots, 0, :].astype(np.float64)
        w2 = self.W2[slots, 0, :].astype(np.float64)
        q = w / np.maximum(nf, 1.0)
        var = np.maximum(w2 - w * q, 0.0) / np.maximum(nf - 1.0, 1.0)
        lcb = q - lcb_stdevs * np.sqrt(var / np.maximum(nf, 1.0))
        eligible = (n >= 2) & (nf >= lcb_min_visit_share * nf.max(axis=1, keepdims=True))
        best = np.where(eligible, lcb, -np.inf).argmax(axis=1)
        return np.where(eligible.any(axis=1), best, most)

    def root_values(self, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(root value, value of the most visited child), both from the root player's view."""
        n = self.N[slots, 0, :]
        w = self.W[slots, 0, :]
        total = np.maximum(n.sum(axis=1), 1)
        root = w.sum(axis=1) / total
        best = n.argmax(axis=1)
        rows = np.arange(len(slots))
        best_q = w[rows, best] / np.maximum(n[rows, best], 1)
        return root.astype(np.float32), best_q.astype(np.float32)

    def root_head_values(self, slots: np.ndarray) -> np.ndarray:
        """[len(slots)] float32: the mean of the value head's values (and finished games' results) backed up
        through each root, from the root player's view: the search's own value of the position, the q of
        a q/z value target. The root value of `root_values` where the search backs up the value head's."""
        n = self.N[slots, 0, :].sum(axis=1)
        return (self.V[slots, 0, :].sum(axis=1) / np.maximum(n, 1)).astype(np.float32)


structref.define_proxy(Tree, TreeType, list(FIELDS))


@numba.njit(cache=True)
def _new_tree(N, W, W2, V, P, child, parent, action, expanded, terminal, value, num_nodes, bias_key, bias_node,
              bias_table):
    """The structref of the arrays (compiled once, then read from numba's cache)."""
    return Tree(N, W, W2, V, P, child, parent, action, expanded, terminal, value, num_nodes, bias_key, bias_node,
                bias_table)


@numba.njit(cache=True)
def _reset_root(tree, b):
    tree.N[b, 0, :] = 0
    tree.W[b, 0, :] = 0.0
    tree.W2[b, 0, :] = 0.0
    tree.V[b, 0, :] = 0.0
    tree.child[b, 0, :] = -1
    tree.expanded[b, 0] = False
    tree.terminal[b, 0] = np.nan
    tree.num_nodes[b] = 1
    if tree.bias_table.shape[1] > 0:  # the bias table holds only the errors of the nodes in the tree
        tree.bias_table[b, :, :] = 0.0


@numba.njit(cache=True)
def _promote(tree, b, a):
    """Re-root slot b's tree at the child of edge a, renumbering its subtree from 0."""
    N, W, W2, V, P, child = tree.N, tree.W, tree.W2, tree.V, tree.P, tree.child
    parent, action, expanded, terminal, value = tree.parent, tree.action, tree.expanded, tree.terminal, tree.value
    root = child[b, 0, a]
    if root < 0 or not expanded[b, root]:
        _reset_root(tree, b)
        return
    M = N.shape[1]
    new_index = np.full(M, -1, np.int32)
    order = np.empty(M, np.int32)
    order[0] = root
    new_index[root] = 0
    count = 1
    head = 0
    while head < count:  # breadth first: a node's new index is below its children's
        old = order[head]
        head += 1
        for k in range(N.shape[2]):
            c = child[b, old, k]
            if c >= 0:
                new_index[c] = count
                order[count] = c
                count += 1
    order = order[:count]
    n_old = N[b][order].copy()
    w_old = W[b][order].copy()
    w2_old = W2[b][order].copy()
    v_old = V[b][order].copy()
    p_old = P[b][order].copy()
    c_old = child[b][order].copy()
    par_old = parent[b][order].copy()
    act_old = action[b][order].copy()
    exp_old = expanded[b][order].copy()
    term_old = terminal[b][order].copy()
    val_old = value[b][order].copy()
    for j in range(count):
        N[b, j, :] = n_old[j]
        W[b, j, :] = w_old[j]
        W2[b, j, :] = w2_old[j]
        V[b, j, :] = v_old[j]
        P[b, j, :] = p_old[j]
        for k in range(N.shape[2]):
            c = c_old[j, k]
            child[b, j, k] = new_index[c] if c >= 0 else -1
        parent[b, j] = new_index[par_old[j]] if j > 0 else -1
        action[b, j] = act_old[j] if j > 0 else -1
        expanded[b, j] = exp_old[j]
        terminal[b, j] = term_old[j]
        value[b, j] = val_old[j]
    tree.num_nodes[b] = count
    if tree.bias_table.shape[1] > 0:
        _keep_bias(tree, b, order)


@numba.njit(cache=True)
def _keep_bias(tree, b, order):
    """The subtree value bias of the nodes `order` kept (old indices, in their new order): their buckets and
    statistics renumbered, and the slot's table rebuilt from their last contributions alone (the nodes
    dropped with the rest of the tree take theirs with them)."""
    key_old = tree.bias_key[b][order].copy()
    node_old = tree.bias_node[b][order].copy()
    table = tree.bias_table[b]
    table[:, :] = 0.0
    for j in range(order.shape[0]):
        k = key_old[j]
        tree.bias_key[b, j] = k
        tree.bias_node[b, j, :] = node_old[j]
        if k >= 0:
            table[k, 0] += node_old[j, 3]
            table[k, 1] += node_old[j, 2]
