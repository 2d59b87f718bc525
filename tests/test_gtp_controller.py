"""`zero gtp` in a controller's hands: whole games against GNU Go, boards checked after every move.

The test is the controller (as gogui-twogtp would be): it starts `zero gtp`
(a fresh tiny network, few visits) and GNU Go as child processes, asks the
side to move for `genmove`, tells the other side with `play`, and after
every move compares both engines' boards with zero's own rules engine
(an open-ended `GoPosition` replaying the same moves). The game goes on past
2*N*N moves and after passes that a controller does not treat as the end;
it ends at two passes in a row, a resignation, or the controller's move limit.
"""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from zero.notation import point_to_vertex, vertex_to_point
from zero.games.go import GoPosition

ROOT = Path(__file__).resolve().parents[1]
GNUGO = "/usr/games/gnugo"
SIZE, KOMI = 9, 7.5
MOVE_LIMIT = 3 * SIZE * SIZE  # past self-play's cap of 2*N*N: the GTP board must not stop there
TINY = ["network.size=b1c8", "network.value_hidden=8", "gate.device=cpu", "mcts.symmetries=false",
        f"game.size={SIZE}", f"game.komi={KOMI}", "selfplay.resign_threshold=-1"]

pytestmark = pytest.mark.skipif(not Path(GNUGO).exists(), reason=f"GNU Go is not installed at {GNUGO}")


class GtpChild:
    """A GTP engine in a child process, from the controller's side; a stuck engine fails the test."""

    def __init__(self, argv: list[str], cwd: Path, env: dict | None = None):
        self.argv = argv
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, bufsize=1, cwd=cwd, env=env)
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in iter(self.proc.stdout.readline, ""):
            self.lines.put(line)
        self.lines.put(None)

    def ask(self, command: str, timeout: float = 120) -> tuple[bool, str]:
        """(success, response text without `=`/`?`) of one command."""
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        got: list[str] = []
        while True:
            line = self.lines.get(timeout=timeout)
            assert line is not None, f"{self.argv[0]} exited while answering {command!r}: {self.proc.stderr.read()}"
            line = line.rstrip("\r\n")
            if not line and got:
                break
            if line or got:
                got.append(line)
        head = got[0]
        assert head[:1] in "=?", f"{command!r} -> {got!r}"
        return head[0] == "=", "\n".join([head[1:].strip()] + got[1:])

    def ok(self, command: str) -> str:
        success, text = self.ask(command)
        assert success, f"{self.argv[0]} refused {command!r}: {text}"
        return text

    def close(self) -> None:
        if self.proc.poll() is None:
            self.ask("quit")
            self.proc.wait(timeout=30)


def zero_board(showboard: str) -> np.ndarray:
    """[N, N] int8 from zero's showboard: rows `  9 . X O ... 9`, top row first."""
    rows = [line.split() for line in showboard.splitlines() if line.strip()[:1].isdigit()]
    assert len(rows) == SIZE, showboard
    code = {"X": 1, "O": -1, ".": 0}
    return np.array([[code[c] for c in r[1:-1]] for r in rows], np.int8)


def gnugo_board(gnugo: GtpChild) -> np.ndarray:
    """[N, N] int8 from GNU Go's `list_stones black` and `list_stones white`."""
    board = np.zeros(SIZE * SIZE, np.int8)
    for colour, value in (("black", 1), ("white", -1)):
        for v in gnugo.ok(f"list_stones {colour}").split():
            board[vertex_to_point(v, SIZE, SIZE)] = value
    return board.reshape(SIZE, SIZE)


def play_game(zero: GtpChild, gnugo: GtpChild, zero_colour: int) -> tuple[GoPosition, str]:
    """One game from the empty board; (the final position, how it ended)."""
    for e in (zero, gnugo):
        e.ok(f"boardsize {SIZE}")
        e.ok("clear_board")
        e.ok(f"komi {KOMI}")
    rules = GoPosition.initial(SIZE, KOMI, open_ended=True)
    passes = 0
    while len(rules.moves) < MOVE_LIMIT:
        colour = rules.to_play
        name = "b" if colour == 1 else "w"
        mover, other = (zero, gnugo) if colour == zero_colour else (gnugo, zero)
        reply = mover.ok(f"genmove {name}").lower()
        if reply == "resign":
            return rules, f"{name} resigned"
        action = SIZE * SIZE if reply == "pass" else vertex_to_point(reply, SIZE, SIZE)
        rules = rules.play(action)  # IllegalMove if the engine broke zero's rules
        other.ok(f"play {name} {reply}")
        expected = rules.board
        assert (zero_board(zero.ok("showboard")) == expected).all(), f"zero's board after {reply}"
        assert (gnugo_board(gnugo) == expected).all(), f"GNU Go's board after {reply}"
        passes = passes + 1 if reply == "pass" else 0
        if passes == 2:
            return rules, "two passes"
    return rules, "move limit"


@pytest.mark.parametrize("zero_colour, seed", [(1, 1), (-1, 2)], ids=["zero-black", "zero-white"])
def test_whole_game_against_gnugo_keeps_the_boards_identical(zero_colour, seed, tmp_path):
    zero = GtpChild([sys.executable, "-m", "zero.gtp", "--visits", "8", *[a for s in TINY for a in ("--set", s)]],
                  cwd=tmp_path, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"})
    gnugo = GtpChild([GNUGO, "--mode", "gtp", "--chinese-rules", "--positional-superko", "--capture-all-dead",
                    "--level", "1", "--seed", str(seed)], cwd=tmp_path)
    try:
        final, ending = play_game(zero, gnugo, zero_colour)
        assert ending in ("two passes", "b resigned", "w resigned"), f"{ending} after {len(final.moves)} moves"
        assert len(final.moves) > 10
        assert zero.ok("final_score") == final.result_text()  # Tromp-Taylor, the board as it stands
        moves = [point_to_vertex(a, SIZE, SIZE) if a < SIZE * SIZE else "pass" for a in final.moves]
        assert zero.ok("printsgf").startswith("(;FF[4]"), moves
    finally:
        zero.close()
        gnugo.close()
