"""The GTP commands that score the end of a game: final_status_list and final_score.

`final_status_list` answers from the engine's own view: a chain is dead when random playouts to the end
(`Engine.ownership`) leave its points more often in the opponent's Tromp-Taylor area than in its own. Seki
stones count as alive under area scoring and are listed as alive; `seki` lists none. `final_score` counts
the board Tromp-Taylor after removing those dead stones.
"""

from __future__ import annotations

from typing import Callable

from zero.gtp_board import GtpBoard
from zero.gtp_protocol import GtpError, nargs


class ScoringCommands:
    """The commands above, on `board`'s position.

    Args:
        engine: used where present: `dead_stones(position)` for final_status_list (else every stone is
            alive).
    """

    def __init__(self, engine, board: GtpBoard):
        self.engine, self.board = engine, board
        self._dead: tuple[object, set[int]] | None = None  # (position, its dead stones), judged once per position

    def commands(self) -> dict[str, Callable[[list[str]], str]]:
        return {"final_score": self.cmd_final_score, "final_status_list": self.cmd_final_status_list}

    def _dead_stones(self) -> set[int]:
        position = self.board.position
        if self._dead is None or self._dead[0] is not position:
            find = getattr(self.engine, "dead_stones", None)
            self._dead = (position, set(find(position)) if find is not None else set())
        return self._dead[1]

    def cmd_final_score(self, args: list[str]) -> str:
        """Go: the Tromp-Taylor count after removing the stones `final_status_list dead` names, so a
        controller and zero agree on a finished game; other games: the result as it stands."""
        nargs(args, 0, usage="final_score")
        position = self.board.position
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
        position = self.board.position
        stones = [int(p) for p in position.board.reshape(-1).nonzero()[0]]
        dead = self._dead_stones()
        return " ".join(position.game.action_to_text(p) for p in stones if (p in dead) == (status == "dead"))
