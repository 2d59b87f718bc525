"""Gomoku (k in a row) on an m x n board, batched for the search.

Black (+1) moves first; a player who makes k or more stones in a row
(horizontally, vertically or diagonally; overlines count) wins, and a full
board without a line is a draw. There is no pass. A batch holds many games
as preallocated arrays (`GomokuBatch`) that numba kernels update in place;
a win is found by looking only at the lines through the last move.
`GomokuPosition` is the value class for people and tests.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from zero.games.base import Game, IllegalMove, LeafInputs, Position, square_symmetries
from zero.notation import COLUMNS
from zero.subtree_bias import window_keys

BLACK, WHITE, EMPTY = 1, -1, 0
_STONES = {BLACK: "X", WHITE: "O", EMPTY: "."}

# The four line directions (row step, column step): across, down, and both diagonals.
_DR = np.array([0, 1, 1, 1], dtype=np.int64)
_DC = np.array([1, 0, 1, -1], dtype=np.int64)


@dataclass
class GomokuBatch:
    """B game slots. A finished slot keeps its last position (to_play flipped as usual)."""

    board: np.ndarray  # [B, H*W] int8, +1 black, -1 white, 0 empty; row-major, row 0 at the top
    to_play: np.ndarray  # [B] int8, +1 black / -1 white
    length: np.ndarray  # [B] int32, moves played
    last_move: np.ndarray  # [B] int32, last action played, -1 before the first move
    winner: np.ndarray  # [B] int8, +1 / -1 once someone has a line, else 0
    over: np.ndarray  # [B] bool, a line or a full board

    @property
    def size(self) -> int:
        return len(self.to_play)


# --- kernels -----------------------------------------------------------------


@numba.njit(cache=True)
def _makes_line(board, height, width, k, p):
    """Whether the stone on point p is part of k or more in a row of its colour."""
    colour = board[p]
    r0, c0 = p // width, p % width
    for d in range(4):
        dr, dc = _DR[d], _DC[d]
        count = 1
        r, c = r0 + dr, c0 + dc
        while 0 <= r < height and 0 <= c < width and board[r * width + c] == colour:
            count += 1
            r += dr
            c += dc
        r, c = r0 - dr, c0 - dc
        while 0 <= r < height and 0 <= c < width and board[r * width + c] == colour:
            count += 1
            r -= dr
            c -= dc
        if count >= k:
            return True
    return False


@numba.njit(cache=True)
def _play_slot(board, to_play, length, last_move, winner, over, i, a, height, width, k):
    """Play legal action a for the side to move in slot i."""
    colour = to_play[i]
    board[i, a] = colour
    length[i] += 1
    last_move[i] = a
    if _makes_line(board[i], height, width, k, a):
        winner[i] = colour
        over[i] = True
    elif length[i] >= height * width:
        over[i] = True
    to_play[i] = -colour


@numba.njit(cache=True)
def _replay(scratch, board, to_play, length, last_move, winner, over, s, path, n, height, width, k):
    """Copy slot s to scratch and play path[:n] on it; returns (to_play, last_move, winner, over)."""
    scratch[:] = board[s]
    colour = to_play[s]
    moves = length[s]
    last = last_move[s]
    won = winner[s]
    done = over[s]
    for j in range(n):
        a = path[j]
        scratch[a] = colour
        moves += 1
        last = a
        if _makes_line(scratch, height, width, k, a):
            won = colour
            done = True
        elif moves >= height * width:
            done = True
        colour = -colour
    return colour, last, won, done


@numba.njit(cache=True)
def _leaf_kernel(board, to_play, length, last_move, winner, over, slots, paths, depth,
                 height, width, k, want_planes, legal, terminal, planes):
    """Fill legal [L, A], terminal [L] and (if want_planes) planes [L, 4, H, W], zeroed by the caller."""
    n = height * width
    scratch = np.empty(n, np.int8)
    for l in range(len(slots)):
        colour, last, won, done = _replay(scratch, board, to_play, length, last_move, winner, over,
                                          slots[l], paths[l], depth[l], height, width, k)
        if done:
            terminal[l] = np.float32(won * colour)  # the previous mover won: -1; draw: 0
        else:
            terminal[l] = np.nan
            for a in range(n):
                legal[l, a] = scratch[a] == 0
        if want_planes:
            for p in range(n):
                r, c = p // width, p % width
                if scratch[p] == colour:
                    planes[l, 0, r, c] = 1
                elif scratch[p] == -colour:
                    planes[l, 1, r, c] = 1
            if last >= 0:
                planes[l, 2, last // width, last % width] = 1
            if colour == 1:
                planes[l, 3, :, :] = 1


@numba.njit(cache=True)
def _splitmix64(state):
    """One step of splitmix64: (new state, 64 random bits)."""
    state = state + np.uint64(0x9E3779B97F4A7C15)
    z = state
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return state, z ^ (z >> np.uint64(31))


@numba.njit(cache=True)
def _rollout_kernel(board, to_play, length, last_move, winner, over, slots, paths, depth,
                    height, width, k, seed, values):
    """values[l]: result of a uniformly random playout from leaf l, leaf side to move's view."""
    n = height * width
    scratch = np.empty(n, np.int8)
    empty = np.empty(n, np.int64)
    for l in range(len(slots)):
        leaf_colour, _, won, done = _replay(scratch, board, to_play, length, last_move, winner, over,
                                            slots[l], paths[l], depth[l], height, width, k)
        # Each leaf has its own stream, so a leaf's playout does not depend on the others.
        state = np.uint64(seed) * np.uint64(0x2545F4914F6CDD1D) + np.uint64(l)
        state, _ = _splitmix64(state)
        num_empty = 0
        for a in range(n):
            if scratch[a] == 0:
                empty[num_empty] = a
                num_empty += 1
        colour = leaf_colour
        while not done:
            state, bits = _splitmix64(state)
            j = np.int64(bits % np.uint64(num_empty))
            a = empty[j]
            num_empty -= 1
            empty[j] = empty[num_empty]
            scratch[a] = colour
            if _makes_line(scratch, height, width, k, a):
                won = colour
                done = True
            elif num_empty == 0:
                done = True
            colour = -colour
        values[l] = np.float32(won * leaf_colour)


