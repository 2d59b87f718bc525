"""Forced playouts and policy target pruning (Wu 2019): hand-worked roots, noisy searches, self-play."""

import math

import numpy as np
import pytest
from conftest import hand_root
from test_config import DEFAULTS_DIGEST

from zero.arena import ArenaRules, MCTSPlayer, play_arena
from zero.config import MCTSConfig, Params, SearchConfig, load_params
from zero.evaluator import UniformEvaluator
from zero.games.gomoku import GomokuGame
from zero.mcts import Search, forced_select, pruned_policy

root = hand_root


@pytest.mark.parametrize("k,expected", [(2.0, 3), (1.0, 2), (0.1, -1)])
def test_forced_select_by_hand(k, expected):
    # sum N = 7, sqrt 7 = 2.6458, c_puct 1
    # n_forced = sqrt(k P 7): a2 (P .2, N 1): k=2 1.673, k=1 1.183, k=.1 .374
    #                         a3 (P .1, N 1): k=2 1.183, k=1 .837,  k=.1 .265
    # a0 (N 5 >= 2.6 for k=2) is never owed; a1 is unvisited, so never forced.
    # k=2: a2 and a3 owed; Q + U: a2 -.5 + .2*2.6458/2 = -.368, a3 .2 + .1*2.6458/2 = .332 -> a3
    # k=1: only a2 owed -> a2; k=.1: none -> -1 (PUCT decides: a0, .6 + .4*2.6458/6 = .776)
    t = root([5, 0, 1, 1], [3.0, 0.0, -0.5, 0.2], [0.4, 0.3, 0.2, 0.1])
    assert forced_select(t, 0, 1.0, k) == expected


class PriorsByAction:
    """Fixed priors (decreasing with the action) and a value set by the first move of the leaf's path.

    Root moves of odd index are bad for the root player (Q = -0.6), the others good (Q = +0.2).
    """

    needs_planes = False

    def evaluate(self, game, batch, slots, paths, depth, inputs):
        A = inputs.legal.shape[1]
        p = np.where(inputs.legal, np.exp(-0.15 * np.arange(A)), 0.0)
        p = (p / p.sum(axis=1, keepdims=True)).astype(np.float32)
        first = np.where(depth > 0, paths[:, 0], 0)
        q_root = np.where(first % 2 == 1, -0.6, 0.2)
        sign = np.where(depth % 2 == 1, -1.0, 1.0)  # the root edge gets (-1)^depth times the leaf's value
        return p, np.where(depth > 0, sign * q_root, 0.0).astype(np.float32)


def noisy_root(k, visits=300, noise=True):
    game = GomokuGame(5, 5, 4)
    batch = game.new_batch(1)
    search = Search(game, PriorsByAction(), 1, SearchConfig(visits=visits, forced_playouts_k=k))
    search.run(batch, np.array([0]), noise_rngs=[np.random.default_rng(11)] if noise else None)
    return search.tree


def forced_shortfall(t, k):
    """Visited edges with a prior whose visits are below floor(sqrt(k P sum N))."""
    N, P = t.N[0, 0], t.P[0, 0]
    need = np.floor(np.sqrt(k * np.maximum(P, 0) * N.sum()))
    return np.flatnonzero((N > 0) & (P > 0) & (N < need))


def test_noisy_search_gives_every_visited_child_its_forced_playouts():
    t = noisy_root(2.0)
    assert t.N[0, 0].sum() == 300
    assert len(forced_shortfall(t, 2.0)) == 0
    # the same search without forced playouts leaves bad moves short of them
    assert len(forced_shortfall(noisy_root(0.0), 2.0)) > 0


def test_forced_playouts_are_off_without_noise_and_at_k_zero():
    plain = noisy_root(0.0, noise=False)
    no_noise = noisy_root(2.0, noise=False)
    np.testing.assert_array_equal(plain.N, no_noise.N)
    np.testing.assert_array_equal(plain.W, no_noise.W)
    default = Search(GomokuGame(5, 5, 4), PriorsByAction(), 1, SearchConfig(visits=300))
    batch = default.game.new_batch(1)
    default.run(batch, np.array([0]), noise_rngs=[np.random.default_rng(11)])
    np.testing.assert_array_equal(default.tree.N, noisy_root(0.0).N)


