"""Gumbel root search: sequential halving over sampled actions, completed-Q policy targets.

Danihelka, Guez, Schrittwieser and Silver 2022, "Policy improvement by
planning with Gumbel" (ICLR), as DeepMind's mctx implements it in
`gumbel_muzero_policy`. At the root of each move:

1. draw Gumbel noise g(a) per action (g = 0 without noise, in evaluation) and
   consider the m actions with the largest g(a) + logits(a) (the Gumbel-top-k
   trick: a sample without replacement from the prior);
2. spend the visit budget n by sequential halving: phases of
   `halving_schedule(m, n)`, the visits of a phase split equally (round robin)
   among the actions still in; at the start of each phase keep the best half
   by g + logits + sigma(q) (phase 0 keeps all m, ranked by g + logits);
3. play the action of the most visited ones with the largest g + logits + sigma(q),
   and learn the improved policy softmax(logits + sigma(completed Q)).

sigma(q) = (c_visit + max_b N(b)) * c_scale * q, with q the completed Q
rescaled to [0, 1] by its min and max over the legal actions; completed Q is
Q = W/N for visited actions and, for the others, v_mix, the network value of
the root mixed with the prior-weighted Q of the visited actions (mctx's
`qtransform_completed_by_mix_value`). Below the root the search stays PUCT
(zero.mcts), which the paper allows; the root action of every simulation is
handed to the batched search through `Search.run(root_actions=...)`.

Each move is searched from a fresh root: the halving splits a fresh budget,
and mctx keeps no tree between moves either.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from zero.arena import Choice, MCTSPlayer
from zero.config import SearchConfig
from zero.games import Game
from zero.tree import Tree

TINY = np.finfo(np.float32).tiny
NO_LOGIT = -1e9  # the logit of an action whose prior is 0


def halving_schedule(m: int, n: int) -> list[tuple[int, int]]:
    """The phases of sequential halving of n visits over m actions: (actions in, visits each).

    A phase of k actions gives each max(1, floor(n / (ceil(log2 m) * k))) visits; the next
    phase keeps max(2, k // 2) actions; phases go on until n visits are given out (the last
    may be cut short). m = 1 gives the one action every visit. As mctx's
    `get_sequence_of_considered_visits`.
    """
    if m <= 1:
        return [(1, n)] if n > 0 else []
    log2m = math.ceil(math.log2(m))
    phases, given, k = [], 0, m
    while given < n:
        each = max(1, n // (log2m * k))
        phases.append((k, each))
        given += k * each
        k = max(2, k // 2)
    return phases


@lru_cache(maxsize=256)
def _simulation_table(m: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each simulation k < n: its phase and the rank (at the phase's start) of the action it visits.

    Also the number of actions in each phase.
    """
    phase_of, rank_of, sizes = [], [], []
    for p, (k, each) in enumerate(halving_schedule(m, n)):
        sizes.append(k)
        for j in range(k * each):
            phase_of.append(p)
            rank_of.append(j % k)
    return (np.array(phase_of[:n], np.int32), np.array(rank_of[:n], np.int32), np.array(sizes, np.int32))


def prior_logits(P: np.ndarray) -> np.ndarray:
    """[..., A] float64 logits of the priors: log P where legal (NO_LOGIT for P = 0), -inf where not."""
    P = np.asarray(P, np.float64)
    return np.where(P > 0, np.log(np.maximum(P, TINY)), np.where(P < 0, -np.inf, NO_LOGIT))


def top_k_actions(g: np.ndarray, logits: np.ndarray, m: int) -> np.ndarray:
    """The min(m, legal) legal actions with the largest g + logits, best first (ties: lowest action).

    g, logits: [A]; illegal actions have logits -inf.
    """
    legal = np.isfinite(logits)
    score = np.where(legal, g + logits, -np.inf)
    order = np.argsort(-score, kind="stable")
    return order[: min(m, int(legal.sum()))]


