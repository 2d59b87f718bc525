"""SGF writing and reading: round trips, known records, pass encodings, errors, a golden file; collections."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

from zero.notation import vertex_to_point
from zero.sgf import (SgfError, collection_bytes, game_to_sgf, parse_collection, parse_sgf, read_collection,
                      read_collection_text, write_collection)

DATA = Path(__file__).parent / "data"


def go_moves(texts: list[str], size: int = 9) -> list[int]:
    return [size * size if t == "pass" else vertex_to_point(t, size, size) for t in texts]


GOLDEN_MOVES = ["E5", "C3", "G7", "pass", "C7", "G3", "pass", "pass"]


def golden_sgf() -> str:
    return game_to_sgf(
        go_moves(GOLDEN_MOVES),
        size=9,
        komi=7.5,
        result="B+1.5",
        black="zero-b",
        white="zero-w",
        date="2024-01-02",
        comment="golden record; do not edit",
        extra={"EV": "test"},
    )


def _drop_version(text: str) -> str:
    return re.sub(r"AP\[zero:[^\]]*\]", "AP[zero:VERSION]", text)


def test_golden_file_does_not_drift():
    expected = (DATA / "golden_go9.sgf").read_text()
    assert _drop_version(golden_sgf()) == expected


def test_golden_file_parses_to_its_moves():
    g = parse_sgf((DATA / "golden_go9.sgf").read_text())
    assert (g.game, g.size, g.komi, g.result) == ("go", 9, 7.5, "B+1.5")
    assert g.moves == go_moves(GOLDEN_MOVES)
    assert (g.black, g.white) == ("zero-b", "zero-w")
    assert g.properties["EV"] == ["test"]
    assert g.properties["RU"] == ["Tromp-Taylor"]


@pytest.mark.parametrize("size", [5, 9, 13, 19])
@pytest.mark.parametrize("komi", [7.5, 0.0, -3.5, 6])
def test_go_round_trip(size, komi):
    n = size * size
    moves = [0, n - 1, n, size + 2, n, n]  # corners, passes, a point in row 1
    text = game_to_sgf(moves, size=size, komi=komi, result="W+0.5")
    g = parse_sgf(text)
    assert g.moves == moves
    assert (g.height, g.width, g.size, g.komi, g.result) == (size, size, size, komi, "W+0.5")


def test_coordinates_are_column_then_row_from_the_top():
    # D7 on 9x9 is column 3 (d), GTP row 7 = row index 2 from the top (c).
    text = game_to_sgf(go_moves(["D7", "A1", "J9"]))
    assert ";B[dc];W[ai];B[ia]" in text


def test_known_hand_written_record():
    text = """(;GM[1]FF[4]SZ[9]KM[6.5]PB[Alice]PW[Bob]RE[W+R]
      C[a comment with an escaped \\] bracket and a soft\\
line break]
      ;B[ee] ;W[cc]
      ;B[tt];W[]  ;B[gc]C[move 5])"""
    g = parse_sgf(text)
    assert g.moves == go_moves(["E5", "C7", "pass", "pass", "G7"])
    assert (g.komi, g.result, g.black, g.white) == (6.5, "W+R", "Alice", "Bob")
    assert g.properties["C"] == ["a comment with an escaped ] bracket and a softline break"]


def test_tt_is_a_point_on_boards_over_19():
    g = parse_sgf("(;GM[1]SZ[21];B[tt])")
    assert g.moves == [19 * 21 + 19]
    assert parse_sgf("(;GM[1]SZ[19];B[tt])").moves == [361]


def test_pass_is_written_as_empty_value():
    assert ";W[]" in game_to_sgf([0, 81])


def test_variations_follow_the_first_line():
    text = "(;GM[1]SZ[9];B[aa](;W[bb];B[cc])(;W[ii]))"
    assert parse_sgf(text).moves == [0, 10, 20]
    text = "(;GM[1]SZ[9];B[aa](;W[bb](;B[cc])(;B[dd]))(;W[ii]))"
    assert parse_sgf(text).moves == [0, 10, 20]


def test_only_the_first_game_of_a_collection():
    assert parse_sgf("(;SZ[9];B[aa])(;SZ[9];B[bb])").moves == [0]


def test_a_skipped_turn_is_a_pass_in_go():
    # White to move first (a PL[W]-style record) and two black moves in a row.
    assert parse_sgf("(;SZ[9];W[aa];B[bb];B[cc])").moves == [81, 0, 10, 81, 20]


def test_default_size_is_19_for_go():
    g = parse_sgf("(;GM[1];B[ss])")
    assert (g.size, g.komi, g.result) == (19, None, None)
    assert g.moves == [360]


def test_old_style_property_names():
    # FF[3] allowed lower-case letters in names: only the capitals count.
    assert parse_sgf("(;GaMe[1]SiZe[9];Black[aa])").moves == [0]


def test_gomoku_round_trip_rectangle():
    moves = [0, 1, 7, 13, 41]
    text = game_to_sgf(moves, game="gomoku", height=6, width=7, result="B+")
    assert "GM[4]" in text and "SZ[7:6]" in text and "KM" not in text
    g = parse_sgf(text)
    assert (g.game, g.height, g.width, g.size, g.result) == ("gomoku", 6, 7, None, "B+")
    assert g.moves == moves


def test_gomoku_square_default_and_no_pass():
    assert parse_sgf("(;GM[4];B[hh])").moves == [7 * 15 + 7]
    with pytest.raises(SgfError, match="Gomoku does not have"):
        parse_sgf("(;GM[4]SZ[9];B[aa];W[])")
    with pytest.raises(ValueError, match="not a point or pass"):
        game_to_sgf([81], game="gomoku", size=9)


@pytest.mark.parametrize(
    "text, match",
    [
        ("", "no game tree"),
        ("hello", "no game tree"),
        ("(;SZ[9];B[aa]", "not closed"),
        ("(;SZ[9];B[aa", "value is not closed"),
        ("(;SZ[9];B)", "property with no values in the game tree opened at line 1"),
        ("(;SZ[9];B[zz])", "off the 9x9 board"),
        ("(;SZ[9];B[a])", "not an SGF point"),
        ("(;SZ[x])", "not a board size"),
        ("(;SZ[9]KM[lots])", "not a number"),
        ("(;GM[3])", "not a game zero plays"),
        ("(;SZ[9]AB[aa][bb];W[cc])", "setup stones are not supported"),
        ("(;SZ[9];B[aa];AW[bb])", "setup stones"),
        ("(;SZ[9];B[aa]W[bb])", "both a B and a W"),
        ("(;SZ[9];B[aa]B[bb])", "appears twice"),
        ("(;SZ[9];B[aa]}", "unexpected"),
        ("()", "no game tree"),
    ],
)
def test_malformed_inputs(text, match):
    with pytest.raises(SgfError, match=match):
        parse_sgf(text)


def test_error_says_where():
    with pytest.raises(SgfError, match=r"line 2, column 3"):
        parse_sgf("(;SZ[9]\n;B}W[aa])")


def test_values_are_escaped_when_written():
    text = game_to_sgf([], comment="x] \\ y", black="a]b")
    g = parse_sgf(text)
    assert g.properties["C"] == ["x] \\ y"] and g.black == "a]b"


def test_bad_arguments_to_writer():
    with pytest.raises(ValueError, match="game must be"):
        game_to_sgf([], game="chess")
    with pytest.raises(ValueError, match="upper-case"):
        game_to_sgf([], extra={"ev": "x"})


# --- collections ---------------------------------------------------------------------------------------------


def _games(n: int, black: str = "g41", white: str = "gnugo-l1") -> list[str]:
    """n records of a colour-swapped match, each with its own moves and result."""
    results = ["B+3.5", "W+R", "0", "B+R", "W+12.5"]
    return [game_to_sgf(go_moves(["E5", "C3", "G7"][: 1 + i % 3] + ["pass", "pass"]), result=results[i % 5],
                        black=(black, white)[i % 2], white=(white, black)[i % 2], comment=f"zero match, seed {i}")
            for i in range(n)]


def test_a_collection_round_trip_keeps_every_game_in_order(tmp_path):
    texts = _games(7)
    path = write_collection(tmp_path / "sgf" / "g41--gnugo-l1--ladder.sgf.gz", texts)
    games = read_collection(path)
    assert [(g.black, g.white, g.result) for g in games] == [(p.black, p.white, p.result) for p in map(parse_sgf, texts)]
    assert [g.moves for g in games] == [parse_sgf(t).moves for t in texts]
    assert games[5].properties["C"] == ["zero match, seed 5"] and games[1].result == "W+R"
    assert read_collection_text(path) == "".join(texts)  # the records one after another, byte for byte
    assert parse_sgf(read_collection_text(path)).black == "g41"  # a reader of one game sees the first
    assert path.read_bytes() == collection_bytes(texts)  # the same bytes for the same games: no time in the header


def test_a_collection_is_written_whole_or_not_at_all(tmp_path):
    path = write_collection(tmp_path / "match.sgf.gz", _games(2))
    with pytest.raises(ValueError, match="ends in .sgf.gz"):
        write_collection(tmp_path / "match.sgf", _games(2))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["match.sgf.gz"] and len(read_collection(path)) == 2


def test_a_plain_sgf_file_of_several_games_reads_as_a_collection(tmp_path):
    path = tmp_path / "games.sgf"
    path.write_text("junk before\n" + "".join(_games(3)))
    assert [g.white for g in read_collection(path)] == ["gnugo-l1", "g41", "gnugo-l1"]


@pytest.mark.parametrize("damage, match", [
    (lambda b: b[: len(b) // 2], "not a readable gzip-compressed SGF collection"),
    (lambda b: b[:-9], "not a readable gzip-compressed SGF collection"),
    (lambda b: b"(;GM[1]SZ[9];B[ee])", "not a readable gzip-compressed SGF collection"),
    (lambda b: gzip.compress(b"\xff\xfe(;GM[1])"), "not a readable gzip-compressed SGF collection"),
    (lambda b: gzip.compress(gzip.decompress(b)[:-40]), "game 3 of the collection"),
    (lambda b: gzip.compress(b"nothing here"), "no game tree"),
])
def test_a_damaged_collection_is_named(tmp_path, damage, match):
    path = write_collection(tmp_path / "g41--gnugo-l1--ladder.sgf.gz", _games(3))
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(SgfError, match=match) as e:
        read_collection(path)
    assert str(e.value).startswith(f"{path}: ")


def test_a_missing_collection_is_named(tmp_path):
    with pytest.raises(SgfError, match="none.sgf.gz: no such SGF collection"):
        read_collection(tmp_path / "none.sgf.gz")


def test_a_bad_game_in_a_collection_is_named_by_its_number():
    with pytest.raises(SgfError, match=r"game 2 of the collection: node 1: B\[zz\] is off the 9x9 board"):
        parse_collection("(;SZ[9];B[aa])\n(;SZ[9];B[zz])")
    with pytest.raises(SgfError, match=r"property value is not closed \(missing '\]'\) at line 2, column 10 "
                                       r"\(game 2 of the collection\)"):
        parse_collection("(;SZ[9];B[aa])\n(;SZ[9];B[bb")
