"""A GTP v2 engine over zero's `Engine`, for Go (GoGui, Sabaki, gogui-twogtp, KGS bridges).

Each input line is one command, optionally prefixed by a numeric id that the
response echoes (`12 genmove b` -> `=12 D4`). A response is `= result` or
`? reason` followed by a blank line. A bad command never stops the engine.

The board is kept as a list of `GoPosition` values, one per move, so `undo`
is a pop. GTP lets a controller play the colour that is not to move; zero's
positions always alternate, so such a move is preceded by a pass for the
other side, and `undo` takes that inserted pass back with the move.
Gomoku has no standard GTP and is refused at start.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable, TextIO

from zero import __version__
from zero.games.base import IllegalMove, point_to_text, text_to_point
from zero.sgf import SgfError, game_to_sgf, parse_sgf

MIN_SIZE, MAX_SIZE = 5, 19


class GtpError(Exception):
    """A command that cannot be carried out; the message is the `?` response text."""


def score_text(score: float) -> str:
    """Black-minus-white score as GTP/SGF result text: `B+3.5`, `W+0.5`, `0`."""
    if score > 0:
        return f"B+{score:g}"
    if score < 0:
        return f"W+{-score:g}"
    return "0"


def _parse_colour(text: str) -> int:
    t = text.lower()
    if t in ("b", "black"):
        return 1
    if t in ("w", "white"):
        return -1
    raise GtpError(f"invalid color {text!r} (expected b, w, black or white)")


def _clean(line: str) -> str:
    """GTP preprocessing: drop control characters but tab, tabs to spaces, cut `#` comments."""
    line = "".join(ch for ch in line if ch == "\t" or ch >= " " and ch != "\x7f")
    line = line.replace("\t", " ")
    return line.split("#", 1)[0].strip()


class GtpEngine:
    """The GTP state machine: board, komi, clocks, and the engine that picks moves.

    Args:
        params: Params; `game.komi` is the starting komi.
        engine: anything with `game` (a Go Game) and `genmove(position) -> action | None`;
            `set_board(size=, komi=)` is used, where present, to check a new board size.
    """

    def __init__(self, params, engine):
        game = engine.game
        if game.name != "go":
            raise ValueError(
                f"GTP is defined for Go only, but the game is {game.name!r} (params game.name); "
                "use `zero play` to play Gomoku in the terminal"
            )
        self.params = params
        self.engine = engine
        self.size = game.height
        self.komi = float(getattr(game, "komi", params.game.komi))
        self.quit_requested = False
        self.time_settings: tuple[int, int, int] | None = None  # main time, byo-yomi time, stones
        self.time_left: dict[int, tuple[int, int]] = {}  # colour -> (seconds, stones)
        self._clear()
        self.commands: dict[str, Callable[[list[str]], str]] = {
            "protocol_version": lambda a: self._no_args(a, "2"),
            "name": lambda a: self._no_args(a, "zero"),
            "version": lambda a: self._no_args(a, __version__),
            "known_command": self.cmd_known_command,
            "list_commands": lambda a: self._no_args(a, "\n".join(self.commands)),
            "quit": self.cmd_quit,
            "boardsize": self.cmd_boardsize,
            "clear_board": lambda a: self._no_args(a, "", self._clear),
            "komi": self.cmd_komi,
            "play": self.cmd_play,
            "genmove": self.cmd_genmove,
            "reg_genmove": lambda a: self.cmd_genmove(a, commit=False),
            "undo": self.cmd_undo,
            "showboard": lambda a: self._no_args(a, "\n" + self._board_text()),
            "final_score": lambda a: self._no_args(a, score_text(self.position.score())),
            "final_status_list": self.cmd_final_status_list,
            "loadsgf": self.cmd_loadsgf,
            "printsgf": self.cmd_printsgf,
            "time_settings": self.cmd_time_settings,
            "time_left": self.cmd_time_left,
        }

    # --- the board -----------------------------------------------------------
    @property
    def position(self):
        return self.positions[-1]

    def _initial(self, size: int, komi: float):
        from zero.games.go import GoPosition

        return GoPosition.initial(size=size, komi=komi)

    def _clear(self) -> None:
        self.positions = [self._initial(self.size, self.komi)]
        self.inserted: list[bool] = []  # per move: a pass zero put in for a skipped turn

    def _replay(self, moves: list[int], inserted: list[bool]) -> None:
        """Rebuild the position stack from the empty board (after a komi or size change)."""
        positions = [self._initial(self.size, self.komi)]
        for a in moves:
            positions.append(positions[-1].play(a))
        self.positions, self.inserted = positions, list(inserted)

    def _vertex(self, action: int) -> str:
        if action == self.size * self.size:
            return "pass"
        return point_to_text(action, self.size, self.size)

    def _board_text(self) -> str:
        lines = [line for line in self.position.render().splitlines() if line.strip()]
        return "\n".join(lines)

    def _turn_to(self, colour: int) -> tuple[list, list[bool]]:
        """Positions and inserted flags to append so that `colour` is to move (a pass for the other side)."""
        if self.position.to_play == colour:
            return [], []
        try:
            return [self.position.play(self.size * self.size)], [True]
        except IllegalMove as e:
            raise GtpError(f"cannot pass for the other side first: {e.reason}") from None

    # --- commands ------------------------------------------------------------
    @staticmethod
    def _no_args(args: list[str], response: str, action: Callable[[], None] | None = None) -> str:
        if args:
            raise GtpError(f"wrong number of arguments: expected none, got {len(args)}")
        if action is not None:
            action()
        return response

    @staticmethod
    def _nargs(args: list[str], *counts: int, usage: str) -> None:
        if len(args) not in counts:
            raise GtpError(f"wrong number of arguments (usage: {usage})")

    def cmd_known_command(self, args: list[str]) -> str:
        self._nargs(args, 1, usage="known_command NAME")
        return "true" if args[0] in self.commands else "false"

    def cmd_quit(self, args: list[str]) -> str:
        self.quit_requested = True
        return ""

    def _check_size(self, size: int) -> None:
        if not MIN_SIZE <= size <= MAX_SIZE:
            raise GtpError("unacceptable size")
        set_board = getattr(self.engine, "set_board", None)
        if set_board is not None and size != self.engine.game.height:
            try:
                set_board(size=size, komi=self.komi)
            except ValueError:  # CheckpointError: the network is for another board
                raise GtpError("unacceptable size") from None

    def cmd_boardsize(self, args: list[str]) -> str:
        self._nargs(args, 1, usage="boardsize SIZE")
        try:
            size = int(args[0])
        except ValueError:
            raise GtpError(f"boardsize not an integer: {args[0]!r}") from None
        self._check_size(size)
        self.size = size
        self._clear()
        return ""

    def cmd_komi(self, args: list[str]) -> str:
        self._nargs(args, 1, usage="komi FLOAT")
        try:
            komi = float(args[0])
        except ValueError:
            raise GtpError(f"komi not a float: {args[0]!r}") from None
        if komi != komi or abs(komi) == float("inf"):
            raise GtpError(f"komi not a finite number: {args[0]!r}")
        self.komi = komi
        self._replay(list(self.position.moves), self.inserted)
        return ""

    def _parse_vertex(self, text: str) -> int:
        if text.lower() == "pass":
            return self.size * self.size
        try:
            return text_to_point(text, self.size, self.size)
        except ValueError as e:
            raise GtpError(f"invalid vertex: {e}") from None

    def cmd_play(self, args: list[str]) -> str:
        self._nargs(args, 2, usage="play COLOR VERTEX")
        colour = _parse_colour(args[0])
        action = self._parse_vertex(args[1])
        extra, flags = self._turn_to(colour)
        before = extra[-1] if extra else self.position
        try:
            after = before.play(action)
        except IllegalMove as e:
            raise GtpError(f"illegal move {args[1]}: {e.reason}") from None
        self.positions += extra + [after]
        self.inserted += flags + [False]
        return ""

    def cmd_genmove(self, args: list[str], commit: bool = True) -> str:
        self._nargs(args, 1, usage="genmove COLOR")
        colour = _parse_colour(args[0])
        extra, flags = self._turn_to(colour)
        position = extra[-1] if extra else self.position
        if position.is_over:  # two passes: nothing is legal but passing again
            return "pass"
        try:
            action = self.engine.genmove(position)
        except ValueError as e:  # e.g. a checkpoint that cannot play this board
            raise GtpError(f"cannot generate a move: {e}") from None
        if action is None:
            return "resign"
        after = position.play(action)
        if commit:
            self.positions += extra + [after]
            self.inserted += flags + [False]
        return self._vertex(action)

    def cmd_undo(self, args: list[str]) -> str:
        self._no_args(args, "")
        if not self.inserted:
            raise GtpError("cannot undo")
        self.positions.pop()
        self.inserted.pop()
        while self.inserted and self.inserted[-1]:
            self.positions.pop()
            self.inserted.pop()
        return ""

    def cmd_final_status_list(self, args: list[str]) -> str:
        """Tromp-Taylor counts every stone on the board as alive: no dead stones, no seki."""
        self._nargs(args, 1, usage="final_status_list alive|dead|seki")
        status = args[0].lower()
        if status not in ("alive", "dead", "seki"):
            raise GtpError(f"invalid status {args[0]!r} (expected alive, dead or seki)")
        if status != "alive":
            return ""
        board = self.position.board.reshape(-1)
        return " ".join(self._vertex(int(p)) for p in board.nonzero()[0])

    def cmd_loadsgf(self, args: list[str]) -> str:
        self._nargs(args, 1, 2, usage="loadsgf FILE [MOVE_NUMBER]")
        number = None
        if len(args) == 2:
            try:
                number = int(args[1])
            except ValueError:
                raise GtpError(f"move number not an integer: {args[1]!r}") from None
            if number < 1:
                raise GtpError(f"move number must be at least 1, got {number}")
        try:
            text = Path(args[0]).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise GtpError(f"cannot load file {args[0]}: {getattr(e, 'strerror', None) or e}") from None
        try:
            record = parse_sgf(text)
        except SgfError as e:
            raise GtpError(f"cannot load file {args[0]}: {e}") from None
        if record.game != "go":
            raise GtpError(f"cannot load file {args[0]}: it is a {record.game} game, not Go")
        if record.size is None:
            raise GtpError(f"cannot load file {args[0]}: the board is not square")
        moves = record.moves if number is None else record.moves[: number - 1]  # before move `number`
        try:
            self._check_size(record.size)
        except GtpError as e:
            raise GtpError(f"cannot load file {args[0]}: {e} {record.size}") from None
        old = (self.size, self.komi, self.positions, self.inserted)
        self.size = record.size
        if record.komi is not None:
            self.komi = record.komi
        try:
            self._replay(moves, [False] * len(moves))
        except IllegalMove as e:
            self.size, self.komi, self.positions, self.inserted = old
            raise GtpError(f"cannot load file {args[0]}: {e.args[0].splitlines()[0]}") from None
        return ""

    def sgf(self) -> str:
        """The game so far as SGF (with its Tromp-Taylor result once both sides have passed)."""
        result = score_text(self.position.score()) if self.position.is_over else None
        return game_to_sgf(
            list(self.position.moves), game="go", size=self.size, komi=self.komi,
            result=result, black=None, white=None,
        )

    def cmd_printsgf(self, args: list[str]) -> str:
        self._nargs(args, 0, 1, usage="printsgf [FILE]")
        text = self.sgf()
        if not args:
            return text.rstrip("\n")
        path = Path(args[0])
        try:
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(path)
        except OSError as e:
            raise GtpError(f"cannot write {args[0]}: {e.strerror}") from None
        return ""

    def cmd_time_settings(self, args: list[str]) -> str:
        self._nargs(args, 3, usage="time_settings MAIN_TIME BYO_YOMI_TIME BYO_YOMI_STONES")
        try:
            values = tuple(int(float(a)) for a in args)
        except ValueError:
            raise GtpError(f"time_settings arguments must be integers: {' '.join(args)}") from None
        self.time_settings = values
        self.time_left = {}
        return ""

    def cmd_time_left(self, args: list[str]) -> str:
        self._nargs(args, 3, usage="time_left COLOR TIME STONES")
        colour = _parse_colour(args[0])
        try:
            self.time_left[colour] = (int(float(args[1])), int(args[2]))
        except ValueError:
            raise GtpError(f"time_left needs integer time and stones: {' '.join(args[1:])}") from None
        return ""

    # --- the protocol --------------------------------------------------------
    def handle(self, line: str) -> str | None:
        """The full response to one input line (ending in a blank line), or None for empty/comment lines."""
        line = _clean(line)
        if not line:
            return None
        words = line.split()
        ident = ""
        if words[0].isdigit():
            ident = words.pop(0)
            if not words:
                return f"?{ident} no command after id\n\n"
        name, args = words[0], words[1:]
        command = self.commands.get(name)
        if command is None:
            return f"?{ident} unknown command\n\n"
        try:
            result = command(args)
        except GtpError as e:
            return f"?{ident} {e}\n\n"
        except Exception as e:  # a bug must not take the engine down mid-game
            return f"?{ident} internal error in {name}: {type(e).__name__}: {e}\n\n"
        # An empty line ends a GTP response, so no line after the first may be blank.
        first, *rest = result.split("\n")
        result = "\n".join([first] + [part for part in rest if part.strip()])
        return f"={ident} {result}\n\n"

    def run(self, stdin: TextIO, stdout: TextIO) -> None:
        """Answer commands from stdin until `quit` or end of input."""
        for line in iter(stdin.readline, ""):  # not `for line in stdin`: answer each line as it comes
            response = self.handle(line)
            if response is None:
                continue
            stdout.write(response)
            stdout.flush()
            if self.quit_requested:
                return


def run_gtp(params, model: str | None, visits: int | None, stdin: TextIO, stdout: TextIO,
            stderr: TextIO | None = None) -> int:
    """Serve GTP with the network in `model` (None: a fresh one); exit status 0, or 2 if refused."""
    stderr = stderr if stderr is not None else sys.stderr
    if params.game.name != "go":
        print(f"zero gtp: error: GTP is defined for Go only, but game.name is {params.game.name!r}; "
              "use `zero play` to play Gomoku in the terminal", file=stderr)
        return 2
    from zero.engine import Engine

    try:
        engine = Engine(params, checkpoint=model, visits=visits)
    except ValueError as e:  # CheckpointError names the file and what is wrong
        print(f"zero gtp: error: {e}", file=stderr)
        return 2
    GtpEngine(params, engine).run(stdin, stdout)
    return 0


def main(argv: list[str] | None = None) -> int:
    """`python -m zero.gtp [--params FILE] [--set k=v] [--model PATH] [--visits N]`."""
    from zero.config import ConfigError, load_params

    parser = argparse.ArgumentParser(prog="zero gtp", description="GTP v2 engine on stdin/stdout")
    parser.add_argument("--params", default=None, help="params file (default: params.yaml if present)")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    parser.add_argument("--model", default=None, help="network checkpoint (default: a fresh network)")
    parser.add_argument("--visits", type=int, default=None)
    args = parser.parse_args(argv)
    path = args.params
    if path is None and Path("params.yaml").is_file():
        path = "params.yaml"
    try:
        params = load_params(path, args.set)
    except ConfigError as e:
        print(f"zero gtp: error: {e}", file=sys.stderr)
        return 2
    return run_gtp(params, args.model, args.visits, sys.stdin, sys.stdout)


if __name__ == "__main__":
    sys.exit(main())