def completed_q(N: np.ndarray, W: np.ndarray, P: np.ndarray, value: np.ndarray) -> np.ndarray:
    """[L, A] float64: Q = W/N of visited root edges, v_mix for the others (mctx's completion by mixed value).

    v_mix = (v + sum N * sum_visited(P Q) / sum_visited(P)) / (sum N + 1), v the network value
    of the root; all values from the root player's view. N, W, P: [L, A]; value: [L].
    """
    N = np.asarray(N, np.float64)
    visited = N > 0
    q = np.where(visited, np.asarray(W, np.float64) / np.maximum(N, 1), 0.0)
    prior = np.where(visited, np.maximum(np.asarray(P, np.float64), TINY), 0.0)
    total = N.sum(axis=1)
    weighted = (prior * q).sum(axis=1) / np.maximum(prior.sum(axis=1), TINY)
    v_mix = (np.asarray(value, np.float64) + total * weighted) / (total + 1)
    return np.where(visited, q, v_mix[:, None])


def sigma(completed: np.ndarray, N: np.ndarray, legal: np.ndarray, c_visit: float, c_scale: float) -> np.ndarray:
    """[L, A]: (c_visit + max_b N(b)) * c_scale * q, with q the completed Q rescaled to [0, 1] over the legal actions.

    All equal Q rescale to 0 (mctx's epsilon of 1e-8 on the range); illegal actions get 0.
    """
    lo = np.where(legal, completed, np.inf).min(axis=1, keepdims=True)
    hi = np.where(legal, completed, -np.inf).max(axis=1, keepdims=True)
    q = np.where(legal, (completed - lo) / np.maximum(hi - lo, 1e-8), 0.0)
    return (c_visit + np.asarray(N).max(axis=1, keepdims=True)) * c_scale * q


