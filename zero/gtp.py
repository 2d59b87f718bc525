"""A GTP v2 engine over zero's `Engine`, for Go (GoGui, Sabaki, gogui-twogtp, KGS bridges).

A bad command never stops the engine: it gets a `?` response (the wire
level, ids and streamed responses are `zero.gtp_protocol`).

The board is kept as a list of open-ended `GoPosition` values, one per move,
so `undo` is a pop. As in GNU Go, the game is over when the controller says
so: `play` takes every legal move after passes and past any move count,
`genmove` answers for either colour at any time, and positional superko spans
the whole game. GTP lets a controller play the colour that is not to move;
zero's positions always alternate, so such a move is preceded by a pass for
the other side, and `undo` takes that inserted pass back with the move.
Gomoku has no standard GTP and is refused at start.

`genmove` searches `--visits` root visits, reusing the tree of the moves
played since the last search; after `time_settings` it also stops at a
per-move budget from the clock (`zero.gtp_clock`). lz-analyze,
final_status_list, final_score and kgs-genmove_cleanup are
`zero.gtp_analysis`.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
import time
from pathlib import Path
from typing import Callable, Iterator, TextIO

from zero import __version__
from zero.games.base import IllegalMove
from zero.gtp_analysis import AnalysisCommands
from zero.gtp_clock import Clock
from zero.gtp_protocol import (
    GtpError, InputLines, clean_line, colour_arg, count_arg, nargs, no_args, seconds_arg, stream_response,
)
from zero.sgf import SgfError, game_to_sgf, parse_sgf

MIN_SIZE, MAX_SIZE = 5, 19
MAX_SGF_BYTES = 4 << 20  # loadsgf refuses larger files

def read_sgf_file(path: str) -> str:
    """The text of a regular file of at most MAX_SGF_BYTES; GtpError for a FIFO, a device, or more.

    Opened without blocking, so a FIFO with no writer cannot hang the engine,
    and checked on the open descriptor, so what is read is what was checked.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as e:
        raise GtpError(f"cannot load file {path}: {e.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise GtpError(f"cannot load file {path}: not a regular file")
        if info.st_size > MAX_SGF_BYTES:
            raise GtpError(f"cannot load file {path}: larger than {MAX_SGF_BYTES} bytes")
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            total += len(chunk)
            if total > MAX_SGF_BYTES:  # it grew while being read
                raise GtpError(f"cannot load file {path}: larger than {MAX_SGF_BYTES} bytes")
            chunks.append(chunk)
    except OSError as e:
        raise GtpError(f"cannot load file {path}: {e.strerror}") from None
    finally:
        os.close(fd)
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError:
        raise GtpError(f"cannot load file {path}: not UTF-8 text") from None


class GtpEngine(AnalysisCommands):
    """The GTP state machine: board, komi, clock, and the engine that picks moves.

    Args:
        engine: anything with `game` (a Go Game) and `genmove(position, seconds=None) -> action | None`;
            used where present: `set_board(size=, komi=)` to check a new board size, `dead_stones(position)`
            for final_status_list (else every stone is alive), `cleanup_move(position, seconds)` for
            kgs-genmove_cleanup (else genmove), `think` and `candidates` for lz-analyze.
    """

    def __init__(self, engine):
        game = engine.game
        if game.name != "go":
            raise ValueError(
                f"GTP is defined for Go only, but the game is {game.name!r} (params game.name); "
                "use `zero play` to play Gomoku in the terminal"
            )
        self.engine = engine
        self.size = game.height
        self.komi = float(game.komi)  # the starting komi
        self.quit_requested = False
        self.clock = Clock()
        # While serving (`run`): write part of a response now, and wait up to t seconds for the next line.
        self._write: Callable[[str], None] | None = None
        self._pending: Callable[[float | None], bool] | None = None
        self._clear()
        self.commands: dict[str, Callable[[list[str]], str | Iterator[str]]] = {
            "protocol_version": lambda a: no_args(a, "2"),
            "name": lambda a: no_args(a, "zero"),
            "version": lambda a: no_args(a, __version__),
            "known_command": self.cmd_known_command,
            "list_commands": lambda a: no_args(a, "\n".join(self.commands)),
            "quit": self.cmd_quit,
            "boardsize": self.cmd_boardsize,
            "clear_board": lambda a: no_args(a, "", self._clear),
            "komi": self.cmd_komi,
            "play": self.cmd_play,
            "genmove": self.cmd_genmove,
            "reg_genmove": lambda a: self.cmd_genmove(a, commit=False),
            "kgs-genmove_cleanup": self.cmd_kgs_genmove_cleanup,
            "undo": self.cmd_undo,
            "showboard": lambda a: no_args(a, "\n" + self._board_text()),
            "final_score": self.cmd_final_score,
            "final_status_list": self.cmd_final_status_list,
            "loadsgf": self.cmd_loadsgf,
            "printsgf": self.cmd_printsgf,
            "time_settings": self.cmd_time_settings,
            "time_left": self.cmd_time_left,
            "lz-analyze": self.cmd_lz_analyze,
        }

    # --- the board -----------------------------------------------------------
    @property
    def position(self):
        return self.positions[-1]

    def _initial(self, size: int, komi: float):
        from zero.games.go import GoPosition

        return GoPosition.initial(size=size, komi=komi, open_ended=True,
                                  liberty_planes=self.engine.game.liberty_planes)

    def _clear(self) -> None:
        self.positions = [self._initial(self.size, self.komi)]
        self.inserted: list[bool] = []  # per move: a pass zero put in for a skipped turn

    def _replay(self, moves: list[int], inserted: list[bool]) -> None:
        """Rebuild the position stack from the empty board (after a komi or size change)."""
        positions = [self._initial(self.size, self.komi)]
        for a in moves:
            positions.append(positions[-1].play(a))
        self.positions, self.inserted = positions, list(inserted)

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

    def _ended_by_passes(self) -> bool:
        moves = self.position.moves
        return len(moves) >= 2 and moves[-1] == moves[-2] == self.size * self.size

    # --- commands ------------------------------------------------------------
    def cmd_known_command(self, args: list[str]) -> str:
        nargs(args, 1, usage="known_command NAME")
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
        nargs(args, 1, usage="boardsize SIZE")
        try:
            size = int(args[0])
        except ValueError:
            raise GtpError(f"boardsize not an integer: {args[0]!r}") from None
        self._check_size(size)
        self.size = size
        self._clear()
        return ""

    def cmd_komi(self, args: list[str]) -> str:
        nargs(args, 1, usage="komi FLOAT")
        try:
            komi = float(args[0])
        except ValueError:
            raise GtpError(f"komi not a float: {args[0]!r}") from None
        if komi != komi or abs(komi) == float("inf"):
            raise GtpError(f"komi not a finite number: {args[0]!r}")
        self.komi = komi
        self._replay(list(self.position.moves), self.inserted)
        return ""

    def cmd_play(self, args: list[str]) -> str:
        nargs(args, 2, usage="play COLOR VERTEX")
        colour = colour_arg(args[0])
        try:
            action = self.position.game.text_to_action(args[1])
        except ValueError as e:
            raise GtpError(f"invalid vertex: {e}") from None
        extra, flags = self._turn_to(colour)
        before = extra[-1] if extra else self.position
        try:
            after = before.play(action)
        except IllegalMove as e:
            raise GtpError(f"illegal move {args[1]}: {e.reason}") from None
        self.positions += extra + [after]
        self.inserted += flags + [False]
        return ""

    def cmd_genmove(self, args: list[str], commit: bool = True, usage: str = "genmove COLOR",
                    choose: Callable[[object, float | None], int | None] | None = None) -> str:
        """genmove, reg_genmove (commit=False), and kgs-genmove_cleanup (`choose`: the engine's cleanup_move).

        `choose(position, seconds)` picks the move, None to resign; by default the engine's genmove.
        """
        nargs(args, 1, usage=usage)
        start = time.monotonic()
        colour = colour_arg(args[0])
        extra, flags = self._turn_to(colour)
        position = extra[-1] if extra else self.position
        seconds = self.clock.budget(colour, self.size, int((position.board == 0).sum()))
        try:
            if choose is not None:
                action = choose(position, seconds)
            else:
                action = self.engine.genmove(position, seconds=seconds)
        except ValueError as e:  # e.g. a checkpoint that cannot play this board
            raise GtpError(f"cannot generate a move: {e}") from None
        if commit:
            self.clock.spend(colour, time.monotonic() - start)
        if action is None:
            return "resign"
        after = position.play(action)
        if commit:
            self.positions += extra + [after]
            self.inserted += flags + [False]
        return position.game.action_to_text(action)

    def cmd_undo(self, args: list[str]) -> str:
        no_args(args, "")
        if not self.inserted:
            raise GtpError("cannot undo")
        self.positions.pop()
        self.inserted.pop()
        while self.inserted and self.inserted[-1]:
            self.positions.pop()
            self.inserted.pop()
        return ""

    def cmd_loadsgf(self, args: list[str]) -> str:
        nargs(args, 1, 2, usage="loadsgf FILE [MOVE_NUMBER]")
        number = None
        if len(args) == 2:
            try:
                number = int(args[1])
            except ValueError:
                raise GtpError(f"move number not an integer: {args[1]!r}") from None
            if number < 1:
                raise GtpError(f"move number must be at least 1, got {number}")
        text = read_sgf_file(args[0])
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
        """The game so far as SGF (with its Tromp-Taylor result when it ends in two passes)."""
        result = self.position.result_text() if self._ended_by_passes() else None
        return game_to_sgf(
            list(self.position.moves), game="go", size=self.size, komi=self.komi,
            result=result, black=None, white=None,
        )

    def cmd_printsgf(self, args: list[str]) -> str:
        nargs(args, 0, 1, usage="printsgf [FILE]")
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

    # --- time ----------------------------------------------------------------
    @property
    def time_settings(self) -> tuple[float, float, int] | None:
        """(main time, byo-yomi time, byo-yomi stones) as time_settings gave them; None before."""
        return self.clock.settings

    @property
    def time_left(self) -> dict[int, tuple[float, int]]:
        """colour -> (seconds, stones; 0 in main time) as time_left told or the clock counted."""
        return self.clock.left

    def cmd_time_settings(self, args: list[str]) -> str:
        nargs(args, 3, usage="time_settings MAIN_TIME BYO_YOMI_TIME BYO_YOMI_STONES")
        main = seconds_arg(args[0], "main time")
        byo = seconds_arg(args[1], "byo-yomi time")
        stones = count_arg(args[2], "byo-yomi stones")
        self.clock = Clock((main, byo, stones))
        return ""

    def cmd_time_left(self, args: list[str]) -> str:
        nargs(args, 3, usage="time_left COLOR TIME STONES")
        colour = colour_arg(args[0])
        self.clock.left[colour] = (seconds_arg(args[1], "time left"), count_arg(args[2], "stones left"))
        return ""

    # --- the protocol --------------------------------------------------------
    def handle(self, line: str) -> str | None:
        """The response to one input line (ending in a blank line), or None for empty/comment lines.

        A streaming command (lz-analyze) writes its first lines as it goes while
        serving; what is returned is then the rest of its response.
        """
        line = clean_line(line)
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
        if not isinstance(result, str):
            return stream_response(ident, name, result, self._write)
        # An empty line ends a GTP response, so no line after the first may be blank.
        first, *rest = result.split("\n")
        result = "\n".join([first] + [part for part in rest if part.strip()])
        return f"={ident} {result}\n\n"

    def run(self, stdin: TextIO, stdout: TextIO) -> None:
        """Answer commands from stdin until `quit` or end of input."""
        lines = InputLines(stdin)  # read on a thread, to answer each line as it comes and to notice the next one

        def write(text: str) -> None:
            stdout.write(text)
            stdout.flush()

        self._write, self._pending = write, lines.wait
        try:
            while True:
                line = lines.get()
                if line is None:
                    return
                response = self.handle(line)
                if response is None:
                    continue
                write(response)
                if self.quit_requested:
                    return
        finally:
            self._write = self._pending = None


def run_gtp(params, model: str | None, visits: int | None, stdin: TextIO, stdout: TextIO,
            stderr: TextIO | None = None) -> int:
    """Serve GTP with the network in `model` (None: a fresh one); exit status 0, or 2 if refused."""
    stderr = stderr if stderr is not None else sys.stderr
    if params.game.name != "go":
        print(f"zero gtp: error: GTP is defined for Go only, but game.name is {params.game.name!r}; "
              "use `zero play` to play Gomoku in the terminal", file=stderr)
        return 2
    from zero.engine import Engine, EngineConfig

    try:
        engine = Engine(EngineConfig.from_params(params, visits), checkpoint=model)
    except ValueError as e:  # CheckpointError names the file and what is wrong
        print(f"zero gtp: error: {e}", file=stderr)
        return 2
    GtpEngine(engine).run(stdin, stdout)
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
