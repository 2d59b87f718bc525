"""Gumbel root search (Danihelka et al. 2022): top-k, sequential halving, the move, the completed-Q target."""

import math

import numpy as np
import pytest
from conftest import hand_root

from zero.arena import MCTSPlayer
from zero.config import SearchConfig, SelfPlayConfig
from zero.evaluator import NetworkEvaluator
from zero.games.gomoku import GomokuGame
from zero.gumbel import (
    GumbelPlayer,
    completed_q,
    gumbel_action,
    halving_schedule,
    improved_policy,
    prior_logits,
    search_player,
    sigma,
    top_k_actions,
)
from zero.selfplay import play_games

root = hand_root


@pytest.mark.parametrize("m,n,phases", [
    (4, 8, [(4, 1), (2, 2)]),             # log2 4 = 2: 8 // (2*4) = 1 each, then 8 // (2*2) = 2 each
    (16, 32, [(16, 1), (8, 1), (4, 2)]),  # log2 16 = 4: 32 // 64 -> 1, 32 // 32 = 1, 32 // 16 = 2
    (16, 8, [(16, 1)]),                   # fewer visits than actions: the first 8 of 16 get one
    (3, 10, [(3, 1), (2, 2), (2, 2)]),    # log2 3 -> 2: 10 // 6 = 1, 10 // 4 = 2, then on with two
    (1, 5, [(1, 5)]),
])
def test_halving_schedule(m, n, phases):
    assert halving_schedule(m, n) == phases


def test_top_k_by_gumbel_plus_logits():
    g = np.array([0.2, -0.5, 2.0, 0.1, 5.0])
    logits = np.array([0.0, 1.0, -1.0, 0.5, -np.inf])  # a4 is illegal, whatever its noise
    # g + logits: .2, .5, 1.0, .6 -> a2, a3, a1, a0
    assert list(top_k_actions(g, logits, 3)) == [2, 3, 1]
    assert list(top_k_actions(g, logits, 16)) == [2, 3, 1, 0]
    assert list(top_k_actions(np.zeros(5), logits, 2)) == [1, 3]


class FixedQ:
    """Priors decreasing with the action (logits -0.1 a) and root Q(a) = q[a] on every visit through a."""

    needs_planes = False

    def __init__(self, q):
        self.q = np.asarray(q, np.float64)

    def evaluate(self, game, batch, slots, paths, depth, inputs):
        A = inputs.legal.shape[1]
        p = np.where(inputs.legal, np.exp(-0.1 * np.arange(A)), 0.0)
        p = (p / p.sum(axis=1, keepdims=True)).astype(np.float32)
        first = np.where(depth > 0, paths[:, 0], 0)
        q = np.where(first < len(self.q), self.q[np.minimum(first, len(self.q) - 1)], -1.0)
        sign = np.where(depth % 2 == 1, -1.0, 1.0)  # the root edge gets (-1)^depth times the leaf's value
        return p, np.where(depth > 0, sign * q, 0.0).astype(np.float32)


def run_logged(q, m, n):
    """One Gumbel search without noise on empty 5x5 Gomoku; the root action of every round, and the player."""
    game = GomokuGame(5, 5, 4)
    player = GumbelPlayer("g", FixedQ(q), SearchConfig(visits=n, gumbel_considered=m))
    player.start(game, game.new_batch(1), 1)
    log, inner = [], player._root_actions

    def logged(active):
        actions = inner(active)
        log.append(int(actions[0]))
        return actions

    player._root_actions = logged
    choice = player.choose(np.array([0]), np.array([False]), [np.random.default_rng(0)])
    return log, player.search.tree.N[0, 0].copy(), choice


def test_sequential_halving_m4_n8():
    # g = 0: the four largest logits are a0..a3, visited once each in that order (phase 0).
    # sigma = (50 + 1) * q-hat dwarfs logit gaps of 0.1: phase 1 keeps the best Q, a3 (.6) and a1 (.3),
    # two visits each, round robin. a3 then has the best g + logits + sigma of the most visited.
    log, N, choice = run_logged([-0.5, 0.3, 0.1, 0.6], m=4, n=8)
    assert log == [-1, 0, 1, 2, 3, 3, 1, 3, 1]  # -1: the round that expands the root
    assert list(N[:4]) == [1, 3, 1, 3] and N[4:].sum() == 0
    assert choice.actions[0] == 3


Q16 = [0.1, -0.3, 0.5, 0.2, -0.6, 0.7, 0.0, -0.1, 0.4, -0.4, 0.6, -0.2, 0.3, -0.5, 0.8, -0.7]


def test_sequential_halving_m16_n32():
    # phase 0: a0..a15 once each. Q steps of .1 over a range of 1.5 make sigma steps of 51/15 = 3.4,
    # more than any logit gap (at most 1.5): phase 1 keeps the 8 best Q, a14 a5 a10 a2 a8 a12 a3 a0,
    # one visit each; phase 2 the 4 best, a14 a5 a10 a2, two visits each.
    log, N, choice = run_logged(Q16, m=16, n=32)
    assert log == [-1, *range(16), 14, 5, 10, 2, 8, 12, 3, 0, 14, 5, 10, 2, 14, 5, 10, 2]
    expected = np.zeros(25, int)
    expected[:16] = 1
    expected[[8, 12, 3, 0]] = 2
    expected[[14, 5, 10, 2]] = 4
    np.testing.assert_array_equal(N, expected)
    assert choice.actions[0] == 14


def test_few_visits_give_one_visit_to_each_of_the_first_considered():
    # 8 visits, 16 considered: a0..a7 (largest logits) once each; the best Q among them, a5 (.7), is played
    log, N, choice = run_logged(Q16, m=16, n=8)
    assert log == [-1, *range(8)]
    assert list(N[:8]) == [1] * 8 and N[8:].sum() == 0
    assert choice.actions[0] == 5
    assert math.isclose(float(choice.policy[0].sum()), 1.0, rel_tol=1e-5)


