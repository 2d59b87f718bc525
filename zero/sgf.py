"""SGF (FF[4]) records of zero's games: writing them and reading their main line.

Moves are actions in zero's layout: row-major `row * width + col` with row 0
at the top, and for Go `height * width` is pass. SGF points are column letter
then row letter with row `a` at the top, so the two layouts agree and no
flipping is needed. Points use `a`..`z` then `A`..`Z` (boards up to 52); `zero.notation`
writes and reads them.

Only what zero needs is read: the root's game, board, komi, result and players,
and the moves of the first variation. Setup stones (AB/AW/AE), which zero's
positions cannot represent, are refused with a clear error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from zero import __version__
from zero.notation import SGF_LETTERS, NotationError, colour_letter, point_to_sgf, sgf_is_pass, sgf_to_point

GO_RULES = "Tromp-Taylor"
GO_RULES_NOTE = "Tromp-Taylor area scoring, positional superko, suicide not allowed"
_GM = {"go": 1, "gomoku": 4}
_GM_NAMES = {v: k for k, v in _GM.items()}


class SgfError(ValueError):
    """SGF text that cannot be read: the message says what is wrong and where."""


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("]", "\\]")


def game_to_sgf(
    moves: list[int],
    *,
    game: str = "go",
    size: int = 9,
    height: int | None = None,
    width: int | None = None,
    komi: float = 7.5,
    result: str | None = None,
    black: str | None = "zero",
    white: str | None = "zero",
    date: str | None = None,
    comment: str | None = None,
    extra: dict[str, str] | None = None,
) -> str:
    """The SGF record of a game that starts from the empty board with black to move.

    Args:
        moves: actions, black first, colours alternating (Go passes are `height * width`).
        game: "go" (GM[1]) or "gomoku" (GM[4]).
        size: the side of a square board; `height`/`width` override it (rectangles, Gomoku).
        komi: written as KM for Go only.
        result: SGF result text such as "B+3.5", "W+R", "0"; omitted when None.
        date: DT value (YYYY-MM-DD); omitted when None so records are reproducible.
        black, white: player names (PB/PW); omitted when None.
        comment: free text for the root's C property.
        extra: more root properties, e.g. {"EV": "gate 12"}; values are escaped.
    """
    if game not in _GM:
        raise ValueError(f"game must be 'go' or 'gomoku', got {game!r}")
    h = height if height is not None else size
    w = width if width is not None else size
    if not (1 <= h <= len(SGF_LETTERS) and 1 <= w <= len(SGF_LETTERS)):
        raise ValueError(f"board {h}x{w} cannot be written in SGF (sides 1..{len(SGF_LETTERS)})")
    n = h * w
    pass_action = n if game == "go" else -1

    props: list[tuple[str, str]] = [
        ("FF", "4"),
        ("GM", str(_GM[game])),
        ("CA", "UTF-8"),
        ("AP", f"zero:{__version__}"),
        ("SZ", str(h) if h == w else f"{w}:{h}"),
    ]
    if game == "go":
        props += [("KM", f"{komi:g}"), ("RU", GO_RULES), ("GC", GO_RULES_NOTE)]
    props += [(k, v) for k, v in (("PB", black), ("PW", white)) if v is not None]
    if date is not None:
        props.append(("DT", date))
    if result is not None:
        props.append(("RE", result))
    if comment is not None:
        props.append(("C", comment))
    for key, value in (extra or {}).items():
        if not re.fullmatch(r"[A-Z]+", key):
            raise ValueError(f"SGF property name {key!r} must be upper-case letters")
        props.append((key, str(value)))

    root = "(;" + "".join(f"{k}[{_escape(v)}]" for k, v in props)
    nodes = []
    for i, a in enumerate(moves):
        colour = colour_letter(1 if i % 2 == 0 else -1)
        if a == pass_action:
            nodes.append(f";{colour}[]")
        elif 0 <= a < n:
            nodes.append(f";{colour}[{point_to_sgf(a, h, w)}]")
        else:
            raise ValueError(f"move {i + 1} is action {a}, not a point or pass on a {h}x{w} {game} board")
    lines = [root]
    for i in range(0, len(nodes), 10):
        lines.append("".join(nodes[i : i + 10]))
    return "\n".join(lines) + ")\n"


# --- reading -------------------------------------------------------------------


@dataclass
class SgfGame:
    """The main line of one SGF game, in zero's terms."""

    game: str  # "go" or "gomoku"
    height: int
    width: int
    komi: float | None  # None when the record has no KM
    result: str | None
    moves: list[int]  # actions, black first, alternating (a Go pass fills a skipped turn)
    black: str | None = None
    white: str | None = None
    properties: dict[str, list[str]] = field(default_factory=dict)  # the root node's, raw values

    @property
    def size(self) -> int | None:
        """The side of a square board, None for a rectangle."""
        return self.height if self.height == self.width else None


