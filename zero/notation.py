"""How zero writes and reads moves, colours and results as text: GTP, SGF and the terminal.

Points are zero's row-major index `row * width + col`, row 0 at the top.

- GTP vertex: column letter then row number, rows counted from the bottom and
  columns lettered A..Z without I (so at most 25 columns). On 9x9 point 0 is
  `A9`, point 8 is `J9` and point 80 is `J1`; a pass is `pass`.
- SGF point: column letter then row letter, both from the top left, `a`..`z`
  then `A`..`Z` (sides up to 52). On 9x9 point 0 is `aa` and point 80 is `ii`.
  A pass is the empty value (`tt` is read as one on boards up to 19x19).
- Colour: +1 black, -1 white; read from `b`, `black`, `w`, `white` in any case.
- Result (SGF RE, GTP final_score), always from the winner's letter:
  `B+3.5`, `W+R` (resignation), `B+` (a win with no margin, Gomoku), `0` (draw).
"""

from __future__ import annotations

COLUMNS = "ABCDEFGHJKLMNOPQRSTUVWXYZ"  # GTP skips I
SGF_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
PASS = "pass"

_COLOURS = {"b": 1, "black": 1, "w": -1, "white": -1}
_MARKS = {"x": 1, "o": -1}  # the stones as boards are drawn


class NotationError(ValueError):
    """Text that is not a vertex, SGF point or colour here; `text` is the input, `reason` what is wrong."""

    def __init__(self, text: str, reason: str):
        self.text = text
        self.reason = reason
        super().__init__(f"{text!r} {reason}")


def _check_point(point: int, height: int, width: int) -> int:
    point = int(point)
    if not 0 <= point < height * width:
        raise ValueError(f"action {point} is not a point on the {height}x{width} board")
    return point


# --- GTP vertices ----------------------------------------------------------------


def point_to_vertex(point: int, height: int, width: int) -> str:
    """Point -> GTP vertex (`D4`); row 0 is printed as `height`. ValueError for a point off the board."""
    r, c = divmod(_check_point(point, height, width), width)
    return f"{COLUMNS[c]}{height - r}"


def vertex_to_point(text: str, height: int, width: int) -> int:
    """GTP vertex (`D4`, any case, surrounding spaces ignored) -> point; NotationError naming the text."""
    t = text.strip().upper()
    if len(t) < 2 or t[0] not in COLUMNS or not t[1:].isdigit():
        raise NotationError(text, "is not a board vertex")
    c = COLUMNS.index(t[0])
    row_num = int(t[1:])
    if c >= width or not 1 <= row_num <= height:
        raise NotationError(text, f"is off the {height}x{width} board")
    return (height - row_num) * width + c


def action_to_vertex(action: int, height: int, width: int, pass_action: int | None = None) -> str:
    """Action -> GTP vertex, or `pass` where the game has one (`pass_action`, None for none)."""
    if pass_action is not None and action == pass_action:
        return PASS
    return point_to_vertex(action, height, width)


def vertex_to_action(text: str, height: int, width: int, pass_action: int | None = None) -> int:
    """GTP vertex or `pass` (any case) -> action; without a pass_action `pass` is not a vertex."""
    if pass_action is not None and text.strip().lower() == PASS:
        return pass_action
    return vertex_to_point(text, height, width)


# --- SGF points ----------------------------------------------------------------


def point_to_sgf(point: int, height: int, width: int) -> str:
    """Point -> SGF point (`dc`: column then row from the top left). ValueError for a point off the board."""
    r, c = divmod(_check_point(point, height, width), width)
    return SGF_LETTERS[c] + SGF_LETTERS[r]


def sgf_is_pass(text: str, height: int, width: int) -> bool:
    """Whether an SGF move value is a pass: empty, or `tt` on boards up to 19x19 (FF[3])."""
    return text == "" or (text == "tt" and height <= 19 and width <= 19)


def sgf_to_point(text: str, height: int, width: int) -> int:
    """SGF point (two letters, case matters) -> point; NotationError naming the text."""
    if len(text) != 2 or text[0] not in SGF_LETTERS or text[1] not in SGF_LETTERS:
        raise NotationError(text, "is not an SGF point (two letters)")
    c, r = SGF_LETTERS.index(text[0]), SGF_LETTERS.index(text[1])
    if c >= width or r >= height:
        raise NotationError(text, f"is off the {height}x{width} board")
    return r * width + c


# --- colours -------------------------------------------------------------------


def parse_colour(text: str, marks: bool = False) -> int:
    """`b`/`black` -> +1, `w`/`white` -> -1 (any case); with marks also the board's `x`/`o`.

    NotationError naming the text for anything else.
    """
    t = text.strip().lower()
    colour = _COLOURS.get(t, _MARKS.get(t) if marks else None)
    if colour is None:
        expected = "b, w, black, white, x or o" if marks else "b, w, black or white"
        raise NotationError(text, f"is not a colour (expected {expected})")
    return colour


def colour_letter(colour: int) -> str:
    """+1 -> `B`, -1 -> `W`: SGF's move properties and the winner in result text (GTP uses lower case)."""
    return "B" if colour > 0 else "W"


def colour_name(colour: int) -> str:
    """+1 -> `black`, -1 -> `white`."""
    return "black" if colour > 0 else "white"


# --- results -------------------------------------------------------------------


def result_text(winner: int, margin: float = 0.0, resigned: bool = False) -> str:
    """A finished game's result as SGF RE / GTP text.

    Args:
        winner: +1 black, -1 white, 0 a draw (`0`).
        margin: points won by (its sign is ignored); 0 writes no margin (`B+`, Gomoku).
        resigned: the loser resigned (`W+R`), whatever the margin.
    """
    if winner == 0:
        return "0"
    letter = colour_letter(winner)
    if resigned:
        return f"{letter}+R"
    if margin:
        return f"{letter}+{abs(margin):g}"
    return f"{letter}+"


def score_text(score: float) -> str:
    """A Go score (black minus white, komi included) as result text: `B+3.5`, `W+0.5`, `0` for a tie."""
    return result_text(1 if score > 0 else -1 if score < 0 else 0, score)
