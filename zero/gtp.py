"""A GTP v2 engine over zero's `Engine`, for Go (GoGui, Sabaki, gogui-twogtp, KGS bridges).

Each input line is one command, optionally prefixed by a numeric id that the
response echoes (`12 genmove b` -> `=12 D4`). A response is `= result` or
`? reason` followed by a blank line. A bad command never stops the engine.

The board is kept as a list of open-ended `GoPosition` values, one per move,
so `undo` is a pop. As in GNU Go, the game is over when the controller says
so: `play` takes every legal move after passes and past any move count,
`genmove` answers for either colour at any time, and positional superko spans
the whole game. GTP lets a controller play the colour that is not to move;
zero's positions always alternate, so such a move is preceded by a pass for
the other side, and `undo` takes that inserted pass back with the move.
Gomoku has no standard GTP and is refused at start.

Beyond the standard commands:
- `genmove` searches `--visits` root visits, reusing the tree of the moves
  played since the last search; after `time_settings` it also stops at a
  per-move budget from the clock (`time_left`, or its own count of the time
  it used): the remaining main time spread over a third of the empty points
  (at least board-size moves) plus a byo-yomi stone's share, or in byo-yomi
  the period spread over its stones; 90% of that, less 50 ms for the pipes.
- `final_status_list` answers from the engine's own view: a chain is dead when
  random playouts to the end (`Engine.ownership`) leave its points more often
  in the opponent's Tromp-Taylor area than in its own. Seki stones count as
  alive under area scoring and are listed as alive; `seki` lists none.
  `final_score` counts the board Tromp-Taylor after removing those dead stones.
- `kgs-genmove_cleanup` is `genmove` that never resigns and never passes while
  opponent stones it considers dead are on the board: it plays on their
  liberties until they are captured (`Engine.cleanup_move`).
- `lz-analyze [COLOR] [INTERVAL]` (Leela Zero's form, which Sabaki and Lizzie
  read) answers `=`, then searches, writing every INTERVAL centiseconds
  (default 100) one line `info move D4 visits 120 winrate 5234 prior 1234
  lcb 5100 order 0 pv D4 C3 info move ...` over the root moves searched
  (winrate, prior and lcb in units of 0.01%, for the colour analysed; lcb is
  the 95% Wilson lower bound of the winrate), until the next command arrives,
  and then ends the response with the blank line. The tree is the one
  `genmove` uses, so it stops growing at `--visits`; the lines go on.
"""

from __future__ import annotations

import argparse
import collections
import math
import os
import stat
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Iterator, TextIO

from zero import __version__
from zero.games.base import IllegalMove
from zero.notation import NotationError, parse_colour
from zero.sgf import SgfError, game_to_sgf, parse_sgf

MIN_SIZE, MAX_SIZE = 5, 19
MAX_SGF_BYTES = 4 << 20  # loadsgf refuses larger files
TIME_SHARE, TIME_LAG = 0.9, 0.05  # of a move's time budget used, and seconds kept back for the pipes
DEFAULT_ANALYZE_INTERVAL = 100  # centiseconds between lz-analyze lines when none is given


class GtpError(Exception):
    """A command that cannot be carried out; the message is the `?` response text."""


def _colour(text: str) -> int:
    """A GTP colour argument as +1/-1, else GtpError naming it."""
    try:
        return parse_colour(text)
    except NotationError:
        raise GtpError(f"invalid color {text!r} (expected b, w, black or white)") from None


