"""zero.notation: GTP vertices, SGF points, colours and result text."""

import pytest

from zero.notation import (
    COLUMNS,
    NotationError,
    action_to_vertex,
    colour_letter,
    colour_name,
    parse_colour,
    point_to_sgf,
    point_to_vertex,
    result_text,
    score_text,
    sgf_is_pass,
    sgf_to_point,
    vertex_to_action,
    vertex_to_point,
)


@pytest.mark.parametrize("height, width", [(5, 5), (9, 9), (19, 19), (6, 7), (3, 25)])
def test_every_point_round_trips_through_gtp_and_sgf(height, width):
    points = range(height * width)
    vertices = [point_to_vertex(p, height, width) for p in points]
    assert len(set(vertices)) == height * width
    assert [vertex_to_point(v, height, width) for v in vertices] == list(points)
    assert [vertex_to_point(v.lower(), height, width) for v in vertices] == list(points)
    assert [sgf_to_point(point_to_sgf(p, height, width), height, width) for p in points] == list(points)
    assert not any("I" in v for v in vertices)


@pytest.mark.parametrize("size, point, vertex, sgf", [
    (5, 0, "A5", "aa"),
    (5, 24, "E1", "ee"),
    (9, 0, "A9", "aa"),
    (9, 7, "H9", "ha"),
    (9, 8, "J9", "ia"),  # the ninth column is J: GTP skips I
    (9, 80, "J1", "ii"),
    (9, 5 * 9 + 3, "D4", "df"),
    (19, 0, "A19", "aa"),
    (19, 18, "T19", "sa"),
    (19, 3 * 19 + 15, "Q16", "pd"),
    (19, 360, "T1", "ss"),
])
def test_known_points(size, point, vertex, sgf):
    assert point_to_vertex(point, size, size) == vertex
    assert vertex_to_point(vertex, size, size) == point
    assert point_to_sgf(point, size, size) == sgf
    assert sgf_to_point(sgf, size, size) == point


def test_columns_skip_i():
    assert COLUMNS[:9] == "ABCDEFGHJ" and "I" not in COLUMNS and len(COLUMNS) == 25


def test_pass_only_where_the_game_has_one():
    assert action_to_vertex(81, 9, 9, pass_action=81) == "pass"
    assert action_to_vertex(80, 9, 9, pass_action=81) == "J1"
    assert vertex_to_action("pass", 9, 9, pass_action=81) == 81
    assert vertex_to_action(" PASS ", 9, 9, pass_action=81) == 81
    assert vertex_to_action("d4", 9, 9, pass_action=81) == 48
    with pytest.raises(NotationError, match="'pass' is not a board vertex"):
        vertex_to_action("pass", 6, 6)


@pytest.mark.parametrize("text, reason", [
    ("I5", "is not a board vertex"),
    ("hello", "is not a board vertex"),
    ("", "is not a board vertex"),
    ("D", "is not a board vertex"),
    ("4D", "is not a board vertex"),
    ("K1", "is off the 9x9 board"),
    ("A10", "is off the 9x9 board"),
    ("A0", "is off the 9x9 board"),
])
def test_bad_vertex_is_named(text, reason):
    with pytest.raises(NotationError) as info:
        vertex_to_point(text, 9, 9)
    assert info.value.text == text and info.value.reason == reason
    assert str(info.value) == f"{text!r} {reason}"
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("text, reason", [
    ("a", "is not an SGF point (two letters)"),
    ("abc", "is not an SGF point (two letters)"),
    ("a1", "is not an SGF point (two letters)"),
    ("ja", "is off the 9x9 board"),
    ("aA", "is off the 9x9 board"),
])
def test_bad_sgf_point_is_named(text, reason):
    with pytest.raises(NotationError) as info:
        sgf_to_point(text, 9, 9)
    assert (info.value.text, info.value.reason) == (text, reason)


def test_sgf_points_past_z_use_capitals():
    assert point_to_sgf(26, 1, 30) == "Aa" and sgf_to_point("Aa", 1, 30) == 26


def test_sgf_pass():
    assert sgf_is_pass("", 9, 9) and sgf_is_pass("tt", 19, 19)
    assert not sgf_is_pass("tt", 21, 21) and not sgf_is_pass("aa", 9, 9)


@pytest.mark.parametrize("point", [-1, 81, 100])
def test_point_off_the_board_is_refused(point):
    with pytest.raises(ValueError, match=f"action {point} is not a point on the 9x9 board"):
        point_to_vertex(point, 9, 9)
    with pytest.raises(ValueError, match=f"action {point} is not a point on the 9x9 board"):
        point_to_sgf(point, 9, 9)


@pytest.mark.parametrize("text, colour", [
    ("b", 1), ("B", 1), ("black", 1), (" Black ", 1), ("BLACK", 1),
    ("w", -1), ("W", -1), ("white", -1), ("White", -1),
])
def test_parse_colour(text, colour):
    assert parse_colour(text) == colour


def test_colour_marks_only_when_asked():
    assert parse_colour("x", marks=True) == 1 and parse_colour("O", marks=True) == -1
    for text in ("x", "o"):
        with pytest.raises(NotationError, match="is not a colour"):
            parse_colour(text)
    with pytest.raises(NotationError) as info:
        parse_colour("purple")
    assert str(info.value) == "'purple' is not a colour (expected b, w, black or white)"


def test_colour_printing():
    assert (colour_letter(1), colour_letter(-1)) == ("B", "W")
    assert (colour_name(1), colour_name(-1)) == ("black", "white")
    for text in ("b", "black", "w", "white"):
        assert colour_name(parse_colour(text)).startswith(text)


@pytest.mark.parametrize("winner, margin, resigned, text", [
    (1, 3.5, False, "B+3.5"),
    (-1, -0.5, False, "W+0.5"),
    (-1, 16.0, False, "W+16"),
    (1, 0.0, True, "B+R"),
    (-1, 7.5, True, "W+R"),
    (1, 0.0, False, "B+"),
    (-1, 0.0, False, "W+"),
    (0, 0.0, False, "0"),
])
def test_result_text(winner, margin, resigned, text):
    assert result_text(winner, margin, resigned) == text


@pytest.mark.parametrize("score, text", [(3.5, "B+3.5"), (-0.5, "W+0.5"), (0.0, "0"), (-16.0, "W+16"), (24.5, "B+24.5")])
def test_score_text(score, text):
    assert score_text(score) == text
