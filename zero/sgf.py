"""SGF (FF[4]) records of zero's games: writing them, reading their main line, and collections of them.

Moves are actions in zero's layout: row-major `row * width + col` with row 0
at the top, and for Go `height * width` is pass. SGF points are column letter
then row letter with row `a` at the top, so the two layouts agree and no
flipping is needed. Points use `a`..`z` then `A`..`Z` (boards up to 52); `zero.notation`
writes and reads them.

sgfmill's grammar reads the text (tokens, escapes, variations, collections); what zero
needs is taken from it: the root's game, board, komi, result and players, and the
moves of the first variation. Setup stones (AB/AW/AE), which zero's positions cannot
represent, are refused with a clear error. Records are written here rather than by
sgfmill, whose writer sorts a node's properties and wraps lines by width (the golden
file's layout would drift) and whose points stop at 26 (zero's go to 52).

A match's or a ladder pairing's games are kept as one gzip-compressed collection,
`<name>.sgf.gz`: the records one after another, `(;GM[1]...)\n(;GM[1]...)\n`.
"""

from __future__ import annotations

import gzip
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from sgfmill import sgf_grammar

from zero import __version__
from zero.fileio import atomic_write
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


_START = re.compile(rb"\(\s*;")  # where a game tree starts (sgfmill looks for the same)
_SPACE = re.compile(rb"[\t\n\r\v\f]")  # whitespace that SGF's Text type maps


def _trees(data: bytes, first_only: bool) -> list:
    """The game trees of SGF bytes, read by sgfmill's grammar: the first one, or every one of a collection."""
    if not _START.search(data):
        raise SgfError("no game tree found: SGF text must contain '(;'")
    try:
        return [sgf_grammar.parse_sgf_game(data)] if first_only else sgf_grammar.parse_sgf_collection(data)
    except ValueError as e:
        raise SgfError(_explain(data, str(e))) from None


def _explain(data: bytes, message: str) -> str:
    """sgfmill's parse error with where it is: the game of a collection and, where sgfmill's tokeniser
    stopped short, the line and column of what it could not read."""
    message = re.sub(r"^error parsing game \d+: ", "", message)
    start, number = 0, 0
    while True:  # find the game that fails, and where the tokeniser stopped in it
        tokens, stop = sgf_grammar.tokenise(data, start)
        try:
            sgf_grammar.parse_sgf_game(data[start:stop])
        except ValueError:
            break
        start, number = stop, number + 1
    game = f" (game {number + 1} of the collection)" if number else ""
    rest = data[stop:].lstrip()
    at = len(data) - len(rest)
    opened = _where(data, _START.search(data, start).start())
    if sum(t == ("D", b"(") for t in tokens) == sum(t == ("D", b")") for t in tokens):
        return f"{message} in the game tree opened at {opened}{game}"  # read whole, but not a tree of nodes
    if not rest:
        return f"game tree opened at {opened} is not closed (missing ')'){game}"
    if rest[:1] == b"[":
        return f"property value is not closed (missing ']') at {_where(data, at)}{game}"
    return f"unexpected {rest[:1].decode('latin-1')!r} at {_where(data, at)}{game}"


def _where(data: bytes, i: int) -> str:
    line, line_start = data.count(b"\n", 0, i) + 1, data.rfind(b"\n", 0, i) + 1
    return f"line {line}, column {i - line_start + 1}"


def _text(raw: bytes) -> str:
    """A raw property value as text: escapes undone, soft line breaks dropped (SGF's Text type)."""
    plain = b"\\" not in raw and not _SPACE.search(raw)  # a move or a name: nothing to undo (most values)
    return (raw if plain else sgf_grammar.text_value(raw)).decode("utf-8", errors="replace")


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
    return _game(_trees(text.encode("utf-8"), first_only=True)[0])


def parse_collection(text: str) -> list[SgfGame]:
    """Every game of an SGF collection `(;...)(;...)`, in order; SgfError names the game that is wrong."""
    games = []
    for number, tree in enumerate(_trees(text.encode("utf-8"), first_only=False), start=1):
        try:
            games.append(_game(tree))
        except SgfError as e:
            raise SgfError(f"game {number} of the collection: {e}") from None
    return games


def _game(tree) -> SgfGame:
    """One game tree's main line in zero's terms."""
    nodes = [{name: [_text(v) for v in values] for name, values in node.items()}
             for node in sgf_grammar.main_sequence_iter(tree)]
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
            if len(node[colour]) > 1:  # sgfmill joins a property written twice into one with two values
                raise SgfError(f"node {number}: {colour} appears twice, or with two values: one move a node")
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


# --- collections: one gzip-compressed file of many games -------------------------------------------------------

COLLECTION_SUFFIX = ".sgf.gz"
MAX_COLLECTION_BYTES = 256 << 20  # a collection that unpacks to more is refused (not one of zero's)


def collection_bytes(texts: list[str]) -> bytes:
    """SGF records (each `(;...)`) as one gzip-compressed collection, the same bytes for the same games
    (no time or file name in the gzip header)."""
    body = "".join(t if t.endswith("\n") else t + "\n" for t in texts).encode("utf-8")
    return gzip.compress(body, compresslevel=9, mtime=0)


def write_collection(path: str | Path, texts: list[str]) -> Path:
    """Write SGF records as one gzip-compressed collection `path` (`<pairing>.sgf.gz`), atomically."""
    path = Path(path)
    if not path.name.endswith(COLLECTION_SUFFIX):
        raise ValueError(f"{path}: a collection's name ends in {COLLECTION_SUFFIX}")
    with atomic_write(path) as f:
        f.write(collection_bytes(texts))
    return path


def read_collection_text(path: str | Path) -> str:
    """The SGF text of a collection file (`.sgf.gz`, or a plain `.sgf`); SgfError names a file that cannot be
    read whole (truncated, not gzip, not UTF-8, or larger than MAX_COLLECTION_BYTES unpacked)."""
    path = Path(path)
    try:
        if path.name.endswith(".gz"):
            with gzip.open(path, "rb") as f:
                data = f.read(MAX_COLLECTION_BYTES + 1)
        else:
            data = path.read_bytes()
        if len(data) > MAX_COLLECTION_BYTES:
            raise SgfError(f"{path}: more than {MAX_COLLECTION_BYTES >> 20} MiB of SGF")
        return data.decode("utf-8")
    except FileNotFoundError:
        raise SgfError(f"{path}: no such SGF collection") from None
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as e:
        raise SgfError(f"{path}: not a readable gzip-compressed SGF collection ({e})") from None


def read_collection(path: str | Path) -> list[SgfGame]:
    """Every game of a collection file, in order; SgfError names the file (and the game) that is wrong."""
    text = read_collection_text(path)
    try:
        return parse_collection(text)
    except SgfError as e:
        raise SgfError(f"{path}: {e}") from None
