"""Colour-flip consistency: swapping the colours of every stone and the side to move changes
nothing the network sees but the colour plane, nothing the rules allow, and negates the score."""

import numpy as np

from zero.games.go import GoPosition
from zero.games.gomoku import GomokuPosition

GO_BOARD = """
. . . . .
. X O . .
X O . O .
. X O . .
. . X . .
"""


def swap(text):
    return text.replace("X", "x").replace("O", "X").replace("x", "O")


def planes_of(pos):
    game = pos.game
    return game.leaf_inputs(pos.batch, np.zeros(1, np.int32), np.zeros((1, 1), np.int32), np.zeros(1, np.int32)).planes[0]


def test_go_colour_flip():
    a = GoPosition.from_ascii(GO_BOARD, komi=0.0, to_play=1)
    b = GoPosition.from_ascii(swap(GO_BOARD), komi=0.0, to_play=-1)
    pa, pb = planes_of(a), planes_of(b)
    np.testing.assert_array_equal(pa[:16], pb[:16])
    assert pa[16].min() == 1 and pb[16].max() == 0
    assert a.legal_actions() == b.legal_actions()
    assert a.score() == -b.score()
    # the same move played in both keeps them mirror images
    a2, b2 = a.play("C3"), b.play("C3")
    np.testing.assert_array_equal(a2.board, -b2.board)
    np.testing.assert_array_equal(planes_of(a2)[:16], planes_of(b2)[:16])


GOMOKU_BOARD = """
. . . . . .
. X O . . .
. . X O . .
. . . . . .
. . . . . .
. . . . . .
"""


def test_gomoku_colour_flip():
    a = GomokuPosition.from_ascii(GOMOKU_BOARD, k=4, to_play=1)
    b = GomokuPosition.from_ascii(swap(GOMOKU_BOARD), k=4, to_play=-1)
    pa, pb = planes_of(a), planes_of(b)
    np.testing.assert_array_equal(pa[:3], pb[:3])
    assert pa[3].min() == 1 and pb[3].max() == 0
    assert a.legal_actions() == b.legal_actions()
    for m in ("E3", "B2"):
        a, b = a.play(m), b.play(m)
    np.testing.assert_array_equal(a.board, -b.board)
    np.testing.assert_array_equal(planes_of(a)[:3], planes_of(b)[:3])
