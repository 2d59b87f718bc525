"""mcts.fill_own_eyes: false leaves the side to move's own single-point eyes out of what zero searches (Go)."""

import numpy as np
import pytest

from conftest import ONLY_EYES_LEFT, searched
from zero.config import SearchConfig, load_params
from zero.evaluator import UniformEvaluator
from zero.games.go import BLACK, WHITE, GoPosition
from zero.mcts import Search

# Black's single-point eyes: A1 and E1 (corners), C1 (edge, no white diagonal), B2 (centre). White's A5 is
# White's eye, an illegal suicide for Black.
BOARD = """
        .O...
        OO.O.
        XX.OX
        X.XXX
        .X.X.
        """


def test_own_single_point_eyes_leave_the_search_and_only_they():
    p = GoPosition.from_ascii(BOARD, to_play=BLACK)
    every = searched(p, True)
    assert every == sorted(p.game.action_to_text(a) for a in p.legal_actions())
    assert "A5" not in every
    assert sorted(set(every) - set(searched(p, False))) == ["A1", "B2", "C1", "E1"]


def test_a_false_eye_stays_searched():
    # B2 has two white diagonals (A1, C3): a false eye, which Black may need to fill.
    p = GoPosition.from_ascii("""
        .....
        .....
        OXO..
        X.X..
        OX...
        """, to_play=BLACK)
    assert "B2" in searched(p, False)
    # with one white diagonal only, B2 is an eye (centre points allow one)
    q = GoPosition.from_ascii("""
        .....
        .....
        OXX..
        X.X..
        XX...
        """, to_play=BLACK)
    assert "B2" not in searched(q, False) and "B2" in searched(q, True)


def test_the_other_side_may_still_play_there():
    # White to move: Black's eye at B2 is a suicide for White, out by the rules; the switch changes nothing.
    p = GoPosition.from_ascii("""
        .....
        .....
        .XX..
        X.X..
        XX...
        """, to_play=WHITE)
    assert searched(p, False) == searched(p, True)
    # ... and a move into an eye played by the opponent over GTP is still a legal move of the game
    black = GoPosition.from_ascii("""
        .....
        .....
        .XX..
        X.X..
        XX...
        """, to_play=BLACK)
    assert black.play("B2").board.reshape(-1).tolist().count(BLACK) == 7


def test_a_side_left_with_only_its_eyes_passes():
    p = GoPosition.from_ascii(ONLY_EYES_LEFT, to_play=BLACK)
    found = {}
    for fill in (True, False):
        search = Search(p.game, UniformEvaluator(), 1, SearchConfig(visits=64, fill_own_eyes=fill))
        slots = np.zeros(1, np.int32)
        search.run(p.batch, slots)
        found[fill] = np.flatnonzero(search.tree.root_policy(slots)[0]).tolist()
    assert found[False] == [p.game.pass_action]
    assert found[True] != [p.game.pass_action]


def test_the_switch_is_off_by_default_and_keeps_the_params_hash(tmp_path):
    plain = load_params(None, [])
    assert plain.mcts.fill_own_eyes is True and plain.mcts.search(10).fill_own_eyes is True
    same = load_params(None, ["mcts.fill_own_eyes=true"])
    assert same.digest() == plain.digest()
    on = load_params(None, ["mcts.fill_own_eyes=false"])
    assert on.digest() != plain.digest() and on.mcts.search(10).fill_own_eyes is False
    with pytest.raises(Exception, match="fill_own_eyes"):
        load_params(None, ["mcts.fill_own_eyes=sometimes"])