def test_surviving_action_weighs_gumbel_logits_and_sigma():
    # all visited: completed Q = Q = [.2, .3, -.4, 0], range .7 -> q-hat [.857, 1, 0, .571], sigma = 53 q-hat
    # most visited: a0, a1. g = 0: a0 ln .4 + 45.43 = 44.51 < a1 ln .3 + 53 = 51.80 -> a1
    # g = 8 on a0: 52.51 > 51.80 -> a0. a3's huge noise does not count: it is not among the most visited.
    t = root([3, 3, 1, 1], [0.6, 0.9, -0.4, 0.0], [0.4, 0.3, 0.2, 0.1])
    config = SearchConfig(visits=8)
    assert gumbel_action(t, np.array([0]), np.zeros((1, 4)), config)[0] == 1
    assert gumbel_action(t, np.array([0]), np.array([[8.0, 0.0, 0.0, 100.0]]), config)[0] == 0


def test_completed_q_target_by_hand():
    # Q0 = .5, Q1 = -.2; prior-weighted visited Q = (.5*.5 + .25*-.2) / .75 = .26667
    # v_mix = (.1 + 3 * .26667) / 4 = .225 for the unvisited a2, a3; a4 is illegal
    N = np.array([[2, 1, 0, 0, 0]])
    W = np.array([[1.0, -0.2, 0.0, 0.0, 0.0]])
    P = np.array([[0.5, 0.25, 0.125, 0.125, -1.0]])
    done = completed_q(N, W, P, np.array([0.1]))
    np.testing.assert_allclose(done[0, :4], [0.5, -0.2, 0.225, 0.225], rtol=1e-6)
    # q-hat over the legal actions: (q + .2) / .7 = [1, 0, .60714, .60714]; sigma = (50 + 2) * 1 * q-hat
    s = sigma(done, N, P >= 0, 50.0, 1.0)
    np.testing.assert_allclose(s[0], [52.0, 0.0, 31.571429, 31.571429, 0.0], rtol=1e-6)
    # target = softmax(ln P + sigma): exponents relative to a0's 51.30685:
    # a1 -1.38629 - 51.30685 = -52.69315, a2, a3 -2.07944 + 31.57143 - 51.30685 = -21.81486
    t = root(N[0], W[0], P[0], value=0.1)
    pi = improved_policy(t, np.array([0]), SearchConfig(visits=3))[0]
    e = np.exp([0.0, -52.69315, -21.81486, -21.81486])
    np.testing.assert_allclose(pi[:4], e / e.sum(), rtol=1e-4)
    assert pi[4] == 0.0
    # a smaller scale spreads the target: c_scale .02 -> sigma = 1.04 q-hat
    soft = improved_policy(t, np.array([0]), SearchConfig(visits=3, gumbel_c_scale=0.02))[0]
    x = np.log([0.5, 0.25, 0.125, 0.125]) + 1.04 * np.array([1.0, 0.0, 0.6071429, 0.6071429])
    np.testing.assert_allclose(soft[:4], np.exp(x) / np.exp(x).sum(), rtol=1e-5)


def test_equal_q_gives_the_prior_as_target():
    # Q = .3 everywhere visited and v_mix = (.3 + 3 * .3) / 4 = .3: sigma is 0, the target is softmax(logits) = P
    t = root([2, 1, 0, 0], [0.6, 0.3, 0.0, 0.0], [0.5, 0.2, 0.3, -1.0], value=0.3)
    pi = improved_policy(t, np.array([0]), SearchConfig(visits=3))
    np.testing.assert_allclose(pi[0], [0.5, 0.2, 0.3, 0.0], rtol=1e-5)
    assert np.isneginf(prior_logits(np.array([-1.0]))[0])


def test_noise_is_drawn_in_self_play_only():
    game = GomokuGame(5, 5, 4)
    seen = []
    for noise in (False, True):
        player = GumbelPlayer("g", FixedQ(Q16), SearchConfig(visits=8, gumbel_considered=4), noise=noise)
        player.start(game, game.new_batch(1), 1)
        player.choose(np.array([0]), np.array([False]), [np.random.default_rng(4)])
        seen.append(player._g[0].copy())
        assert player.search.tree.N[0, 0].sum() == 8
    assert not seen[0].any() and seen[1].std() > 0.5  # standard Gumbel noise has std 1.28


def test_search_player_picks_the_root_rule():
    assert isinstance(search_player("a", None, SearchConfig(visits=8, root="gumbel")), GumbelPlayer)
    assert isinstance(search_player("a", None, SearchConfig(visits=8)), MCTSPlayer)


def test_gumbel_self_play_with_a_tiny_network():
    import torch

    from zero.network import NetConfig, ZeroNet

    torch.manual_seed(0)
    game = GomokuGame(5, 5, 4)
    net = ZeroNet(NetConfig(4, 5, 5, 25, 1, 8, value_hidden=8))
    selfplay = SelfPlayConfig(concurrent_games=3, temperature_moves=4, resign_threshold=-1.0)
    search = SearchConfig(visits=8, root="gumbel", gumbel_considered=16)
    records = play_games(game, NetworkEvaluator(net, None), selfplay, search, num_games=4, seed=3)
    assert len(records) == 4
    for r in records:
        assert r.result in (-1, 0, 1) and len(r.policies) == len(r.moves) > 0
        for pi in r.policies:
            assert math.isclose(float(pi.sum()), 1.0, rel_tol=1e-5) and pi.min() >= 0
    # each game draws its own noise: the four games do not all open alike
    assert len({tuple(r.moves[:2]) for r in records}) > 1