@numba.njit(cache=True)
def _lines_of(board, height, width, k):
    """(black has a line, white has a line) anywhere on a flat board."""
    black = False
    white = False
    for p in range(height * width):
        if board[p] != 0 and _makes_line(board, height, width, k, p):
            if board[p] == 1:
                black = True
            else:
                white = True
    return black, white


# --- the game ----------------------------------------------------------------


def _render(board: np.ndarray, height: int, width: int) -> str:
    """A flat board as text: X black, O white, `.` empty, GTP coordinates around it."""
    letters = "   " + " ".join(COLUMNS[:width])
    lines = [letters]
    for r in range(height):
        stones = " ".join(_STONES[int(v)] for v in board[r * width : (r + 1) * width])
        lines.append(f"{height - r:2d} {stones} {height - r:2d}")
    lines.append(letters)
    return "\n".join(lines)


class GomokuGame(Game):
    """k in a row on a height x width board; overlines win, a full board is a draw."""

    name = "gomoku"
    num_planes = 4  # own stones, opponent's stones, last move, black to move
    pass_action = -1

    def __init__(self, height: int = 15, width: int = 15, k: int = 5):
        if not 1 <= width <= len(COLUMNS) or height < 1:
            raise ValueError(f"board {height}x{width} is not supported (1 to {len(COLUMNS)} columns)")
        if not 1 <= k <= max(height, width):
            raise ValueError(f"k={k} does not fit a {height}x{width} board")
        self.height = height
        self.width = width
        self.k = k
        self.num_actions = height * width
        self.max_moves = height * width
        self._symmetries = square_symmetries(height, width)
        self._symmetries.flags.writeable = False

    def __repr__(self) -> str:
        return f"GomokuGame(height={self.height}, width={self.width}, k={self.k})"

    # --- batches -------------------------------------------------------------
    def new_batch(self, size: int) -> GomokuBatch:
        return GomokuBatch(
            board=np.zeros((size, self.num_actions), np.int8),
            to_play=np.full(size, BLACK, np.int8),
            length=np.zeros(size, np.int32),
            last_move=np.full(size, -1, np.int32),
            winner=np.zeros(size, np.int8),
            over=np.zeros(size, np.bool_),
        )

    def reset(self, batch: GomokuBatch, i: int) -> None:
        batch.board[i] = EMPTY
        batch.to_play[i] = BLACK
        batch.length[i] = 0
        batch.last_move[i] = -1
        batch.winner[i] = 0
        batch.over[i] = False

    def copy_slot(self, src_batch: GomokuBatch, i: int, dst_batch: GomokuBatch, j: int) -> None:
        dst_batch.board[j] = src_batch.board[i]
        dst_batch.to_play[j] = src_batch.to_play[i]
        dst_batch.length[j] = src_batch.length[i]
        dst_batch.last_move[j] = src_batch.last_move[i]
        dst_batch.winner[j] = src_batch.winner[i]
        dst_batch.over[j] = src_batch.over[i]

    def play(self, batch: GomokuBatch, i: int, action: int) -> None:
        action = int(action)
        if not 0 <= action < self.num_actions:
            move = "pass" if action == self.pass_action else str(action)
            reason = "gomoku has no pass" if action == self.pass_action else "off the board"
            raise IllegalMove(move, reason, self.render(batch, i))
        if batch.over[i]:
            raise IllegalMove(self.action_to_text(action), "game is over", self.render(batch, i))
        if batch.board[i, action] != EMPTY:
            raise IllegalMove(self.action_to_text(action), "occupied", self.render(batch, i))
        _play_slot(batch.board, batch.to_play, batch.length, batch.last_move, batch.winner, batch.over,
                   int(i), action, self.height, self.width, self.k)

    def legal_mask(self, batch: GomokuBatch, i: int) -> np.ndarray:
        if batch.over[i]:
            return np.zeros(self.num_actions, np.bool_)
        return batch.board[i] == EMPTY

    def to_play(self, batch: GomokuBatch, i: int) -> int:
        return int(batch.to_play[i])

    def move_count(self, batch: GomokuBatch, i: int) -> int:
        return int(batch.length[i])

    def is_over(self, batch: GomokuBatch, i: int) -> bool:
        return bool(batch.over[i])

    def outcome(self, batch: GomokuBatch, i: int) -> float:
        return float(batch.winner[i])

    def score(self, batch: GomokuBatch, i: int) -> float:
        return self.outcome(batch, i)

    def leaf_inputs(self, batch: GomokuBatch, slots, paths, depth, want_planes: bool = True,
                    fill_own_eyes: bool = True, early_passes: bool = True) -> LeafInputs:
        slots, paths, depth = _as_leaves(slots, paths, depth)
        L = len(slots)
        legal = np.zeros((L, self.num_actions), np.bool_)
        terminal = np.empty(L, np.float32)
        planes = np.zeros((L if want_planes else 0, self.num_planes, self.height, self.width), np.uint8)
        _leaf_kernel(batch.board, batch.to_play, batch.length, batch.last_move, batch.winner, batch.over,
                     slots, paths, depth, self.height, self.width, self.k, bool(want_planes),
                     legal, terminal, planes)
        return LeafInputs(legal=legal, terminal_value=terminal, planes=planes if want_planes else None)

    def pattern_keys(self, planes: np.ndarray) -> np.ndarray:
        """The mover, the point of the last move and the 5x5 window around it (empty, the side to move's, the
        mover's, off the board), read off the input planes; -1 (no key) before the first move."""
        L = planes.shape[0]
        marked = planes[:, 2].reshape(L, -1).astype(bool)
        last = np.where(marked.any(axis=1), marked.argmax(axis=1), -1)
        codes = planes[:, 0].astype(np.int64) + 2 * planes[:, 1].astype(np.int64)
        colour = planes[:, 3, 0, 0].astype(np.int64)
        keys = window_keys(codes, last, np.stack([np.maximum(last, 0), np.zeros(L, np.int64), colour], axis=1))
        return np.where(last >= 0, keys, -1)

    def rollout_values(self, batch: GomokuBatch, slots, paths, depth, seed: int) -> np.ndarray:
        slots, paths, depth = _as_leaves(slots, paths, depth)
        values = np.empty(len(slots), np.float32)
        _rollout_kernel(batch.board, batch.to_play, batch.length, batch.last_move, batch.winner, batch.over,
                        slots, paths, depth, self.height, self.width, self.k,
                        np.uint64(int(seed) % 2**64), values)
        return values

    def symmetries(self) -> np.ndarray:
        return self._symmetries

    # --- text ----------------------------------------------------------------
    def render(self, batch: GomokuBatch, i: int) -> str:
        return _render(batch.board[i], self.height, self.width)


