"""The recipe switches against a line that collapses to one colour: the search's score utility
(mcts.score_utility), no resignation in the opening (selfplay.resign_min_move), and the engine's
confirmed resignation for people and outside engines."""

import math

import numpy as np
import pytest
import torch

from zero.arena import ArenaRules, play_arena
from zero.match import search_player
from zero.config import load_params
from zero.engine import Engine, EngineConfig
from zero.evaluator import NetworkEvaluator
from zero.games import make_game
from zero.inference import LeafNet
from zero.network import ScoreUtilityNet, init_network, search_network

AUX = ["game.size=7", "network.size=b2c16", "network.aux_heads=true", "network.global_pooling=true"]


def _net(overrides=AUX, seed=2):
    params = load_params(None, overrides)
    game = make_game(params.game)
    return params, game, init_network(params, game, seed=seed).eval()


def test_the_utility_is_the_value_and_the_score_term_mixed_by_their_weight():
    params, game, net = _net()
    x = (torch.rand(6, game.num_planes, game.height, game.width, generator=torch.Generator().manual_seed(0))
         < 0.4).float()
    with torch.no_grad():
        logits, value, _, score = net.forward_aux(x)
        got_logits, utility = ScoreUtilityNet(net, 0.5, 10.0)(x)
    want = (value + 0.5 * (2 / math.pi) * torch.atan(score / 10.0)) / 1.5
    torch.testing.assert_close(utility, want)
    torch.testing.assert_close(got_logits, logits)
    assert search_network(net, 0.0) is net


def test_a_larger_margin_is_a_larger_utility_at_the_same_value():
    params, game, net = _net()
    wrapped = ScoreUtilityNet(net, 0.5, 10.0)
    with torch.no_grad():  # the score head's bias moves the margin alone
        net.score_fc.bias.fill_(-2.0)
        _, low = wrapped(torch.zeros(1, game.num_planes, game.height, game.width))
        net.score_fc.bias.fill_(2.0)
        _, high = wrapped(torch.zeros(1, game.num_planes, game.height, game.width))
    assert high.item() > low.item()
    assert -1.0 <= low.item() <= 1.0 and -1.0 <= high.item() <= 1.0


def test_the_utility_needs_the_score_head():
    _, _, net = _net(["game.size=7", "network.size=b1c8"])
    with pytest.raises(ValueError, match="aux_heads"):
        ScoreUtilityNet(net, 0.5, 10.0)


def test_the_fast_path_folds_the_wrapped_network_and_agrees_with_the_eager_one():
    params, game, net = _net()
    wrapped = ScoreUtilityNet(net, 0.5, 10.0)
    leaf = LeafNet(wrapped, None, torch.device("cpu"))
    x = (torch.rand(4, game.num_planes, game.height, game.width, generator=torch.Generator().manual_seed(5))
         < 0.4).float()
    legal = torch.ones(4, game.num_actions, dtype=torch.bool)
    priors, utility = leaf(x, None, legal)
    with torch.no_grad():
        logits, want = wrapped(x)
    torch.testing.assert_close(utility, want, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(priors, torch.softmax(logits, 1), atol=1e-5, rtol=1e-5)


def test_the_switches_keep_the_params_hash_while_off():
    base = load_params(None, [])
    assert load_params(None, ["mcts.score_utility=0", "selfplay.resign_min_move=0"]).digest() == base.digest()
    assert load_params(None, ["mcts.score_utility=0.5"]).digest() != base.digest()


class _Hopeless(NetworkEvaluator):
    """Every leaf lost for black: black's searches would resign at any move."""

    def evaluate(self, game, batch, slots, paths, depth, inputs):
        priors, values = super().evaluate(game, batch, slots, paths, depth, inputs)
        root = np.array([game.to_play(batch, int(s)) for s in slots])
        leaf = root * np.where(np.asarray(depth) % 2 == 0, 1, -1)  # the side to move at each leaf
        return priors, (-0.99 * leaf).astype(values.dtype)


def _hopeless_games(resign_min_move):
    params, game, net = _net()
    player = search_player("p", _Hopeless(net, None, 0), params.mcts.search(4))
    rules = ArenaRules(resign_threshold=-0.9, resign_min_move=resign_min_move, playout_share=0.0)
    return play_arena(game, player, player, 6, 1, 6, rules).records


def test_self_play_resigns_at_once_without_the_switch_and_not_before_its_move_with_it():
    at_once = _hopeless_games(0)
    assert all(r.resigned and len(r.moves) == 0 for r in at_once)
    later = _hopeless_games(10)
    assert all(r.resigned and len(r.moves) == 10 for r in later)


class _ScriptedValue(Engine):
    """The real engine's resignation rule fed a scripted root value for each genmove."""

    def __init__(self, values, **config):
        params = load_params(None, ["game.size=9"])
        base = EngineConfig.from_params(params, visits=2)
        super().__init__(EngineConfig(**{**base.__dict__, **config}), checkpoint=None, seed=0)
        self.values = list(values)

    def analyse(self, position, seconds=None):
        policy = np.zeros(self.game.num_actions, np.float32)
        policy[0] = 1.0
        return policy, self.values.pop(0)


def _play(engine, moves: int):
    """Genmove for each of `moves` positions of one game; the first move number at which it resigned."""
    from zero.games.go import GoPosition

    position = GoPosition.initial(9, 7.5)
    for n in range(moves):
        if engine.genmove(position) is None:
            return n
        position = position.play(position.legal_actions()[0])
    return None


def test_the_engine_never_resigns_in_the_opening():
    assert _play(_ScriptedValue([-1.0] * 60), 60) == 40  # half of 81 points, three low values long since


def test_the_engine_resigns_only_on_a_loss_its_searches_confirm_move_after_move():
    values = [-1.0] * 40 + [0.0] + [-1.0, -1.0] + [0.0] + [-1.0] * 3
    assert _play(_ScriptedValue(values, resign_moves=3), len(values)) == 46
    assert _play(_ScriptedValue([-1.0] * 10, resign_min_move=0, resign_moves=1), 10) == 0
