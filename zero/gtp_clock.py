"""The clock of a GTP game: the time the controller gave, and how long to think on a move.

`time_settings MAIN BYO_YOMI STONES` sets Canadian byo-yomi: MAIN seconds,
then BYO_YOMI seconds for every STONES moves. `time_left COLOUR SECONDS
STONES` says what a side has left (STONES 0 in main time); between those
reports the clock counts the time the engine used itself.

A move's budget: the remaining main time spread over a third of the empty
points (at least board-size moves) plus a byo-yomi stone's share, or in
byo-yomi the period spread over its stones; 90% of that, less 50 ms for the
pipes. No time settings, or GTP's ways of saying no limit, give no budget:
genmove then searches `--visits`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from zero.gtp_protocol import colour_arg, count_arg, nargs, seconds_arg

TIME_SHARE, TIME_LAG = 0.9, 0.05  # of a move's time budget used, and seconds kept back for the pipes


@dataclass
class Clock:
    """Both sides' time: the settings as given, and each side's time left as last known."""

    settings: tuple[float, float, int] | None = None  # main time, byo-yomi time, stones; None: never set
    left: dict[int, tuple[float, int]] = field(default_factory=dict)  # colour -> (seconds, stones; 0 in main time)

    def unlimited(self) -> bool:
        """No time settings, or GTP's way of saying no limit (byo-yomi time with 0 stones; all zero)."""
        if self.settings is None:
            return True
        main, byo, stones = self.settings
        return (byo > 0 and stones == 0) or (main == 0 and byo == 0)

    def remaining(self, colour: int) -> tuple[float, int]:
        """(seconds, stones) left to `colour`: as last told by time_left, else at the start."""
        main, byo, stones = self.settings
        start = (main, 0) if main > 0 or stones == 0 else (byo, stones)
        return self.left.get(colour, start)

    def budget(self, colour: int, size: int, empty: int) -> float | None:
        """Seconds for `colour`'s move on a board of side `size` with `empty` empty points (see the
        module doc), or None to search without a clock."""
        if self.unlimited():
            return None
        main, byo, byo_stones = self.settings
        left, stones = self.remaining(colour)
        if stones > 0:
            budget = left / stones
        else:
            moves = max(size, empty // 3)
            budget = left / moves
            if byo > 0 and byo_stones > 0:
                budget += byo / byo_stones
        return max(0.0, budget * TIME_SHARE - TIME_LAG)

    def spend(self, colour: int, seconds: float) -> None:
        """Count `seconds` used by `colour` on a move against its clock (time_left sets it right again)."""
        if self.unlimited():
            return
        main, byo, byo_stones = self.settings
        left, stones = self.remaining(colour)
        left -= seconds
        if stones > 0:
            stones -= 1
            if stones == 0:  # the period's stones are played: a new period
                left, stones = byo, byo_stones
        elif left <= 0 and byo > 0 and byo_stones > 0:  # main time ran out: byo-yomi, this move its first stone
            left, stones = byo + left, byo_stones - 1
            if stones == 0:
                left, stones = byo, byo_stones
        self.left[colour] = (max(0.0, left), stones)


class TimeCommands:
    """time_settings and time_left: they set `clock`, which genmove reads (zero.gtp_moves)."""

    def __init__(self):
        self.clock = Clock()

    def commands(self) -> dict[str, Callable[[list[str]], str]]:
        return {"time_settings": self.cmd_time_settings, "time_left": self.cmd_time_left}

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