def _root_sigma(tree: Tree, slots: np.ndarray, config: SearchConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(logits, sigma(completed Q), N) of the roots of `slots`, each [L, A]."""
    N, W, P = tree.N[slots, 0, :], tree.W[slots, 0, :], tree.P[slots, 0, :]
    logits = prior_logits(P)
    s = sigma(completed_q(N, W, P, tree.value[slots, 0]), N, P >= 0, config.gumbel_c_visit, config.gumbel_c_scale)
    return logits, s, N


def improved_policy(tree: Tree, slots: np.ndarray, config: SearchConfig) -> np.ndarray:
    """[L, A] float32: softmax(logits + sigma(completed Q)) over the legal actions at each root (the policy target)."""
    slots = np.asarray(slots, np.int32)
    logits, s, _ = _root_sigma(tree, slots, config)
    x = logits + s
    x = np.exp(x - x.max(axis=1, keepdims=True))
    return (x / x.sum(axis=1, keepdims=True)).astype(np.float32)


def gumbel_action(tree: Tree, slots: np.ndarray, g: np.ndarray, config: SearchConfig) -> np.ndarray:
    """[L] int: of the most visited root actions, the one with the largest g + logits + sigma(completed Q).

    g: [L, A] the Gumbel noise the search was run with (zeros without noise).
    """
    slots = np.asarray(slots, np.int32)
    logits, s, N = _root_sigma(tree, slots, config)
    most = (N == N.max(axis=1, keepdims=True)) & np.isfinite(logits)
    return np.where(most, g + logits + s, -np.inf).argmax(axis=1)


class GumbelPlayer(MCTSPlayer):
    """Gumbel root search with a given evaluator, for the arena (the interface of arena.MCTSPlayer).

    Args:
        name: how results and SGF name the player.
        evaluator: the search's evaluator (zero.mcts.Search).
        config: visits (the budget n of each move), PUCT constants below the root,
            gumbel_considered (m), gumbel_c_visit, gumbel_c_scale.
        noise: draw Gumbel noise at every root from each game's generator (self-play); the move
            played is then the search's own sample, and the arena's temperature moves change
            nothing. Without noise g = 0, and moves the arena asks to sample are drawn from
            the improved policy.
    """

    def __init__(self, name: str, evaluator, config: SearchConfig, noise: bool = False):
        super().__init__(name, evaluator, config, noise=noise, reuse_tree=False)

    def start(self, game: Game, batch, slots_n: int) -> None:
        super().start(game, batch, slots_n)
        A = game.num_actions
        self._g = np.zeros((slots_n, A))  # [B, A] Gumbel noise of each slot's current search
        self._ranking = np.zeros((slots_n, A), np.int32)  # [B, A] actions still in, best first
        self._phase = np.full(slots_n, -1, np.int32)  # [B] phase _ranking belongs to; -1: none yet

    def choose(self, slots: np.ndarray, sample: np.ndarray, rngs: list) -> Choice:
        """Actions for the side to move in each slot, the resign statistic, the improved policy."""
        slots = np.asarray(slots, np.int32)
        tree, A = self.search.tree, self.game.num_actions
        for i, b in enumerate(slots):
            tree.reset(int(b))
            self._g[b] = rngs[i].gumbel(size=A) if self.noise else 0.0
        self._phase[slots] = -1
        self.search.run(self.batch, slots, root_actions=self._root_actions)
        policy = improved_policy(tree, slots, self.config)
        actions = gumbel_action(tree, slots, self._g[slots], self.config)
        if not self.noise:
            for i in np.flatnonzero(sample):
                p = policy[i].astype(np.float64)
                actions[i] = rngs[i].choice(A, p=p / p.sum())
        root_v, best_q = tree.root_values(slots)
        return Choice(actions, np.maximum(root_v, best_q), policy, value=tree.root_head_values(slots))

    def _root_actions(self, active: np.ndarray) -> np.ndarray:
        """The root action of the next simulation in each active slot: sequential halving's turn."""
        tree, c = self.search.tree, self.config
        out = np.full(len(active), -1, np.int32)
        for i, b in enumerate(active):
            if not tree.expanded[b, 0]:
                continue  # this round expands the root
            logits = prior_logits(tree.P[b, 0])
            m = min(c.gumbel_considered, int(np.isfinite(logits).sum()))
            phase_of, rank_of, sizes = _simulation_table(m, self.search.visits)
            k = min(int(tree.N[b, 0].sum()), len(phase_of) - 1)
            p = int(phase_of[k])
            if p != self._phase[b]:
                if self._phase[b] < 0:
                    keep = top_k_actions(self._g[b], logits, m)
                else:
                    still_in = self._ranking[b, : sizes[self._phase[b]]]
                    _, s, _ = _root_sigma(tree, np.array([b], np.int32), c)
                    score = (self._g[b] + logits + s[0])[still_in]
                    keep = still_in[np.argsort(-score, kind="stable")][: sizes[p]]
                self._ranking[b, : len(keep)] = keep
                self._phase[b] = p
            out[i] = self._ranking[b, rank_of[k]]
        return out


def search_player(name: str, evaluator, config: SearchConfig, noise: bool = False, reuse_tree: bool = True,
                  playout_cap: tuple[float, int] | None = None, groups: int = 1, step_rounds: int = 0,
                  decided_visits: int = 0):
    """The player of config.root: GumbelPlayer for "gumbel" (which searches each move afresh), else MCTSPlayer.

    playout_cap, groups, step_rounds and decided_visits are MCTSPlayer's (playout cap randomization; games
    searched in groups that alternate on the network; searches that pause every step_rounds rounds so the
    games that are done move; decided games played out cheaply); Gumbel search refuses playout_cap,
    step_rounds and decided_visits (ValueError) and searches in one group.
    """
    if config.root == "gumbel":
        if playout_cap is not None or decided_visits:
            raise ValueError("mcts.root: gumbel searches every move with its own budget; "
                             "selfplay.full_search_share must stay 1 and selfplay.decided_visits 0 with it")
        if step_rounds:
            raise ValueError("mcts.root: gumbel searches every move in one sequential halving; "
                             "selfplay.step_rounds must stay 0 with it")
        return GumbelPlayer(name, evaluator, config, noise=noise)
    return MCTSPlayer(name, evaluator, config, noise=noise, reuse_tree=reuse_tree, playout_cap=playout_cap,
                      groups=groups, step_rounds=step_rounds, decided_visits=decided_visits)