def _seconds(text: str, what: str) -> float:
    """A time in seconds from GTP text: finite and not negative, else GtpError naming it."""
    try:
        value = float(text)
    except ValueError:
        raise GtpError(f"{what} is not a number: {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise GtpError(f"{what} must be a finite number of seconds, at least 0: {text!r}")
    return value


def _count(text: str, what: str) -> int:
    """A whole number of stones from GTP text, at least 0, else GtpError naming it."""
    try:
        value = float(text)
    except ValueError:
        raise GtpError(f"{what} is not a number: {text!r}") from None
    if not math.isfinite(value) or value < 0 or value != int(value):
        raise GtpError(f"{what} must be a whole number, at least 0: {text!r}")
    return int(value)


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


class _Lines:
    """stdin read on a thread, so that a long command (lz-analyze) can tell when the next one arrives."""

    def __init__(self, stream: TextIO):
        self._items: collections.deque[str | None] = collections.deque()
        self._ready = threading.Condition()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: TextIO) -> None:
        try:
            for line in iter(stream.readline, ""):
                self._put(line)
        finally:
            self._put(None)  # end of input

    def _put(self, item: str | None) -> None:
        with self._ready:
            self._items.append(item)
            self._ready.notify_all()

    def get(self) -> str | None:
        """The next line, waiting for it; None at the end of input."""
        with self._ready:
            self._ready.wait_for(lambda: self._items)
            return self._items.popleft()

    def wait(self, timeout: float | None) -> bool:
        """Whether a line (or the end of input) is waiting, after waiting up to `timeout` seconds for one."""
        with self._ready:
            if timeout is None or timeout > 0:
                self._ready.wait_for(lambda: self._items, timeout)
            return bool(self._items)


def _clean(line: str) -> str:
    """GTP preprocessing: drop control characters but tab, tabs to spaces, cut `#` comments."""
    line = "".join(ch for ch in line if ch == "\t" or ch >= " " and ch != "\x7f")
    line = line.replace("\t", " ")
    return line.split("#", 1)[0].strip()


