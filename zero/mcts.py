"""Batched PUCT search (AlphaGo Zero) over many games at once.

The trees of B game slots live in preallocated arrays shaped [B, M] (nodes)
and [B, M, A] (edges), as in mctx (zero.tree.Tree). One round of the search
selects one leaf in every searching slot, asks the game to describe all leaves
at once (replaying each leaf's path of actions from the slot's position),
evaluates them in ONE call of the evaluator, then expands and backs up. Tree
work is numba, its kernels taking the Tree whole; only the per-round glue is
Python.

Edge statistics follow the paper: N (visits), W (total value), Q = W/N and
P (prior), all from the point of view of the player choosing the edge.
Selection maximises Q + U with U = c_puct * P * sqrt(sum N) / (1 + N) (c_puct scaled at each node by
the spread of its values where SearchConfig.c_puct_stdev_scale > 0, zero.tree_walk.explore_factor);
unvisited edges take the first-play-urgency value Q = V(node) - fpu_reduction,
or a fixed Q = fpu_value when one is given (fpu_value = 1, a win, makes every
edge with a prior be tried once before any is tried again, as in UCT).
`visits` is the number of visits the root has when the search stops: a
reused subtree counts toward it, so a tree never holds more than visits + 1
nodes.

Two root rules of the fast recipe replace PUCT at the root only: forced
playouts in noisy searches (Wu 2019, "Accelerating Self-Play Learning in Go",
KataGo), with `pruned_policy` taking the forced visits back out of the policy
target, and a root action chosen outside the tree each round (zero.gumbel's
sequential halving, Danihelka et al. 2022).
"""

from __future__ import annotations

import numba
import numpy as np

from zero.config import SearchConfig
from zero.games.base import Game, parallel_chunks
from zero.subtree_bias import bucket_of, buckets_for, enter, leaf_correction, observe
from zero.tree import Tree
from zero.tree_walk import explore_factor, forced_select, puct_select, walk  # noqa: F401 (zero.mcts's API)
from zero.virtual_loss import select_virtual, undo_virtual

ILLEGAL = np.float32(-1.0)  # prior marking an illegal edge


@numba.njit(cache=True)
def _select(tree, slots, c_puct, fpu_reduction, fpu_value, forced_k, root_actions, paths, depth, leaves, stdev):
    """Walk each slot's tree from the root to a new (or finished) leaf, allocating the new node.

    At the root, root_actions[i] >= 0 is the edge slot i must take; else, with forced_k > 0,
    an edge owed forced playouts; else PUCT, as below the root (`stdev`: zero.tree_walk.explore_factor's).
    """
    for i in range(slots.shape[0]):
        leaves[i], depth[i] = walk(tree, slots[i], c_puct, fpu_reduction, fpu_value, forced_k, root_actions[i],
                                   paths[i], stdev)


@numba.njit(cache=True)
def _expand_backup(tree, slots, leaves, priors, values, head_values, legal, terminal_values, keys, bias):
    """Expand each leaf with its priors (or mark it finished) and back its value up the path: `values`
    (what the search maximises) into W and W2, `head_values` (the value head's) into V.

    `bias` (factor, exponent) with a factor above 0: the subtree value bias correction (zero.subtree_bias),
    each new leaf entering bucket keys[i] of its slot's table with its value corrected by the bucket's bias,
    and each node on the path observing the value backed up through it."""
    N, W, W2, V, P, parent, action = tree.N, tree.W, tree.W2, tree.V, tree.P, tree.parent, tree.action
    expanded, terminal, value = tree.expanded, tree.terminal, tree.value
    A = N.shape[2]
    factor, exponent = bias
    biased = factor > 0.0
    for i in range(slots.shape[0]):
        b = slots[i]
        c = leaves[i]
        if not expanded[b, c]:
            expanded[b, c] = True
            tv = terminal_values[i]
            if not np.isnan(tv):
                terminal[b, c] = tv
                for a in range(A):
                    P[b, c, a] = -1.0
                v = h = tv
            else:
                for a in range(A):
                    P[b, c, a] = priors[i, a] if legal[i, a] else -1.0
                value[b, c] = values[i]
                v, h = values[i], head_values[i]
                if biased:
                    enter(tree, b, c, keys[i])
                    v -= leaf_correction(tree, b, keys[i], factor)
        else:
            v = h = terminal[b, c]
        node = c
        while node != 0:
            p = parent[b, node]
            a = action[b, node]
            v, h = -v, -h  # the edge belongs to the player at p, the opponent of the player at node
            N[b, p, a] += 1
            W[b, p, a] += v
            W2[b, p, a] += v * v
            V[b, p, a] += h
            if biased:
                observe(tree, b, p, v, exponent)
            node = p


