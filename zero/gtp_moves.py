"""The GTP commands that ask the engine for a move: genmove, reg_genmove and kgs-genmove_cleanup.

`genmove` answers for either colour at any time (a pass for the other side first when it is not that
colour's turn, `GtpBoard.turn_to`). It searches `--visits` root visits, reusing the tree of the moves
played since the last search; after `time_settings` it also stops at a per-move budget from the clock
(`zero.gtp_clock`). `reg_genmove` is genmove that leaves the board and the clock as they were.
`kgs-genmove_cleanup` is genmove that never resigns and never passes while opponent stones it considers
dead are on the board: it plays on their liberties until they are captured (`Engine.cleanup_move`).
"""

from __future__ import annotations

import time
from typing import Callable

from zero.gtp_board import GtpBoard
from zero.gtp_clock import TimeCommands
from zero.gtp_protocol import GtpError, colour_arg, nargs


class MoveCommands:
    """The commands above, over `board`, on the clock of `timing`.

    Args:
        engine: has `genmove(position, seconds=None) -> action | None` (None: resign); used where
            present: `cleanup_move(position, seconds)` for kgs-genmove_cleanup (else genmove).
    """

    def __init__(self, engine, board: GtpBoard, timing: TimeCommands):
        self.engine, self.board, self.timing = engine, board, timing

    def commands(self) -> dict[str, Callable[[list[str]], str]]:
        return {
            "genmove": self.cmd_genmove,
            "reg_genmove": lambda a: self.cmd_genmove(a, commit=False),
            "kgs-genmove_cleanup": self.cmd_kgs_genmove_cleanup,
        }

    def cmd_genmove(self, args: list[str], commit: bool = True, usage: str = "genmove COLOR",
                    choose: Callable[[object, float | None], int | None] | None = None) -> str:
        """genmove, reg_genmove (commit=False), and kgs-genmove_cleanup (`choose`: the engine's cleanup_move).

        `choose(position, seconds)` picks the move, None to resign; by default the engine's genmove.
        """
        nargs(args, 1, usage=usage)
        start = time.monotonic()
        colour = colour_arg(args[0])
        board, clock = self.board, self.timing.clock
        extra, flags = board.turn_to(colour)
        position = extra[-1] if extra else board.position
        seconds = clock.budget(colour, board.size, int((position.board == 0).sum()))
        try:
            if choose is not None:
                action = choose(position, seconds)
            else:
                action = self.engine.genmove(position, seconds=seconds)
        except ValueError as e:  # e.g. a checkpoint that cannot play this board
            raise GtpError(f"cannot generate a move: {e}") from None
        if commit:
            clock.spend(colour, time.monotonic() - start)
        if action is None:
            return "resign"
        after = position.play(action)
        if commit:
            board.extend(extra, flags, after)
        return position.game.action_to_text(action)

    def cmd_kgs_genmove_cleanup(self, args: list[str]) -> str:
        """genmove by `Engine.cleanup_move` (an engine without one: by its genmove)."""
        return self.cmd_genmove(args, usage="kgs-genmove_cleanup COLOR",
                                choose=getattr(self.engine, "cleanup_move", None))
