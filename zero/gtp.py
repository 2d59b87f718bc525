"""A GTP v2 engine over zero's `Engine`, for Go (GoGui, Sabaki, gogui-twogtp, KGS bridges).

`GtpEngine` composes the command groups, each in its own module:

- the protocol loop and GTP's own commands (ids, `?` responses, streamed responses): `zero.gtp_protocol`;
- the board and its setup (boardsize, clear_board, komi, play, undo, showboard, loadsgf, printsgf):
  `zero.gtp_board`;
- move generation (genmove, reg_genmove, kgs-genmove_cleanup): `zero.gtp_moves`;
- scoring (final_score, final_status_list): `zero.gtp_scoring`;
- time (time_settings, time_left, and the budget of a move): `zero.gtp_clock`;
- analysis (lz-analyze): `zero.gtp_analysis`.

Gomoku has no standard GTP and is refused at start.
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from zero import __version__
from zero.gtp_analysis import AnalysisCommands
from zero.gtp_board import GtpBoard
from zero.gtp_clock import TimeCommands
from zero.gtp_moves import MoveCommands
from zero.gtp_protocol import GtpError, GtpServer
from zero.gtp_scoring import ScoringCommands


class GtpEngine:
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
        self.server = GtpServer("zero", __version__)
        self.board = GtpBoard(engine)
        self.timing = TimeCommands()
        for group in (self.board, MoveCommands(engine, self.board, self.timing), ScoringCommands(engine, self.board),
                      self.timing, AnalysisCommands(engine, self.board, self.server)):
            self.server.add(group.commands())

    @property
    def position(self):
        return self.board.position

    @property
    def size(self) -> int:
        return self.board.size

    @property
    def time_settings(self) -> tuple[float, float, int] | None:
        """(main time, byo-yomi time, byo-yomi stones) as time_settings gave them; None before."""
        return self.timing.clock.settings

    @property
    def time_left(self) -> dict[int, tuple[float, int]]:
        """colour -> (seconds, stones; 0 in main time) as time_left told or the clock counted."""
        return self.timing.clock.left

    def sgf(self) -> str:
        """The game so far as SGF (with its Tromp-Taylor result when it ends in two passes)."""
        return self.board.sgf()

    def handle(self, line: str) -> str | None:
        """The response to one input line (ending in a blank line), or None for empty/comment lines."""
        return self.server.handle(line)

    def run(self, stdin: TextIO, stdout: TextIO) -> None:
        """Answer commands from stdin until `quit` or end of input."""
        self.server.run(stdin, stdout)


def run_gtp(params, model: str | None, visits: int | None, stdin: TextIO, stdout: TextIO,
            stderr: TextIO | None = None) -> int:
    """Serve GTP with the network in `model` (None: a fresh one); exit status 0, or 2 if refused or if the
    engine could not be loaded.

    The protocol loop starts at once and the engine loads on a thread (zero.engine_loader): the protocol's
    own commands and the board's answer while it does; a command that needs the engine waits for it, or,
    if it failed to load, answers `?` with the reason (also said on stderr as soon as it fails).
    """
    stderr = stderr if stderr is not None else sys.stderr
    if params.game.name != "go":
        print(f"zero gtp: error: GTP is defined for Go only, but game.name is {params.game.name!r}; "
              "use `zero play` to play Gomoku in the terminal", file=stderr)
        return 2
    from zero.engine_loader import announce_compiles, load_engine

    announce_compiles(stderr, "zero gtp")
    engine = load_engine(params, model, visits, failure=GtpError,
                         on_failure=lambda why: print(f"zero gtp: error: {why}", file=stderr, flush=True))
    try:
        gtp = GtpEngine(engine)  # waits for the engine only where its game is not known before it loads
    except GtpError:  # the engine failed to load: said on stderr
        return 2
    gtp.run(stdin, stdout)
    return 2 if engine.error is not None else 0


def main(argv: list[str] | None = None) -> int:
    """`python -m zero.gtp [--params FILE] [--set k=v] [--model PATH] [--visits N]`."""
    from zero.config import ConfigError, load_params_here

    parser = argparse.ArgumentParser(prog="zero gtp", description="GTP v2 engine on stdin/stdout")
    parser.add_argument("--params", default=None, help="params file (default: params.yaml if present)")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    parser.add_argument("--model", default=None, help="network checkpoint (default: a fresh network)")
    parser.add_argument("--visits", type=int, default=None)
    args = parser.parse_args(argv)
    try:
        params = load_params_here(args.params, args.set)
    except ConfigError as e:
        print(f"zero gtp: error: {e}", file=sys.stderr)
        return 2
    return run_gtp(params, args.model, args.visits, sys.stdin, sys.stdout)


if __name__ == "__main__":
    sys.exit(main())
