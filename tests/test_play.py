"""Terminal play: scripted games through StringIO, with the real Engine on tiny boards."""

from __future__ import annotations

import io
import re

import pytest

from zero.config import load_params
from zero.play import run_play

TINY = ["network.size=b1c8", "network.value_hidden=8", "gate.device=cpu", "mcts.symmetries=false"]


@pytest.fixture(scope="module")
def go5():
    from zero.engine import Engine, EngineConfig

    params = load_params(None, TINY + ["game.size=5"])
    return params, Engine(EngineConfig.from_params(params, 2), checkpoint=None, seed=0)


def play(params, engine, lines, colour="black", out=None):
    out = out if out is not None else io.StringIO()
    status = run_play(params, None, 2, colour, io.StringIO("".join(f"{x}\n" for x in lines)), out, engine=engine)
    assert status == 0
    return out.getvalue()


def test_scripted_go_game_with_illegal_and_garbage_input_finishes(go5):
    params, engine = go5
    # D4 twice is always illegal the second time (our own stone is there); then we pass
    # until the game ends (both pass, or the move cap).
    lines = ["D4", "D4", "hello there", "Z9", "", "help", "C2"] + ["pass"] * 60
    text = play(params, engine, lines)
    assert "Illegal move D4: occupied" in text
    assert "Not a move: 'hello there' is not a board vertex" in text
    assert "Not a move: 'Z9' is off the 5x5 board" in text
    assert "You (Black) play D4" in text
    assert re.search(r"zero \(White\) (plays [A-HJ-T]\d+|passes)", text)
    assert re.search(r"Final score \(Tromp-Taylor, komi 7\.5\): (B\+|W\+)\d+(\.5)?\n$", text)
    assert re.search(r"\n  4 [.XO ()]+ 4\n", text)  # the board, rows labelled
    assert "(O)" in text or "(X)" in text  # the last move marked


def test_resign_and_undo_as_white(go5):
    params, engine = go5
    text = play(params, engine, ["undo", "B2", "undo", "resign"], colour="white")
    assert text.index("zero (Black) ") < text.index("White (O) to play>")  # black moves first
    assert "Nothing to undo" in text
    assert "Took back your last move (B2) and zero's reply." in text
    assert text.rstrip().endswith("You resign. zero wins: B+R")


def test_quit_and_end_of_input(go5):
    params, engine = go5
    assert play(params, engine, ["quit"]).rstrip().endswith("Game abandoned.")
    assert play(params, engine, []).rstrip().endswith("End of input: game abandoned.")


def test_scripted_gomoku_game_finishes():
    from zero.engine import Engine, EngineConfig

    params = load_params(None, TINY + ["game.name=gomoku", "game.height=5", "game.width=5", "game.k=4"])
    engine = Engine(EngineConfig.from_params(params, 2), checkpoint=None, seed=0)
    points = [f"{c}{r}" for r in range(1, 6) for c in "ABCDE"]
    text = play(params, engine, ["pass"] + points)
    assert "Gomoku has no pass" in text
    assert re.search(r"(Black|White) wins with 4 in a row \((B|W)\+\)\n$|a draw \(0\)\n$", text)


def test_engine_resigning_ends_the_game(go5):
    params, engine = go5

    class Resigner:
        game = engine.game

        def genmove(self, position):
            return None

    text = play(params, Resigner(), ["E5"])
    assert text.rstrip().endswith("zero (White) resigns. You win: B+R")


def test_terminal_output_uses_colours(go5):
    params, engine = go5

    class Tty(io.StringIO):
        def isatty(self):
            return True

    text = play(params, engine, ["C3", "quit"], out=Tty())
    assert "\x1b[" in text and "[bold" not in text
    assert "Game abandoned." in text


def test_bad_colour_is_refused(go5):
    params, engine = go5
    with pytest.raises(ValueError, match="colour must be black or white"):
        run_play(params, None, 2, "green", io.StringIO(), io.StringIO(), engine=engine)