def test_pruned_counts_by_hand():
    # c_puct 1, k 2, sum N = 22, sqrt 22 = 4.6904; c* = a0: .6 + .3*4.6904/11 = .7279
    # a1 Q .2, n_forced sqrt(2*.3*22) = 3.63: 3 -> .552, 2 -> .669 (< .7279), 1 -> .904 (stop): 2 left
    # a2 Q -.1, n_forced 2.10: 1 -> .135, 0 -> .369: 0 left
    # a3 Q .1, one visit, n_forced 2.10: 0 -> .569: 0 left (a lone visit is dropped anyway)
    # a5 Q -.5, n_forced 2.10: 4 -> -.406, 3 -> -.383, a third visit would exceed n_forced: 3 left
    # a6 is illegal, a4 unvisited
    N = [10, 4, 2, 1, 0, 5, 0]
    W = [6.0, 0.8, -0.2, 0.1, 0.0, -2.5, 0.0]
    P = [0.3, 0.3, 0.1, 0.1, 0.1, 0.1, -1.0]
    t = root(N, W, P)
    pi = pruned_policy(t, np.array([0]), SearchConfig(visits=22, c_puct=1.0, forced_playouts_k=2.0))
    np.testing.assert_allclose(pi[0], np.array([10, 2, 0, 0, 0, 3, 0]) / 15, rtol=1e-6)
    # the tree itself is left as it was
    np.testing.assert_array_equal(t.N[0, 0], N)


def test_pruning_keeps_a_child_whose_puct_stays_high_and_drops_single_visits():
    # sum N = 12, sqrt 12 = 3.4641, c_puct 1, k 2. c* = a0 (N 6, Q 0): 0 + .2*3.4641/7 = .099
    # a1 (N 5, Q .5): 5 -> .5 + .7*3.4641/6 = .904 > .099 already: nothing can go, 5 left
    # a2 (N 1, Q -.9): one visit, dropped
    t = root([6, 5, 1], [0.0, 2.5, -0.9], [0.2, 0.7, 0.1])
    pi = pruned_policy(t, np.array([0]), SearchConfig(visits=12, c_puct=1.0, forced_playouts_k=2.0))
    np.testing.assert_allclose(pi[0], [6 / 11, 5 / 11, 0.0], rtol=1e-6)


def test_mcts_player_returns_the_pruned_policy_when_forced_playouts_are_on():
    game = GomokuGame(5, 5, 4)
    batch = game.new_batch(1)
    config = SearchConfig(visits=300, forced_playouts_k=2.0)
    player = MCTSPlayer("p", PriorsByAction(), config, noise=True)
    player.start(game, batch, 1)
    choice = player.choose(np.array([0]), np.array([False]), [np.random.default_rng(11)])
    t = player.search.tree
    np.testing.assert_allclose(choice.policy, pruned_policy(t, np.array([0]), config))
    assert (choice.policy[0] > 0).sum() < (t.N[0, 0] > 0).sum()  # forced visits were taken back
    assert choice.actions[0] == t.N[0, 0].argmax()  # c* is still the move played
    # without noise nothing is forced or pruned: the policy is the visit distribution
    quiet = MCTSPlayer("q", PriorsByAction(), config, noise=False)
    quiet.start(game, game.new_batch(1), 1)
    c = quiet.choose(np.array([0]), np.array([False]), [np.random.default_rng(11)])
    np.testing.assert_allclose(c.policy, quiet.search.tree.root_policy(np.array([0])))


def test_self_play_with_forced_playouts_completes():
    game = GomokuGame(5, 5, 4)
    rules = ArenaRules(sample_moves=4, record=True)

    def play(k):
        player = MCTSPlayer("sp", UniformEvaluator(), SearchConfig(visits=32, forced_playouts_k=k), noise=True)
        return play_arena(game, player, player, 4, seed=2, concurrent=2, rules=rules).records

    records = play(2.0)
    assert len(records) == 4 and all(r.result in (-1, 0, 1) for r in records)
    for r in records:
        assert len(r.policies) == len(r.moves)
        for pi in r.policies:
            assert math.isclose(float(pi.sum()), 1.0, rel_tol=1e-5)
    plain = play(0.0)
    assert any(not np.array_equal(a, b) for r, s in zip(records, plain) for a, b in zip(r.policies, s.policies))


def test_recipe_switches_left_off_do_not_change_the_params_hash():
    # the hash of the defaults from before the switches existed (recorded again when ladder.anchor's default
    # became the one Go scale: tests/test_config.py's DEFAULTS_DIGEST)
    assert Params().digest() == DEFAULTS_DIGEST
    dumped = Params().model_dump(mode="json")["mcts"]
    assert "root" not in dumped and "forced_playouts_k" not in dumped
    on = load_params(None, ["mcts.forced_playouts_k=2", "mcts.root=gumbel", "mcts.gumbel_considered=8"])
    assert on.model_dump(mode="json")["mcts"]["gumbel_considered"] == 8
    assert on.digest() != Params().digest()
    search = on.mcts.search(16)
    assert (search.forced_playouts_k, search.root, search.gumbel_considered) == (2.0, "gumbel", 8)
    assert MCTSConfig().search(16) == SearchConfig(visits=16)
