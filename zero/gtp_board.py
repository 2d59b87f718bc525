"""The GTP commands that set up and change the board: boardsize, clear_board, komi, play, undo, showboard,
loadsgf and printsgf.

The board is kept as a list of open-ended `GoPosition` values, one per move, so `undo` is a pop. As in
GNU Go, the game is over when the controller says so: `play` takes every legal move after passes and past
any move count, and positional superko spans the whole game. GTP lets a controller play the colour that
is not to move; zero's positions always alternate, so such a move is preceded by a pass for the other
side (`turn_to`), and `undo` takes that inserted pass back with the move.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Callable

from zero.games.base import IllegalMove
from zero.gtp_protocol import GtpError, colour_arg, int_arg, nargs, no_args
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


class GtpBoard:
    """The game a GTP controller sets up: board size, komi, and the positions so far.

    Args:
        engine: has `game` (a Go Game); used where present: `set_board(size=, komi=)` to check a new
            board size.
    """

    def __init__(self, engine):
        self.engine = engine
        self.size = engine.game.height
        self.komi = float(engine.game.komi)  # the starting komi
        self.clear()

    def commands(self) -> dict[str, Callable[[list[str]], str]]:
        return {
            "boardsize": self.cmd_boardsize,
            "clear_board": lambda a: no_args(a, "", self.clear),
            "komi": self.cmd_komi,
            "play": self.cmd_play,
            "undo": self.cmd_undo,
            "showboard": lambda a: no_args(a, "\n" + self.text()),
            "loadsgf": self.cmd_loadsgf,
            "printsgf": self.cmd_printsgf,
        }

    # --- the positions -------------------------------------------------------
    @property
    def position(self):
        return self.positions[-1]

    def _initial(self, size: int, komi: float):
        from zero.games.go import GoPosition

        return GoPosition.initial(size=size, komi=komi, open_ended=True,
                                  liberty_planes=self.engine.game.liberty_planes)

    def clear(self) -> None:
        self.positions = [self._initial(self.size, self.komi)]
        self.inserted: list[bool] = []  # per move: a pass zero put in for a skipped turn

    def _replay(self, moves: list[int], inserted: list[bool]) -> None:
        """Rebuild the position stack from the empty board (after a komi or size change)."""
        positions = [self._initial(self.size, self.komi)]
        for a in moves:
            positions.append(positions[-1].play(a))
        self.positions, self.inserted = positions, list(inserted)

    def text(self) -> str:
        lines = [line for line in self.position.render().splitlines() if line.strip()]
        return "\n".join(lines)

    def turn_to(self, colour: int) -> tuple[list, list[bool]]:
        """Positions and inserted flags to append so that `colour` is to move (a pass for the other side)."""
        if self.position.to_play == colour:
            return [], []
        try:
            return [self.position.play(self.size * self.size)], [True]
        except IllegalMove as e:
            raise GtpError(f"cannot pass for the other side first: {e.reason}") from None

    def extend(self, extra: list, flags: list[bool], after) -> None:
        """Append a move's position `after`, behind the inserted pass `turn_to` gave (`extra`, `flags`)."""
        self.positions += extra + [after]
        self.inserted += flags + [False]

    def ended_by_passes(self) -> bool:
        moves = self.position.moves
        return len(moves) >= 2 and moves[-1] == moves[-2] == self.size * self.size

    def sgf(self) -> str:
        """The game so far as SGF (with its Tromp-Taylor result when it ends in two passes)."""
        result = self.position.result_text() if self.ended_by_passes() else None
        return game_to_sgf(
            list(self.position.moves), game="go", size=self.size, komi=self.komi,
            result=result, black=None, white=None,
        )

    def _check_size(self, size: int) -> None:
        if not MIN_SIZE <= size <= MAX_SIZE:
            raise GtpError("unacceptable size")
        if size == self.engine.game.height:  # nothing to ask the engine (which may still be loading)
            return
        set_board = getattr(self.engine, "set_board", None)
        if set_board is not None:
            try:
                set_board(size=size, komi=self.komi)
            except ValueError:  # CheckpointError: the network is for another board
                raise GtpError("unacceptable size") from None

    # --- commands ------------------------------------------------------------
    def cmd_boardsize(self, args: list[str]) -> str:
        nargs(args, 1, usage="boardsize SIZE")
        size = int_arg(args[0], "boardsize")
        self._check_size(size)
        self.size = size
        self.clear()
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
        extra, flags = self.turn_to(colour)
        before = extra[-1] if extra else self.position
        try:
            after = before.play(action)
        except IllegalMove as e:
            raise GtpError(f"illegal move {args[1]}: {e.reason}") from None
        self.extend(extra, flags, after)
        return ""

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
        number = int_arg(args[1], "move number", least=1) if len(args) == 2 else None
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
