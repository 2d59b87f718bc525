"""The arena: the one game loop behind self-play (one player on both sides) and matches (two players)."""

import numpy as np
import pytest

from zero.arena import ArenaRules, Choice, MCTSPlayer, RandomPlayer, game_seed, play_arena
from zero.config import SearchConfig
from zero.evaluator import UniformEvaluator
from zero.games.gomoku import GomokuGame


class Counting(RandomPlayer):
    """Random moves; logs each choose call's slots and the side to move in them."""

    def __init__(self, seed, log):
        super().__init__(seed)
        self.log = log

    def choose(self, slots, sample, rngs):
        self.log.append([(int(s), self.game.to_play(self.batch, int(s))) for s in slots])
        return super().choose(slots, sample, rngs)


def test_one_player_on_both_sides_chooses_for_every_game_in_one_call():
    game = GomokuGame(5, 5, 4)
    log = []
    player = Counting(0, log)
    out = play_arena(game, player, player, num_games=6, seed=0, concurrent=3, rules=ArenaRules())
    assert len(out.records) == 6
    first = log[0]
    assert [s for s, _ in first] == [0, 1, 2]  # all three games in one call, both colours alike
    assert sum(len(call) for call in log) == sum(len(r.moves) for r in out.records)


def test_two_players_each_choose_only_for_their_own_colour():
    game = GomokuGame(5, 5, 4)
    log_a, log_b = [], []
    out = play_arena(game, Counting(1, log_a), Counting(2, log_b), num_games=4, seed=0, concurrent=4,
                     rules=ArenaRules())
    colour_of_a = {r.index: (1 if r.index % 2 == 0 else -1) for r in out.records}  # slot s plays game s first
    for call in log_a:
        assert all(colour == colour_of_a[s] for s, colour in call)
    assert out.wins + out.losses + out.draws == 4
    assert sum(len(c) for c in log_a + log_b) == sum(len(r.moves) for r in out.records)


def test_self_play_records_every_position_with_its_search_policy():
    game = GomokuGame(5, 5, 4)
    player = MCTSPlayer("self", UniformEvaluator(), SearchConfig(visits=8), noise=True)
    rules = ArenaRules(sample_moves=3, resign_threshold=-1.0, playout_share=0.5, record=True)
    out = play_arena(game, player, player, num_games=4, seed=7, concurrent=2, rules=rules)
    for rec in out.records:
        assert len(rec.planes) == len(rec.policies) == len(rec.to_play) == len(rec.moves)
        assert rec.to_play == [1 if i % 2 == 0 else -1 for i in range(len(rec.moves))]
        for policy, move in zip(rec.policies, rec.moves):
            assert abs(float(policy.sum()) - 1.0) < 1e-5 and policy[move] > 0
        # the calibration share comes from the game's own generator, first draw
        assert rec.no_resign == bool(np.random.default_rng(game_seed(7, rec.index)).random() < 0.5)


def test_a_player_below_the_threshold_resigns_unless_its_game_is_played_out():
    class Hopeless(RandomPlayer):
        def choose(self, slots, sample, rngs):
            return Choice(super().choose(slots, sample, rngs).actions, np.full(len(slots), -0.99, np.float32))

    game = GomokuGame(5, 5, 4)
    player = Hopeless(0)
    out = play_arena(game, player, player, num_games=20, seed=3, concurrent=4,
                     rules=ArenaRules(resign_threshold=-0.9, playout_share=0.3))
    for rec in out.records:
        if rec.no_resign:
            assert not rec.resigned and len(rec.moves) >= 7  # played to the end (four in a row takes 7 moves)
        else:
            assert rec.resigned and rec.moves == [] and rec.result == -1  # black resigns before its first move
        assert rec.resign_value[0] == np.float32(-0.99)
    assert 0 < sum(r.no_resign for r in out.records) < 20


def test_an_arena_given_game_indices_plays_those_games_with_their_colours_and_seeds():
    game = GomokuGame(5, 5, 4)
    ended = []
    out = play_arena(game, RandomPlayer(1), RandomPlayer(2), num_games=99, seed=3, concurrent=2, rules=ArenaRules(),
                     indices=[1, 4, 5], on_game=ended.append)
    assert [r.index for r in out.records] == [1, 4, 5]
    assert [r.seed for r in out.records] == [game_seed(3, i) for i in (1, 4, 5)]
    assert sorted(r.index for r in ended) == [1, 4, 5] and all(r.result in (-1, 0, 1) for r in ended)
    mine = [r.result * (1 if r.index % 2 == 0 else -1) for r in out.records]  # a is white in games 1 and 5
    assert (out.wins, out.losses, out.draws) == (sum(m > 0 for m in mine), sum(m < 0 for m in mine),
                                                 sum(m == 0 for m in mine))
    assert play_arena(game, RandomPlayer(1), RandomPlayer(2), 4, 3, 2, ArenaRules(), indices=[]).records == []
    with pytest.raises(ValueError, match="ascending"):
        play_arena(game, RandomPlayer(1), RandomPlayer(2), 4, 3, 2, ArenaRules(), indices=[2, 2])