class GtpEngine:
    """The GTP state machine: board, komi, clocks, and the engine that picks moves.

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
        self.time_settings: tuple[float, float, int] | None = None  # main time, byo-yomi time, stones
        self.time_left: dict[int, tuple[float, int]] = {}  # colour -> (seconds, stones; 0 in main time)
        # While serving (`run`): write part of a response now, and wait up to t seconds for the next line.
        self._write: Callable[[str], None] | None = None
        self._pending: Callable[[float | None], bool] | None = None
        self._dead: tuple[object, set[int]] | None = None  # (position, its dead stones)
        self._clear()
        self.commands: dict[str, Callable[[list[str]], str | Iterator[str]]] = {
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
            "kgs-genmove_cleanup": lambda a: self.cmd_genmove(a, cleanup=True),
            "undo": self.cmd_undo,
            "showboard": lambda a: self._no_args(a, "\n" + self._board_text()),
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

        return GoPosition.initial(size=size, komi=komi, open_ended=True)

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

    def cmd_play(self, args: list[str]) -> str:
        self._nargs(args, 2, usage="play COLOR VERTEX")
        colour = _colour(args[0])
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

    def cmd_genmove(self, args: list[str], commit: bool = True, cleanup: bool = False) -> str:
        """genmove, reg_genmove (commit=False) and kgs-genmove_cleanup (cleanup=True)."""
        self._nargs(args, 1, usage="kgs-genmove_cleanup COLOR" if cleanup else "genmove COLOR")
        start = time.monotonic()
        colour = _colour(args[0])
        extra, flags = self._turn_to(colour)
        position = extra[-1] if extra else self.position
        seconds = self._budget(colour, position)
        cleanup_move = getattr(self.engine, "cleanup_move", None) if cleanup else None
        try:
            if cleanup_move is not None:
                action = cleanup_move(position, seconds)
            else:
                action = self.engine.genmove(position, seconds=seconds)
        except ValueError as e:  # e.g. a checkpoint that cannot play this board
            raise GtpError(f"cannot generate a move: {e}") from None
        if commit:
            self._spend(colour, time.monotonic() - start)
        if action is None:
            return "resign"
        after = position.play(action)
        if commit:
            self.positions += extra + [after]
            self.inserted += flags + [False]
        return position.game.action_to_text(action)

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

    def _dead_stones(self) -> set[int]:
        position = self.position
        if self._dead is None or self._dead[0] is not position:
            find = getattr(self.engine, "dead_stones", None)
            self._dead = (position, set(find(position)) if find is not None else set())
        return self._dead[1]

    def cmd_final_score(self, args: list[str]) -> str:
        """Go: the Tromp-Taylor count after removing the stones `final_status_list dead` names, so a
        controller and zero agree on a finished game; other games: the result as it stands."""
        self._nargs(args, 0, usage="final_score")
        position = self.position
        if position.game.name != "go":
            return position.result_text()
        from zero.games.go import ownership_and_score
        from zero.notation import score_text

        board = position.board.reshape(-1).copy()
        board[list(self._dead_stones())] = 0
        return score_text(ownership_and_score(board.reshape(position.board.shape), position.komi)[1])

    def cmd_final_status_list(self, args: list[str]) -> str:
        """dead: the stones the engine expects to be captured; alive: the others; seki: none (see module doc)."""
        self._nargs(args, 1, usage="final_status_list alive|dead|seki")
        status = args[0].lower()
        if status not in ("alive", "dead", "seki"):
            raise GtpError(f"invalid status {args[0]!r} (expected alive, dead or seki)")
        if status == "seki":
            return ""
        stones = [int(p) for p in self.position.board.reshape(-1).nonzero()[0]]
        dead = self._dead_stones()
        return " ".join(self.position.game.action_to_text(p) for p in stones if (p in dead) == (status == "dead"))

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

    # --- time ----------------------------------------------------------------
    def cmd_time_settings(self, args: list[str]) -> str:
        self._nargs(args, 3, usage="time_settings MAIN_TIME BYO_YOMI_TIME BYO_YOMI_STONES")
        main = _seconds(args[0], "main time")
        byo = _seconds(args[1], "byo-yomi time")
        stones = _count(args[2], "byo-yomi stones")
        self.time_settings = (main, byo, stones)
        self.time_left = {}
        return ""

    def cmd_time_left(self, args: list[str]) -> str:
        self._nargs(args, 3, usage="time_left COLOR TIME STONES")
        colour = _colour(args[0])
        self.time_left[colour] = (_seconds(args[1], "time left"), _count(args[2], "stones left"))
        return ""

    def _unlimited(self) -> bool:
        """No time settings, or GTP's way of saying no limit (byo-yomi time with 0 stones; all zero)."""
        if self.time_settings is None:
            return True
        main, byo, stones = self.time_settings
        return (byo > 0 and stones == 0) or (main == 0 and byo == 0)

    def _clock(self, colour: int) -> tuple[float, int]:
        """(seconds, stones) left to `colour`: as last told by time_left, else at the start."""
        main, byo, stones = self.time_settings
        start = (main, 0) if main > 0 or stones == 0 else (byo, stones)
        return self.time_left.get(colour, start)

    def _budget(self, colour: int, position) -> float | None:
        """Seconds for this move (see the module doc), or None to search `--visits` without a clock."""
        if self._unlimited():
            return None
        main, byo, byo_stones = self.time_settings
        left, stones = self._clock(colour)
        if stones > 0:
            budget = left / stones
        else:
            moves = max(self.size, int((position.board == 0).sum()) // 3)
            budget = left / moves
            if byo > 0 and byo_stones > 0:
                budget += byo / byo_stones
        return max(0.0, budget * TIME_SHARE - TIME_LAG)

    def _spend(self, colour: int, seconds: float) -> None:
        """Count `seconds` used by `colour` on a move against its clock (time_left sets it right again)."""
        if self._unlimited():
            return
        main, byo, byo_stones = self.time_settings
        left, stones = self._clock(colour)
        left -= seconds
        if stones > 0:
            stones -= 1
            if stones == 0:  # the period's stones are played: a new period
                left, stones = byo, byo_stones
        elif left <= 0 and byo > 0 and byo_stones > 0:  # main time ran out: byo-yomi, this move its first stone
            left, stones = byo + left, byo_stones - 1
            if stones == 0:
                left, stones = byo, byo_stones
        self.time_left[colour] = (max(0.0, left), stones)

    # --- analysis ------------------------------------------------------------
    def cmd_lz_analyze(self, args: list[str]) -> Iterator[str]:
        usage = "lz-analyze [COLOR] [INTERVAL]"
        args = list(args)
        colour = self.position.to_play
        if args:
            try:
                colour = _colour(args[0])
                args.pop(0)
            except GtpError:
                pass
        if args and args[0].lower() == "interval":
            args.pop(0)
            if not args:
                raise GtpError(f"interval needs a number (usage: {usage})")
        if len(args) > 1:
            raise GtpError(f"wrong arguments (usage: {usage})")
        interval = DEFAULT_ANALYZE_INTERVAL
        if args:
            try:
                interval = int(args[0])
            except ValueError:
                raise GtpError(f"interval not an integer number of centiseconds: {args[0]!r}") from None
            if interval < 0:
                raise GtpError(f"interval must be at least 0, got {interval}")
        if not (hasattr(self.engine, "think") and hasattr(self.engine, "candidates")):
            raise GtpError("this engine cannot analyse")
        extra, _ = self._turn_to(colour)
        position = extra[-1] if extra else self.position
        return self._analysis(position, interval / 100 if interval > 0 else None)

    def _analysis(self, position, period: float | None) -> Iterator[str]:
        """Info lines while the search runs: one per period, and a last one when the next command arrives."""
        wait = self._pending
        if wait is None:  # not serving: nothing can interrupt, so search to the cap and report once
            self.engine.think(position)
            line = self._info_line(position)
            if line:
                yield line
            return
        while True:
            search = self.engine.think(position, period, lambda: wait(0))
            full = int(search.tree.root_visits([0])[0]) >= self.engine.visits
            arrived = wait(period) if full else wait(0)
            line = self._info_line(position)
            if line:
                yield line
            if arrived:
                return

    def _info_line(self, position) -> str:
        parts = []
        for order, m in enumerate(self.engine.candidates(position)):
            vertex = position.game.action_to_text
            pv = " ".join(vertex(a) for a in m.pv)
            parts.append(f"info move {vertex(m.action)} visits {m.visits} "
                         f"winrate {round(m.winrate * 10000)} prior {round(m.prior * 10000)} "
                         f"lcb {round(m.lcb * 10000)} order {order} pv {pv}")
        return " ".join(parts)

    # --- the protocol --------------------------------------------------------
    def handle(self, line: str) -> str | None:
        """The response to one input line (ending in a blank line), or None for empty/comment lines.

        A streaming command (lz-analyze) writes its first lines as it goes while
        serving; what is returned is then the rest of its response.
        """
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
        if not isinstance(result, str):
            return self._stream(ident, result)
        # An empty line ends a GTP response, so no line after the first may be blank.
        first, *rest = result.split("\n")
        result = "\n".join([first] + [part for part in rest if part.strip()])
        return f"={ident} {result}\n\n"

    def _stream(self, ident: str, lines: Iterator[str]) -> str:
        """`=id`, then one line per item of `lines` (written at once while serving), then the blank line."""
        collected = [f"={ident}\n"]
        write = self._write
        if write is not None:
            write(collected.pop())
        try:
            for text in lines:
                if write is not None:
                    write(text + "\n")
                else:
                    collected.append(text + "\n")
        except Exception as e:  # the response has begun: end it, and say why on stderr
            print(f"zero gtp: {type(e).__name__} while streaming: {e}", file=sys.stderr)
        collected.append("\n")
        return "".join(collected)

    def run(self, stdin: TextIO, stdout: TextIO) -> None:
        """Answer commands from stdin until `quit` or end of input."""
        lines = _Lines(stdin)  # read on a thread, to answer each line as it comes and to notice the next one

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