def _as_leaves(slots, paths, depth):
    """The leaf arrays as the kernels want them: int32 and C-contiguous."""
    slots = np.ascontiguousarray(slots, dtype=np.int32)
    paths = np.ascontiguousarray(paths, dtype=np.int32)
    if paths.ndim != 2 or len(paths) != len(slots):
        raise ValueError(f"paths must be [L, D] with L={len(slots)} leaves, not {paths.shape}")
    depth = np.ascontiguousarray(depth, dtype=np.int32)
    return slots, paths, depth


# --- one position as a value ---------------------------------------------------


class GomokuPosition(Position):
    """One Gomoku position; `play` returns a new position and leaves this one as it was."""

    @classmethod
    def initial(cls, height: int = 15, width: int = 15, k: int = 5) -> "GomokuPosition":
        game = GomokuGame(height, width, k)
        return cls(game, game.new_batch(1))

    @classmethod
    def from_ascii(cls, text: str, k: int = 5, to_play: int | None = None) -> "GomokuPosition":
        """A position from rows of X (black), O (white) and `.`, top row first; spaces are ignored.

        The side to move is inferred from the stone counts when not given
        (black if equal, white if black has one more). The move history is
        empty and there is no last move.
        """
        rows = [line.replace(" ", "").replace("\t", "") for line in text.strip().splitlines()]
        rows = [row for row in rows if row]
        if not rows or len({len(row) for row in rows}) != 1:
            raise ValueError(f"rows of an ASCII board must be non-empty and equally long:\n{text}")
        codes = {"X": BLACK, "O": WHITE, ".": EMPTY}
        bad = {ch for row in rows for ch in row.upper()} - set(codes)
        if bad:
            raise ValueError(f"ASCII board has characters other than X, O and '.': {sorted(bad)}")
        height, width = len(rows), len(rows[0])
        game = GomokuGame(height, width, k)
        board = np.array([codes[ch] for row in rows for ch in row.upper()], np.int8)
        blacks, whites = int((board == BLACK).sum()), int((board == WHITE).sum())
        if to_play is None:
            if blacks == whites:
                to_play = BLACK
            elif blacks == whites + 1:
                to_play = WHITE
            else:
                raise ValueError(f"cannot infer the side to move from {blacks} black and {whites} white stones")
        if to_play not in (BLACK, WHITE):
            raise ValueError(f"to_play must be +1 or -1, not {to_play}")
        black_line, white_line = _lines_of(board, height, width, k)
        if black_line and white_line:
            raise ValueError(f"both colours have {k} in a row:\n{text}")
        batch = game.new_batch(1)
        batch.board[0] = board
        batch.to_play[0] = to_play
        batch.length[0] = blacks + whites
        batch.winner[0] = BLACK if black_line else WHITE if white_line else 0
        batch.over[0] = black_line or white_line or blacks + whites == height * width
        return cls(game, batch)

    @property
    def k(self) -> int:
        return self.game.k

    @property
    def board(self) -> np.ndarray:
        """[H, W] int8 copy: +1 black, -1 white, 0 empty."""
        return self.batch.board[0].reshape(self.height, self.width).copy()

    @property
    def last_move(self) -> int:
        return int(self.batch.last_move[0])

    @property
    def winner(self) -> int | None:
        """+1 / -1 for the side with a line, 0 for a draw, None while the game goes on."""
        return int(self.batch.winner[0]) if self.is_over else None

    def __str__(self) -> str:
        return self.render()

    def __repr__(self) -> str:
        head = (f"GomokuPosition({self.height}x{self.width}, k={self.k}, to_play={self.to_play:+d}, "
                f"moves={len(self.moves)})")
        return f"{head}\n{self.render()}"
