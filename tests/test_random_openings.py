"""Self-play's random openings (selfplay.random_opening_moves): central stones played before the search chooses."""

from pathlib import Path

import numpy as np
import pytest

from zero.arena import ArenaRules, MCTSPlayer, game_seed, play_arena
from zero.config import ConfigError, SearchConfig, load_params, params_from_dict
from zero.evaluator import UniformEvaluator
from zero.games.base import central_points
from zero.games.go import GoGame
from zero.games.gomoku import GomokuGame
from zero.ladder import openings
from zero.sgf import read_collection

ROOT = Path(__file__).resolve().parents[1]


def _self_play(game, rules, num_games=12, seed=5):
    player = MCTSPlayer("self", UniformEvaluator(), SearchConfig(visits=4), noise=True)
    return play_arena(game, player, player, num_games=num_games, seed=seed, concurrent=4, rules=rules).records


def test_central_points_are_the_centre_five_by_five_of_nine_by_nine():
    centre = central_points(9, 9)
    assert sorted(divmod(int(a), 9) for a in centre) == [(r, c) for r in range(2, 7) for c in range(2, 7)]
    assert sorted(divmod(int(a), 6) for a in central_points(4, 6)) == [(r, c) for r in (1, 2) for c in range(1, 5)]


def test_every_game_opens_with_distinct_central_stones_that_are_not_training_positions():
    game = GoGame(9)
    records = _self_play(game, ArenaRules(record=True, random_opening_moves=2, playout_share=0.0))
    centre = set(central_points(9, 9).tolist())
    openings_seen = set()
    for rec in records:
        assert rec.moves[0] in centre and rec.moves[1] in centre and rec.moves[0] != rec.moves[1]
        # every move the search chose is recorded, the two opening stones are not
        assert len(rec.planes) == len(rec.policies) == len(rec.to_play) == len(rec.moves) - 2
        assert rec.to_play[0] == 1  # black's third stone is the first recorded position
        openings_seen.add(tuple(rec.moves[:2]))
    assert len(openings_seen) >= 10  # 12 games, 600 ordered pairs of 25 points


def test_the_opening_comes_from_the_games_own_generator_after_the_calibration_draw():
    game = GomokuGame(6, 6, 4)
    rules = ArenaRules(record=True, random_opening_moves=3, random_opening_share=0.5, playout_share=0.25)
    records = _self_play(game, rules, num_games=24)
    opened = 0
    for rec in records:
        rng = np.random.default_rng(game_seed(5, rec.index))
        assert rec.no_resign == bool(rng.random() < 0.25)
        if rng.random() < 0.5:
            opened += 1
            expected = rng.choice(central_points(6, 6), size=3, replace=False).tolist()
            assert rec.moves[:3] == expected
            assert len(rec.planes) == len(rec.moves) - 3
        else:
            assert len(rec.planes) == len(rec.moves)
    assert 0 < opened < 24
    again = _self_play(game, rules, num_games=24)
    assert [r.moves for r in again] == [r.moves for r in records]  # a pure function of the seed


def test_off_draws_nothing_and_plays_the_games_it_played_before():
    game = GoGame(7)
    plain = _self_play(game, ArenaRules(record=True, sample_moves=4, playout_share=0.5))
    explicit = _self_play(game, ArenaRules(record=True, sample_moves=4, playout_share=0.5, random_opening_moves=0,
                                           random_opening_share=0.3))
    assert [r.moves for r in plain] == [r.moves for r in explicit]
    assert all(len(r.planes) == len(r.moves) for r in plain)


def test_the_switch_is_validated_and_left_out_of_the_params_hash_when_off():
    base = {"game": {"name": "go", "size": 9}}
    off = params_from_dict(base)
    assert off.digest() == params_from_dict({**base, "selfplay": {"random_opening_moves": 0}}).digest()
    on = params_from_dict({**base, "selfplay": {"random_opening_moves": 2, "random_opening_share": 0.5}})
    assert on.digest() != off.digest()
    for bad in ({"random_opening_moves": 5}, {"random_opening_moves": -1}, {"random_opening_share": 0.0},
                {"random_opening_share": 1.5}, {"random_opening_moves": "2"}):
        with pytest.raises((ConfigError, ValueError), match="random_opening"):
            params_from_dict({**base, "selfplay": bad})


def test_self_play_of_a_params_file_plays_its_openings(tmp_path):
    from zero.selfplay import play_games

    params = load_params(ROOT / "params-smoke.yaml", ["game.size=7", "selfplay.random_opening_moves=2",
                                                      "selfplay.concurrent_games=4"])
    game = GoGame(7)
    records = play_games(game, UniformEvaluator(), params.selfplay, params.mcts.search(4), num_games=4, seed=1)
    centre = set(central_points(7, 7).tolist())
    assert all(r.moves[0] in centre and r.moves[1] in centre for r in records)


def test_the_ladders_starts_are_those_of_the_committed_ladders():
    # every ladder of the 9x9 line since generation 35 plays the same 50 openings (seed 0); the shared
    # central_points must not move them
    starts = openings(9, 50, 2, seed=0)
    games = read_collection(ROOT / "docs/strength/go-9-g71-ladder/sgf/g71--gnugo-l1--ladder.sgf.gz")
    assert len(games) == 100
    for i, game in enumerate(games):
        assert game.moves[:2] == starts[i // 2]
