"""mcts.early_passes: false searches a pass only as a reply to a pass or when no other move is left (Go)."""

import numpy as np
import pytest

from conftest import ONLY_EYES_LEFT
from conftest import searched as searched_by
from zero.arena import ArenaRules, play_arena
from zero.config import SearchConfig, load_params
from zero.evaluator import UniformEvaluator
from zero.games.go import BLACK, WHITE, GoGame, GoPosition
from zero.gumbel import search_player
from zero.mcts import Search

UNSETTLED = """
        .....
        .XO..
        .XO..
        .....
        .....
        """


def searched(position, early_passes, fill_own_eyes=False):
    """GTP names of the moves a leaf at `position` offers the search (eyes left out unless said)."""
    return searched_by(position, fill_own_eyes=fill_own_eyes, early_passes=early_passes)


def test_no_pass_while_points_are_left():
    p = GoPosition.from_ascii(UNSETTLED, to_play=BLACK)
    free, late = searched(p, True), searched(p, False)
    assert "pass" in free and "pass" not in late
    assert sorted(set(free) - set(late)) == ["pass"]


def test_a_pass_is_answered_by_a_pass_or_a_move():
    p = GoPosition.from_ascii(UNSETTLED, to_play=BLACK).play("pass")
    assert p.to_play == WHITE
    assert searched(p, False) == searched(p, True) and "pass" in searched(p, False)


def test_a_side_left_with_only_its_eyes_passes_first():
    p = GoPosition.from_ascii(ONLY_EYES_LEFT, to_play=BLACK)
    assert searched(p, False) == ["pass"]
    # with eye filling on, the eyes are moves, and a late pass would make Black fill them
    assert "pass" not in searched(p, False, fill_own_eyes=True)


def test_the_search_never_visits_an_early_pass():
    p = GoPosition.from_ascii(UNSETTLED, to_play=WHITE)
    visits = {}
    for early in (True, False):
        search = Search(p.game, UniformEvaluator(), 1, SearchConfig(visits=200, fill_own_eyes=False,
                                                                    early_passes=early))
        slots = np.zeros(1, np.int32)
        search.run(p.batch, slots)
        visits[early] = search.tree.root_policy(slots)[0][p.game.pass_action]
    assert visits[True] > 0 and visits[False] == 0


def _first_passes(records, game):
    """Each game's moves before its first pass, and the moves the side to pass had at that point."""
    out = []
    for r in records:
        position = GoPosition.initial(size=game.size, komi=game.komi)
        for i, a in enumerate(r.moves):
            if a == game.pass_action:
                reply = i > 0 and r.moves[i - 1] == game.pass_action
                out.append((i, reply, searched(position, False)))
                break
            position = position.play(a)
    return out


def test_self_play_games_are_played_out_before_anyone_passes():
    game = GoGame(size=5, komi=7.5)
    rules = ArenaRules(sample_moves=4, resign_threshold=-2.0, record=True)
    found = {}
    for early in (True, False):
        config = SearchConfig(visits=24, fill_own_eyes=False, early_passes=early)
        player = search_player("self-play", UniformEvaluator(), config, noise=True)
        records = play_arena(game, player, player, 8, 3, 8, rules).records
        found[early] = _first_passes(records, game)
    # a uniform network passes early when it may ...
    assert any(i < 15 for i, _, _ in found[True])
    # ... and never when it may not: each game's first pass is the only move the passer had
    assert len(found[False]) == 8
    for i, reply, moves in found[False]:
        assert not reply and moves == ["pass"] and i >= 15


def test_the_switch_is_off_by_default_and_needs_eyes_left_out():
    plain = load_params(None, [])
    assert plain.mcts.early_passes is True and plain.mcts.search(10).early_passes is True
    assert load_params(None, ["mcts.early_passes=true"]).digest() == plain.digest()
    on = load_params(None, ["mcts.early_passes=false", "mcts.fill_own_eyes=false"])
    assert on.digest() != load_params(None, ["mcts.fill_own_eyes=false"]).digest()
    assert on.mcts.search(10).early_passes is False
    with pytest.raises(Exception, match="early_passes=false needs fill_own_eyes=false"):
        load_params(None, ["mcts.early_passes=false"])
