"""The GTP commands that judge a position rather than play in it: lz-analyze and the end of the game.

- `lz-analyze [COLOR] [INTERVAL]` (Leela Zero's form, which Sabaki and Lizzie
  read) answers `=`, then searches, writing every INTERVAL centiseconds
  (default 100) one line `info move D4 visits 120 winrate 5234 prior 1234
  lcb 5100 order 0 pv D4 C3 info move ...` over the root moves searched
  (winrate, prior and lcb in units of 0.01%, for the colour analysed; lcb is
  the 95% Wilson lower bound of the winrate), until the next command arrives,
  and then ends the response with the blank line. The tree is the one
  `genmove` uses, so it stops growing at `--visits`; the lines go on. A
  search that fails part-way ends the response with an `error` line
  (`zero.gtp_protocol`).
- `final_status_list` answers from the engine's own view: a chain is dead when
  random playouts to the end (`Engine.ownership`) leave its points more often
  in the opponent's Tromp-Taylor area than in its own. Seki stones count as
  alive under area scoring and are listed as alive; `seki` lists none.
  `final_score` counts the board Tromp-Taylor after removing those dead stones.
- `kgs-genmove_cleanup` is `genmove` that never resigns and never passes while
  opponent stones it considers dead are on the board: it plays on their
  liberties until they are captured (`Engine.cleanup_move`).
"""

from __future__ import annotations

from typing import Callable, Iterator

from zero.gtp_protocol import GtpError, colour_arg, nargs

DEFAULT_ANALYZE_INTERVAL = 100  # centiseconds between lz-analyze lines when none is given


class AnalysisCommands:
    """The commands above, mixed into `GtpEngine`.

    They use its `engine`, `position`, `_turn_to` (the position with a given
    colour to move), `cmd_genmove`, and `_pending` (while serving: wait up to
    t seconds for the next input line; None otherwise).
    """

    _pending: Callable[[float | None], bool] | None
    _dead: tuple[object, set[int]] | None = None  # (position, its dead stones), judged once per position

    # --- lz-analyze ------------------------------------------------------------
    def cmd_lz_analyze(self, args: list[str]) -> Iterator[str]:
        usage = "lz-analyze [COLOR] [INTERVAL]"
        args = list(args)
        colour = self.position.to_play
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

    # --- the end of the game ------------------------------------------------------
    def _dead_stones(self) -> set[int]:
        position = self.position
        if self._dead is None or self._dead[0] is not position:
            find = getattr(self.engine, "dead_stones", None)
            self._dead = (position, set(find(position)) if find is not None else set())
        return self._dead[1]

    def cmd_final_score(self, args: list[str]) -> str:
        """Go: the Tromp-Taylor count after removing the stones `final_status_list dead` names, so a
        controller and zero agree on a finished game; other games: the result as it stands."""
        nargs(args, 0, usage="final_score")
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
        nargs(args, 1, usage="final_status_list alive|dead|seki")
        status = args[0].lower()
        if status not in ("alive", "dead", "seki"):
            raise GtpError(f"invalid status {args[0]!r} (expected alive, dead or seki)")
        if status == "seki":
            return ""
        stones = [int(p) for p in self.position.board.reshape(-1).nonzero()[0]]
        dead = self._dead_stones()
        return " ".join(self.position.game.action_to_text(p) for p in stones if (p in dead) == (status == "dead"))

    def cmd_kgs_genmove_cleanup(self, args: list[str]) -> str:
        """genmove by `Engine.cleanup_move` (an engine without one: by its genmove)."""
        return self.cmd_genmove(args, usage="kgs-genmove_cleanup COLOR",
                                choose=getattr(self.engine, "cleanup_move", None))