@numba.njit(cache=True, parallel=True)
def _select_chunks(tree, slots, c_puct, fpu_reduction, fpu_value, forced_k, root_actions, paths, depth, leaves,
                   stdev, chunks):
    """_select over `chunks` slices of the leaves on numba's threads (each slot's tree is its own)."""
    L = slots.shape[0]
    for k in numba.prange(chunks):
        lo, hi = k * L // chunks, (k + 1) * L // chunks
        _select(tree, slots[lo:hi], c_puct, fpu_reduction, fpu_value, forced_k, root_actions[lo:hi], paths[lo:hi],
                depth[lo:hi], leaves[lo:hi], stdev)


@numba.njit(cache=True, parallel=True)
def _expand_backup_chunks(tree, slots, leaves, priors, values, head_values, legal, terminal_values, keys, bias,
                          chunks):
    """_expand_backup over `chunks` slices of the leaves on numba's threads."""
    L = slots.shape[0]
    for k in numba.prange(chunks):
        lo, hi = k * L // chunks, (k + 1) * L // chunks
        _expand_backup(tree, slots[lo:hi], leaves[lo:hi], priors[lo:hi], values[lo:hi], head_values[lo:hi],
                       legal[lo:hi], terminal_values[lo:hi], keys[lo:hi], bias)


