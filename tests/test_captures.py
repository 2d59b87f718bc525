"""flows.captures: the stones each side captured in a directory of Go SGFs."""

import json

import pytest

from flows.captures import game_captures, main, summarise
from zero.games.go import GoGame
from zero.sgf import game_to_sgf

GAME = GoGame(5)


def _write(path, moves, result, black="zero", white="gnugo"):
    actions = [GAME.text_to_action(m) for m in moves]
    path.write_text(game_to_sgf(actions, size=5, komi=0.5, result=result, black=black, white=white))
    return path


# black takes white's C3 (one stone) with C4
ONE = ["B3", "C3", "D3", "A1", "C2", "A2", "C4"]  # C4 captures white's C3
# white surrounds black's two stones A5-A4: B5, B4 then A3 captures them
TWO = ["A5", "B5", "A4", "B4", "E1", "A3"]


def test_captures_per_side_and_outcome(tmp_path):
    one = game_captures(_write(tmp_path / "one.sgf", ONE, "B+12.5"), "zero")
    assert one.colour == 1 and one.won is True and one.margin == 12.5
    assert one.taken == [(7, 1)] and one.lost == [] and one.moves == 7
    two = game_captures(_write(tmp_path / "two.sgf", TWO, "W+80.5"), "zero")
    assert two.won is False and two.lost == [(6, 2)] and two.taken == []
    as_white = game_captures(_write(tmp_path / "three.sgf", TWO, "W+R", black="gnugo", white="zero"), "zero")
    assert as_white.colour == -1 and as_white.won is True and as_white.margin is None and as_white.taken == [(6, 2)]

    summary = summarise([one, two, as_white], group=2, whole_board=70)
    assert summary["wins"]["games"] == 2 and summary["wins"]["stones_taken_mean"] == 1.5
    assert summary["losses"] == {"games": 1, "stones_lost_mean": 2.0, "stones_taken_mean": 0.0,
                                 "games_losing_a_group_of_2": 1, "first_such_capture_median_move": 6,
                                 "moves_median": 6, "lost_by_more_than_70": 1}
    assert "draws" not in summary


def test_command_line_and_bad_input(tmp_path, capsys):
    _write(tmp_path / "one.sgf", ONE, "B+12.5")
    _write(tmp_path / "two.sgf", TWO, "W+80.5")
    assert main([str(tmp_path), "--player", "zero", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [g["file"] for g in out["games"]] == ["one.sgf", "two.sgf"] and out["summary"]["losses"]["games"] == 1
    assert main([str(tmp_path), "--player", "nobody"]) == 2
    assert "'nobody' is neither player" in capsys.readouterr().err
    assert main([str(tmp_path / "empty"), "--player", "zero"]) == 2
    (tmp_path / "bad.sgf").write_text("(;GM[1]SZ[5];B[zz]")
    assert main([str(tmp_path), "--player", "zero"]) == 2
    assert "bad.sgf" in capsys.readouterr().err


def test_a_gomoku_record_is_refused(tmp_path):
    path = tmp_path / "g.sgf"
    path.write_text(game_to_sgf([0, 1, 2], game="gomoku", height=6, width=6, black="zero", white="x"))
    with pytest.raises(ValueError, match="not a Go game"):
        game_captures(path, "zero")
