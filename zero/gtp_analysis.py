"""The GTP command that analyses a position for a viewer: lz-analyze.

`lz-analyze [COLOR] [INTERVAL]` (Leela Zero's form, which Sabaki and Lizzie
read) answers `=`, then searches, writing every INTERVAL centiseconds
(default 100) one line `info move D4 visits 120 winrate 5234 prior 1234
lcb 5100 order 0 pv D4 C3 info move ...` over the root moves searched
(winrate, prior and lcb in units of 0.01%, for the colour analysed; lcb is
the 95% Wilson lower bound of the winrate), until the next command arrives,
and then ends the response with the blank line. The tree is the one
`genmove` uses, so it stops growing at `--visits`; the lines go on. A
search that fails part-way ends the response with an `error` line
(`zero.gtp_protocol`).
"""

from __future__ import annotations

from typing import Callable, Iterator

from zero.gtp_board import GtpBoard
from zero.gtp_protocol import GtpError, GtpServer, colour_arg, int_arg

DEFAULT_ANALYZE_INTERVAL = 100  # centiseconds between lz-analyze lines when none is given


class AnalysisCommands:
    """lz-analyze on `board`'s position, while `server` serves until its next input line.

    Args:
        engine: used where present: `think(position, seconds=None, stop=None) -> Search` and
            `candidates(position)`, with `visits` (an engine without them cannot analyse).
    """

    def __init__(self, engine, board: GtpBoard, server: GtpServer):
        self.engine, self.board, self.server = engine, board, server

    def commands(self) -> dict[str, Callable[[list[str]], Iterator[str]]]:
        return {"lz-analyze": self.cmd_lz_analyze}

    def cmd_lz_analyze(self, args: list[str]) -> Iterator[str]:
        usage = "lz-analyze [COLOR] [INTERVAL]"
        args = list(args)
        colour = self.board.position.to_play
        if args:
            try:
                colour = colour_arg(args[0])
                args.pop(0)
            except GtpError:
                pass
        if args and args[0].lower() == "interval":
            args.pop(0)
            if not args:
                raise GtpError(f"interval needs a number (usage: {usage})")
        if len(args) > 1:
            raise GtpError(f"wrong arguments (usage: {usage})")
        interval = int_arg(args[0], "interval (centiseconds)", least=0) if args else DEFAULT_ANALYZE_INTERVAL
        if not (hasattr(self.engine, "think") and hasattr(self.engine, "candidates")):
            raise GtpError("this engine cannot analyse")
        extra, _ = self.board.turn_to(colour)
        position = extra[-1] if extra else self.board.position
        return self._analysis(position, interval / 100 if interval > 0 else None)

    def _analysis(self, position, period: float | None) -> Iterator[str]:
        """Info lines while the search runs: one per period, and a last one when the next command arrives."""
        wait = self.server.pending
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