def split_values(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """An evaluator's values as (what the search maximises, the value head's): [L] is both; [L, 2] (a
    network that returns its value head beside a score utility, zero.network.ScoreUtilityNet) its columns."""
    if values.ndim == 1:
        return values, values
    return np.ascontiguousarray(values[:, 0]), np.ascontiguousarray(values[:, 1])


def pruned_policy(tree: Tree, slots: np.ndarray, config: SearchConfig) -> np.ndarray:
    """[len(slots), A] float32: the root visit distribution with forced playouts pruned (Wu 2019).

    Let c* be the most visited root edge. Every other edge c gives back up to
    n_forced(c) = sqrt(k * P(c) * sum N) visits, as many as keep its Q + U (Q = W/N of
    its real visits, U with the reduced count and the full sum N) below that of c*;
    an edge left with a single visit is dropped. c* keeps all its visits.
    """
    slots = np.asarray(slots, np.int32)
    out = np.zeros((len(slots), tree.N.shape[2]), np.float32)
    _prune(tree, slots, float(config.c_puct), float(config.forced_playouts_k), out, config.stdev)
    return out / np.maximum(out.sum(axis=1, keepdims=True), 1.0)


@numba.njit(cache=True)
def _prune(tree, slots, c_puct, k, out, stdev):
    N, W, P = tree.N, tree.W, tree.P
    A = N.shape[2]
    for i in range(slots.shape[0]):
        b = slots[i]
        c = c_puct * explore_factor(tree, b, 0, stdev)
        total = 0
        best = 0
        for a in range(A):
            total += N[b, 0, a]
            if N[b, 0, a] > N[b, 0, best]:
                best = a
        if total == 0:
            continue
        sqrt_total = np.sqrt(total)
        n_best = N[b, 0, best]
        best_score = W[b, 0, best] / n_best + c * P[b, 0, best] * sqrt_total / (1.0 + n_best)
        for a in range(A):
            n = N[b, 0, a]
            if a == best:
                out[i, a] = n
                continue
            if n == 0 or P[b, 0, a] <= 0.0:
                out[i, a] = n
                continue
            q = W[b, 0, a] / n
            n_forced = np.sqrt(k * P[b, 0, a] * total)
            left = n
            while n - (left - 1) <= n_forced and left > 0:
                if q + c * P[b, 0, a] * sqrt_total / (1.0 + (left - 1)) >= best_score:
                    break
                left -= 1
            out[i, a] = 0 if left <= 1 else left


def add_dirichlet_noise(tree: Tree, slots: np.ndarray, rngs: list, weight: float, alpha: float | None,
                        temperature: float = 1.0) -> None:
    """Mix Dirichlet noise into the priors of each slot's (expanded) root.

    alpha None scales to the number of legal moves: 0.03 * 361 / legal, as the
    paper's 0.03 on 19x19 spread over boards of other sizes. A `temperature` other than 1
    first raises the root's priors to 1/temperature and renormalises them (KataGo's root
    policy temperature).
    """
    for i, b in enumerate(slots):
        legal = tree.P[b, 0, :] >= 0
        n = int(legal.sum())
        if n == 0:
            continue
        priors = tree.P[b, 0, legal]
        if temperature != 1.0:
            priors = tempered(priors.astype(np.float64), temperature).astype(np.float32)
        a = alpha if alpha is not None else 0.03 * 361 / n
        noise = rngs[i].dirichlet(np.full(n, a))
        tree.P[b, 0, legal] = ((1 - weight) * priors + weight * noise).astype(np.float32)


def tempered(priors: np.ndarray, temperature: float) -> np.ndarray:
    """priors ** (1 / temperature), renormalised; priors of 0 stay 0, and all-zero priors stay as they are."""
    with np.errstate(divide="ignore"):
        logs = np.log(priors) / temperature
    top = logs.max()
    if not np.isfinite(top):
        return priors
    out = np.exp(logs - top)
    return out / out.sum()


# A search keeps at most 1/IN_FLIGHT_SHARE of its visits (at least one leaf) selected and waiting on the
# network at once, and at most twice that share of the visits its root has so far: leaves chosen under
# virtual loss, without each other's values, cost strength per visit, the more so the larger their share
# of the search (Gomoku 6x6 at 100 visits: 16 leaves at once lost 119 Elo to one at a time;
# docs/strength/leaf-batch). The second bound lets a search on a time budget (whose visits are not known
# in advance) grow its batches as its tree grows.
IN_FLIGHT_SHARE = 32


def in_flight_room(visits, root_visits):
    """The most leaves a search of `visits` visits whose roots have `root_visits` keeps at the network at
    once (ints or arrays)."""
    return np.maximum(np.minimum(np.asarray(visits), 2 * np.asarray(root_visits)) // IN_FLIGHT_SHARE, 1)


class Search:
    """Runs the batched search for a set of slots of a game batch.

    Args:
        game: the rules.
        evaluator: object with `needs_planes: bool` and
            `evaluate(game, batch, slots, paths, depth, inputs) -> (priors [L, A], values [L])`,
            priors normalised over the legal actions, values from the leaf's side to move.
        batch_size: number of slots.
        config: visits, PUCT constants and root noise (`zero.config.SearchConfig`).
    """

    def __init__(self, game: Game, evaluator, batch_size: int, config: SearchConfig):
        self.game = game
        self.evaluator = evaluator
        self.config = config
        self.visits = config.visits  # lowered for a single search by engines that stop on time
        self._biased = config.subtree_bias_factor > 0
        if self._biased and type(game).pattern_keys is Game.pattern_keys:
            raise ValueError(f"mcts.subtree_bias_factor needs a game with pattern keys; {game.name} has none")
        buckets = buckets_for(config.visits + 2) if self._biased else 0
        self.tree = Tree.allocate(batch_size, config.visits + 2, game.num_actions, bias_buckets=buckets)
        self._want_planes = evaluator.needs_planes or self._biased
        max_depth = min(config.visits + 2, game.max_moves + 1)
        self._paths = np.zeros((batch_size, max_depth), np.int32)
        self._depth = np.zeros(batch_size, np.int32)
        self._leaves = np.zeros(batch_size, np.int32)
        self.evaluations = 0  # leaves sent to the evaluator (not finished games)

    def run(self, batch, slots: np.ndarray, noise_rngs: list | None = None,
            visits: np.ndarray | None = None, root_actions=None, stop=None, max_rounds: int | None = None) -> None:
        """Search every slot in `slots` until its root has `visits` visits, or until `stop()` is true once
        every root is expanded (checked between rounds; an engine's time budget), or for at most
        `max_rounds` rounds (a search that goes on in a later call: pass its noise only once).

        With noise_rngs (one numpy Generator per slot, or None for a slot searched
        without noise), Dirichlet noise of the config's weight and alpha is mixed
        into each root's priors once the root is expanded, and the config's forced
        playouts are made at the root. `visits` ([len(slots)] int, each at most
        the config's) stops each slot at its own count. root_actions, if given, is
        called each round with the slots about to select a leaf and returns the
        root edge each must take ([L] int32, -1: the usual rule), as Gumbel
        search's sequential halving does (zero.gumbel).
        """
        c = self.config
        if (c.leaf_batch > 1 and c.leaf_batches_in_flight > 1 and root_actions is None and noise_rngs is None
                and max_rounds is None and hasattr(self.evaluator, "submit")):
            self._run_in_flight(batch, np.asarray(slots, np.int32), visits, stop)
            return
        steps = self._rounds(batch, slots, noise_rngs, visits, root_actions, self._paths, self._depth, self._leaves,
                             stop, max_rounds)
        evaluate = self.evaluator.evaluate
        try:
            request = next(steps)
            while True:
                request = steps.send(evaluate(self.game, batch, *request))
        except StopIteration:
            return

    def _virtual_round(self, batch, active: np.ndarray, per_slot: np.ndarray, fpu_value: float):
        """One round of up to per_slot[i] leaves per slot under virtual loss (zero.virtual_loss), as a
        generator step of `_rounds`: yields the leaves, is sent their (priors, values), backs them up."""
        rows = self._select_virtual(active, per_slot, fpu_value)
        inputs = self._leaf_inputs(batch, rows)
        priors, values = yield rows[0], rows[1], rows[2], inputs
        self._backup_virtual(rows, inputs, priors, values)

    def _select_virtual(self, active: np.ndarray, per_slot: np.ndarray, fpu_value: float,
                        busy: np.ndarray | None = None) -> tuple:
        """Up to per_slot[i] leaves of each active slot, each path holding a virtual visit until
        `_backup_virtual`: (row_slot, paths, depth, leaves). `busy`: keys (`_leaf_keys`) of leaves already in
        flight; a walk that ends on one is taken back (the leaf would be expanded twice)."""
        t, c = self.tree, self.config
        rows = int(per_slot.sum())
        paths = np.zeros((rows, self._paths.shape[1]), np.int32)
        depth, leaves, row_slot = (np.zeros(rows, np.int32) for _ in range(3))
        n = select_virtual(t, active, per_slot, float(c.c_puct), float(c.fpu_reduction), fpu_value,
                           paths, depth, leaves, row_slot, c.stdev)
        paths, depth, leaves, row_slot = paths[:n], depth[:n], leaves[:n], row_slot[:n]
        if busy is not None and n:
            clash = np.isin(self._leaf_keys(row_slot, leaves), busy)
            if clash.any():
                undo_virtual(t, row_slot[clash], leaves[clash], int(clash.sum()))
                keep = ~clash
                paths, depth, leaves, row_slot = paths[keep], depth[keep], leaves[keep], row_slot[keep]
        return row_slot, paths, depth, leaves

    def _leaf_keys(self, row_slot: np.ndarray, leaves: np.ndarray) -> np.ndarray:
        """One key per (slot, node) pair."""
        return row_slot.astype(np.int64) * self.tree.N.shape[1] + leaves

    def _leaf_inputs(self, batch, rows: tuple):
        row_slot, paths, depth, _ = rows
        return self.game.leaf_inputs(batch, row_slot, paths, depth, want_planes=self._want_planes,
                                     fill_own_eyes=self.config.fill_own_eyes,
                                     early_passes=self.config.early_passes)

    def _bias_keys(self, inputs) -> np.ndarray:
        """[L] int64: each leaf's bucket in its slot's bias table (zero.subtree_bias); all -1 when off."""
        if not self._biased:
            return np.full(len(inputs.terminal_value), -1, np.int64)
        return bucket_of(self.game.pattern_keys(inputs.planes), self.tree.bias_table.shape[1])

    def _backup_virtual(self, rows: tuple, inputs, priors: np.ndarray, values: np.ndarray) -> None:
        """Take back the rows' virtual visits and back up their evaluations."""
        t = self.tree
        row_slot, _, _, leaves = rows
        self.evaluations += int(np.isnan(inputs.terminal_value).sum())
        undo_virtual(t, row_slot, leaves, len(leaves))
        _expand_backup(t, row_slot, leaves, priors, *split_values(values), inputs.legal, inputs.terminal_value,
                       self._bias_keys(inputs), self.config.bias)

    def _run_in_flight(self, batch, slots: np.ndarray, visits, stop=None) -> None:
        """`run` without root noise, with up to `leaf_batches_in_flight` leaf batches at the evaluator at once.

        Each batch is selected under the virtual visits of the batches still in flight (a leaf in flight is
        never selected again), sent with the evaluator's `submit`, and backed up, oldest first, when its
        `collect` returns; meanwhile the next batch is selected. With an evaluator whose `submit` returns at
        once (NetworkEvaluator with cpu_workers, or on CUDA), the network works on one batch while the
        tree chooses the next, and on the CPU the batches in flight run on as many cores.
        """
        if len(slots) == 0:
            return
        t, c = self.tree, self.config
        target = self.visits if visits is None else np.minimum(np.asarray(visits), self.visits)
        fpu_value = np.nan if c.fpu_value is None else float(c.fpu_value)
        flight: list = []  # (rows, inputs, handle), oldest first
        while True:
            # the root's visits count the virtual visits in flight: no slot goes past its target
            done = t.searched(slots, target)
            active = slots[~done]
            if stop is not None and len(active) and t.expanded[slots, 0].all() and stop():
                active = active[:0]  # no new leaves: the batches in flight are backed up, then it returns
            if len(active) and len(flight) < c.leaf_batches_in_flight:
                goal = target if np.ndim(target) == 0 else target[~done]
                waiting = np.zeros(len(t.N), np.int64)  # each slot's leaves in flight
                for rows, _, _ in flight:
                    np.add.at(waiting, rows[0], 1)
                room = np.maximum(in_flight_room(goal, t.root_visits(active)) - waiting[active], 0)
                per_slot = np.minimum(np.clip(goal - t.root_visits(active), 1, c.leaf_batch), room).astype(np.int32)
                busy = np.concatenate([self._leaf_keys(r[0], r[3]) for r, _, _ in flight]) if flight else None
                rows = self._select_virtual(active, per_slot, fpu_value, busy)
                if len(rows[3]):
                    inputs = self._leaf_inputs(batch, rows)
                    handle = self.evaluator.submit(self.game, batch, rows[0], rows[1], rows[2], inputs)
                    flight.append((rows, inputs, handle))
                    continue
            if not flight:
                if len(active):  # with nothing in flight, a walk always ends on a leaf it may take
                    raise RuntimeError("search: no leaf selected with no batch in flight")
                return
            rows, inputs, handle = flight.pop(0)
            self._backup_virtual(rows, inputs, *self.evaluator.collect(handle))

    def run_groups(self, batch, groups: list[tuple], max_rounds: int | None = None) -> None:
        """Search disjoint groups of slots, each as `run(batch, slots, noise_rngs, visits, max_rounds=max_rounds)`
        would, with one group's network call in flight while the next group's leaves are selected and backed up.

        groups: [(slots, noise_rngs, visits)]. With an evaluator that has `submit(game, batch, slots,
        paths, depth, inputs) -> handle` and `collect(handle) -> (priors, values)` (zero.evaluator's
        NetworkEvaluator: asynchronous on CUDA), the tree and board work of one group overlaps the
        network work of the others. Without one, the groups are searched one after the other.
        """
        submit = getattr(self.evaluator, "submit", None)
        if submit is None or len(groups) < 2:
            for slots, noise_rngs, visits in groups:
                self.run(batch, slots, noise_rngs, visits, max_rounds=max_rounds)
            return
        depth_max = self._paths.shape[1]
        live = []
        for slots, noise_rngs, visits in groups:
            n = len(slots)
            steps = self._rounds(batch, slots, noise_rngs, visits, None, np.zeros((n, depth_max), np.int32),
                                 np.zeros(n, np.int32), np.zeros(n, np.int32), max_rounds=max_rounds)
            try:
                request = next(steps)
            except StopIteration:
                continue
            live.append([steps, submit(self.game, batch, *request)])
        while live:
            for item in list(live):
                steps, handle = item
                try:
                    request = steps.send(self.evaluator.collect(handle))
                except StopIteration:
                    live.remove(item)
                    continue
                item[1] = submit(self.game, batch, *request)

    def _rounds(self, batch, slots: np.ndarray, noise_rngs, visits, root_actions, paths_buf, depth_buf,
                leaves_buf, stop=None, max_rounds: int | None = None):
        """The search of `run` as a generator: yields each round's leaves as (slots, paths, depth, inputs)
        and is sent their (priors, values). The scratch buffers hold at least len(slots) rows."""
        slots = np.asarray(slots, np.int32)
        if len(slots) == 0:
            return
        t, c = self.tree, self.config
        target = self.visits if visits is None else np.minimum(np.asarray(visits), self.visits)
        fpu_value = np.nan if c.fpu_value is None else float(c.fpu_value)
        forced_k = float(c.forced_playouts_k) if noise_rngs is not None else 0.0
        noise_pending = np.zeros(len(slots), bool)
        if noise_rngs is not None:
            wants = np.array([r is not None for r in noise_rngs], bool)
            expanded = t.expanded[slots, 0]
            if (expanded & wants).any():
                idx = np.flatnonzero(expanded & wants)
                add_dirichlet_noise(t, slots[idx], [noise_rngs[i] for i in idx], c.dirichlet_weight, c.dirichlet_alpha,
                                    c.root_policy_temperature)
            noise_pending = ~expanded & wants
        rounds = 0
        while True:
            if max_rounds is not None and rounds >= max_rounds:
                return
            rounds += 1
            done = t.searched(slots, target)
            active = slots[~done]
            if len(active) == 0 or (stop is not None and t.expanded[slots, 0].all() and stop()):
                return
            if c.leaf_batch > 1 and root_actions is None and noise_rngs is None:
                goal = target if np.ndim(target) == 0 else target[~done]
                room = in_flight_room(goal, t.root_visits(active))
                per_slot = np.clip(np.minimum(goal - t.root_visits(active), room), 1, c.leaf_batch).astype(np.int32)
                yield from self._virtual_round(batch, active, per_slot, fpu_value)
                continue
            L = len(active)
            paths, depth, leaves = paths_buf[:L], depth_buf[:L], leaves_buf[:L]
            forced = np.full(L, -1, np.int32) if root_actions is None else np.asarray(root_actions(active), np.int32)
            chunks = parallel_chunks(L)
            tree_args = (t, active, float(c.c_puct), float(c.fpu_reduction), fpu_value, forced_k, forced, paths, depth,
                         leaves, c.stdev)
            if chunks:
                _select_chunks(*tree_args, chunks)
            else:
                _select(*tree_args)
            inputs = self.game.leaf_inputs(batch, active, paths, depth, want_planes=self._want_planes,
                                           fill_own_eyes=c.fill_own_eyes, early_passes=c.early_passes)
            priors, values = yield active, paths, depth, inputs
            self.evaluations += int(np.isnan(inputs.terminal_value).sum())
            backup_args = (t, active, leaves, priors, *split_values(values), inputs.legal, inputs.terminal_value,
                           self._bias_keys(inputs), c.bias)
            if chunks:
                _expand_backup_chunks(*backup_args, chunks)
            else:
                _expand_backup(*backup_args)
            if noise_pending.any():
                now = noise_pending & t.expanded[slots, 0]
                if now.any():
                    idx = np.flatnonzero(now)
                    add_dirichlet_noise(t, slots[idx], [noise_rngs[i] for i in idx], c.dirichlet_weight,
                                        c.dirichlet_alpha, c.root_policy_temperature)
                    noise_pending &= ~now
