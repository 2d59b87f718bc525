"""flows.captures: the stones each side captured in a collection of Go SGFs."""

import json

import pytest

from flows.captures import game_captures, main, summarise
from zero.games.go import GoGame
from zero.sgf import game_to_sgf, parse_sgf, write_collection

GAME = GoGame(5)


def _sgf(moves, result, black="zero", white="gnugo"):
    actions = [GAME.text_to_action(m) for m in moves]
    return game_to_sgf(actions, size=5, komi=0.5, result=result, black=black, white=white)


# black takes white's C3 (one stone) with C4
ONE = ["B3", "C3", "D3", "A1", "C2", "A2", "C4"]  # C4 captures white's C3
# white surrounds black's two stones A5-A4: B5, B4 then A3 captures them
TWO = ["A5", "B5", "A4", "B4", "E1", "A3"]
# 9x9: black's C7, between white's B7, C8 and B6, is chased down a ladder (ten escapes from atari to two
# liberties) into its own J1-J3, and white's J4 captures all 15 stones at move 30
LADDER = ["C7", "B7", "J1", "C8", "J2", "B6", "J3", "D7", "C6", "C5", "D6", "E6", "D5", "D4", "E5", "F5", "E4",
          "E3", "F4", "G4", "F3", "F2", "G3", "H3", "G2", "H2", "G1", "F1", "H1", "J4"]


def test_captures_per_side_and_outcome(tmp_path):
    one = game_captures(parse_sgf(_sgf(ONE, "B+12.5")), "zero", "one")
    assert one.colour == 1 and one.won is True and one.margin == 12.5
    assert one.taken == [(7, 1)] and one.lost == [] and one.moves == 7 and one.escapes == []
    two = game_captures(parse_sgf(_sgf(TWO, "W+80.5")), "zero", "two")
    assert two.won is False and two.lost == [(6, 2)] and two.taken == [] and two.escapes == [1]
    as_white = game_captures(parse_sgf(_sgf(TWO, "W+R", black="gnugo", white="zero")), "zero", "three")
    assert as_white.colour == -1 and as_white.won is True and as_white.margin is None and as_white.taken == [(6, 2)]

    summary = summarise([one, two, as_white], group=2, whole_board=70)
    assert summary["wins"]["games"] == 2 and summary["wins"]["stones_taken_mean"] == 1.5
    assert summary["losses"] == {"games": 1, "stones_lost_mean": 2.0, "stones_taken_mean": 0.0,
                                 "games_losing_a_group_of_2": 1, "of_which_chased_out_of_atari_3_times": 0,
                                 "first_such_capture_median_move": 6,
                                 "moves_median": 6, "lost_by_more_than_70": 1}
    assert "draws" not in summary


def test_a_group_lost_in_a_ladder_counts_its_escapes_from_atari():
    go9 = GoGame(9)
    record = game_to_sgf([go9.text_to_action(m) for m in LADDER], size=9, komi=7.5, result="W+R",
                         black="zero", white="pachi")
    ladder = game_captures(parse_sgf(record), "zero", "ladder")
    assert ladder.lost == [(30, 15)] and ladder.escapes == [10]
    assert summarise([ladder])["losses"]["of_which_chased_out_of_atari_3_times"] == 1
    white = game_captures(parse_sgf(record), "pachi", "ladder")  # white's stones were never in atari
    assert white.lost == [] and white.escapes == []


def test_command_line_and_bad_input(tmp_path, capsys):
    games = write_collection(tmp_path / "games.sgf.gz", [_sgf(ONE, "B+12.5"), _sgf(TWO, "W+80.5")])
    assert main([str(games), "--player", "zero", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [g["game"] for g in out["games"]] == ["games.sgf.gz#1", "games.sgf.gz#2"]
    assert out["summary"]["losses"]["games"] == 1
    assert main([str(games), "--player", "nobody"]) == 2
    assert "games.sgf.gz#1: 'nobody' is neither player" in capsys.readouterr().err
    assert main([str(tmp_path / "none.sgf.gz"), "--player", "zero"]) == 2
    assert "none.sgf.gz: no such SGF collection" in capsys.readouterr().err
    bad = write_collection(tmp_path / "bad.sgf.gz", [_sgf(ONE, "B+12.5"), "(;GM[1]SZ[5];B[zz])"])
    assert main([str(bad), "--player", "zero"]) == 2
    assert "bad.sgf.gz: game 2 of the collection" in capsys.readouterr().err


def test_a_gomoku_record_is_refused(tmp_path):
    record = parse_sgf(game_to_sgf([0, 1, 2], game="gomoku", height=6, width=6, black="zero", white="x"))
    with pytest.raises(ValueError, match="g: not a Go game"):
        game_captures(record, "zero", "g")