class _Reader:
    """Recursive-descent reader of SGF collections into nested (nodes, children) trees."""

    def __init__(self, text: str):
        self.text = text
        self.i = 0

    def where(self, i: int | None = None) -> str:
        i = self.i if i is None else i
        line = self.text.count("\n", 0, i) + 1
        col = i - (self.text.rfind("\n", 0, i) + 1) + 1
        return f"line {line}, column {col}"

    def fail(self, what: str, i: int | None = None):
        raise SgfError(f"{what} at {self.where(i)}")

    def skip_ws(self) -> None:
        while self.i < len(self.text) and self.text[self.i].isspace():
            self.i += 1

    def peek(self) -> str:
        self.skip_ws()
        return self.text[self.i] if self.i < len(self.text) else ""

    def collection(self) -> list:
        # Anything before the first "(" is ignored, as the spec allows.
        start = self.text.find("(")
        if start < 0:
            raise SgfError("no game tree found: SGF text must contain '(;'")
        self.i = start
        trees = [self.game_tree()]
        while self.peek() == "(":
            trees.append(self.game_tree())
        return trees

    def game_tree(self):
        if self.peek() != "(":
            self.fail("expected '('")
        open_at = self.i
        self.i += 1
        nodes = []
        while self.peek() == ";":
            nodes.append(self.node())
        if not nodes:
            self.fail("game tree has no node (expected ';')")
        children = []
        while self.peek() == "(":
            children.append(self.game_tree())
        c = self.peek()
        if c != ")":
            if c == "":
                raise SgfError(f"game tree opened at {self.where(open_at)} is not closed (missing ')')")
            self.fail(f"unexpected {c!r}")
        self.i += 1
        return nodes, children

    def node(self) -> dict[str, list[str]]:
        self.i += 1  # the ';'
        props: dict[str, list[str]] = {}
        while True:
            c = self.peek()
            if not c.isalpha():
                return props
            start = self.i
            while self.i < len(self.text) and self.text[self.i].isalpha():
                self.i += 1
            # FF[3] allowed lower-case letters inside names (AddBlack); only capitals count.
            name = "".join(ch for ch in self.text[start : self.i] if ch.isupper())
            if not name:
                self.fail(f"property name {self.text[start:self.i]!r} has no capital letters", start)
            if self.peek() != "[":
                self.fail(f"property {name} has no value (expected '[')")
            if name in props:
                self.fail(f"property {name} appears twice in one node", start)
            values = []
            while self.peek() == "[":
                values.append(self.value())
            props[name] = values

    def value(self) -> str:
        open_at = self.i
        self.i += 1
        out = []
        text = self.text
        while self.i < len(text):
            ch = text[self.i]
            if ch == "\\":
                if self.i + 1 >= len(text):
                    break
                nxt = text[self.i + 1]
                self.i += 2
                if nxt == "\r" and self.i < len(text) and text[self.i] == "\n":
                    self.i += 1
                if nxt in "\r\n":
                    continue  # soft line break
                out.append(nxt)
                continue
            if ch == "]":
                self.i += 1
                return "".join(out)
            out.append(ch)
            self.i += 1
        self.fail("property value is not closed (missing ']')", open_at)


def _main_line(tree) -> list[dict[str, list[str]]]:
    nodes, children = tree
    out = list(nodes)
    while children:
        nodes, children = children[0]
        out.extend(nodes)
    return out


def _parse_size(values: list[str]) -> tuple[int, int]:
    text = values[0].strip()
    try:
        if ":" in text:
            w, h = (int(p) for p in text.split(":"))
        else:
            w = h = int(text)
    except ValueError:
        raise SgfError(f"SZ[{text}] is not a board size (expected N or columns:rows)") from None
    if not (1 <= w <= len(SGF_LETTERS) and 1 <= h <= len(SGF_LETTERS)):
        raise SgfError(f"SZ[{text}] is outside 1..{len(SGF_LETTERS)}")
    return h, w


def parse_sgf(text: str) -> SgfGame:
    """Read the first game of an SGF collection, following the first variation.

    Raises:
        SgfError: the text is not SGF, names an unsupported game, has setup
            stones, or a move that is not on the board.
    """
    reader = _Reader(text)
    trees = reader.collection()
    nodes = _main_line(trees[0])
    root = nodes[0]

    def first(name: str) -> str | None:
        return root[name][0] if name in root else None

    gm_text = (first("GM") or "1").strip()
    try:
        gm = int(gm_text)
    except ValueError:
        raise SgfError(f"GM[{gm_text}] is not a number") from None
    if gm not in _GM_NAMES:
        raise SgfError(f"GM[{gm}] is not a game zero plays (1 = Go, 4 = Gomoku)")
    game = _GM_NAMES[gm]
    if "SZ" in root:
        height, width = _parse_size(root["SZ"])
    else:
        height = width = 19 if game == "go" else 15  # the SGF defaults
    komi = None
    if first("KM") is not None:
        try:
            komi = float(first("KM"))
        except ValueError:
            raise SgfError(f"KM[{first('KM')}] is not a number") from None

    n = height * width
    pass_action = n if game == "go" else None
    moves: list[int] = []
    for number, node in enumerate(nodes):
        for setup in ("AB", "AW", "AE"):
            if setup in node:
                raise SgfError(
                    f"node {number} has setup stones ({setup}): setup stones are not supported, "
                    "only games played from the empty board"
                )
        if "B" in node and "W" in node:
            raise SgfError(f"node {number} has both a B and a W move")
        for colour in ("B", "W"):
            if colour not in node:
                continue
            value = node[colour][0].strip()
            action = _read_move(value, colour, number, height, width, pass_action)
            want = colour_letter(1 if len(moves) % 2 == 0 else -1)
            if colour != want:
                if pass_action is None:
                    raise SgfError(f"node {number}: {colour} moves twice in a row, which Gomoku has no pass for")
                moves.append(pass_action)  # the side that skipped its turn passed
            moves.append(action)

    return SgfGame(
        game=game,
        height=height,
        width=width,
        komi=komi,
        result=first("RE"),
        moves=moves,
        black=first("PB"),
        white=first("PW"),
        properties=root,
    )


def _read_move(value: str, colour: str, number: int, height: int, width: int, pass_action: int | None) -> int:
    if sgf_is_pass(value, height, width):
        if pass_action is None:
            raise SgfError(f"node {number}: {colour}[{value}] is a pass, which Gomoku does not have")
        return pass_action
    try:
        return sgf_to_point(value, height, width)
    except NotationError as e:
        raise SgfError(f"node {number}: {colour}[{value}] {e.reason}") from None
