"""Go on an N x N board: positional superko, no suicide, Tromp-Taylor area scoring.

`GoGame` runs many games at once on preallocated arrays (`GoBatch`), with
the work done by the numba kernels in `go_kernels`; `GoPosition` is a single
position as a value, for people, GTP and the rules tests.

A game ends after two passes in a row or after the move cap of 2*N*N moves,
and is then scored as it stands: stones plus empty regions that reach only
one colour, minus komi; no dead stones are removed. Both endings belong to
self-play and matches: an open-ended `GoPosition` (the GTP board) never ends
by itself, its history grows as needed and superko still spans the whole game.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass

import numpy as np

from zero.games import go_kernels as K
from zero.games.base import Game, IllegalMove, LeafInputs, Position, parallel_chunks, square_symmetries
from zero.notation import COLUMNS, colour_name, score_text
from zero.subtree_bias import window_keys

BLACK, WHITE, EMPTY = 1, -1, 0
STONE_TEXT = {BLACK: "X", WHITE: "O", EMPTY: "."}


@dataclass
class GoBatch:
    """B game slots. The board of slot b is history[b, length[b]]."""

    history: np.ndarray  # [B, M+1, N*N] int8, board after t moves, t = 0..length (M = max_moves)
    hashes: np.ndarray  # [B, M+1] uint64, Zobrist hash of each board in history (for superko)
    length: np.ndarray  # [B] int32, moves played, passes included
    passes: np.ndarray  # [B] int8, consecutive passes ending the move list
    to_play: np.ndarray  # [B] int8, +1 black / -1 white

    def __len__(self) -> int:
        return self.length.shape[0]

    def arrays(self) -> tuple:
        return self.history, self.hashes, self.length, self.passes, self.to_play


class GoGame(Game):
    """Go rules over batches of game slots (see module docstring)."""

    name = "go"

    def __init__(self, size: int = 9, komi: float = 7.5, liberty_planes: bool = False):
        if not 5 <= size <= 19:
            raise ValueError(f"board size {size} is outside 5..19")
        self.size = size
        self.komi = float(komi)
        self.height = self.width = size
        self.num_points = size * size
        self.num_actions = self.num_points + 1
        self.pass_action = self.num_points
        self.liberty_planes = bool(liberty_planes)  # KataGo's liberty features after the paper's 17 planes
        self.num_planes = 2 * K.HISTORY_PLANES + 1 + (K.LIBERTY_PLANES if self.liberty_planes else 0)
        self.max_moves = 2 * self.num_points
        self._nbrs, self._diags = K.neighbour_tables(size)
        self._zobrist = K.zobrist_table(size)
        self._symmetries = square_symmetries(size, size, extra_actions=1)

    def __repr__(self) -> str:
        extra = ", liberty_planes=True" if self.liberty_planes else ""
        return f"GoGame(size={self.size}, komi={self.komi}{extra})"

    # --- batches ---------------------------------------------------------------
    def new_batch(self, size: int) -> GoBatch:
        return GoBatch(
            history=np.zeros((size, self.max_moves + 1, self.num_points), np.int8),
            hashes=np.zeros((size, self.max_moves + 1), np.uint64),
            length=np.zeros(size, np.int32),
            passes=np.zeros(size, np.int8),
            to_play=np.ones(size, np.int8),
        )

    def reset(self, batch: GoBatch, i: int) -> None:
        batch.history[i, 0] = EMPTY
        batch.hashes[i, 0] = 0
        batch.length[i] = 0
        batch.passes[i] = 0
        batch.to_play[i] = BLACK

    def copy_slot(self, src_batch: GoBatch, i: int, dst_batch: GoBatch, j: int) -> None:
        n = int(src_batch.length[i]) + 1
        dst_batch.history[j, :n] = src_batch.history[i, :n]
        dst_batch.hashes[j, :n] = src_batch.hashes[i, :n]
        dst_batch.length[j] = src_batch.length[i]
        dst_batch.passes[j] = src_batch.passes[i]
        dst_batch.to_play[j] = src_batch.to_play[i]

    def set_position(self, batch: GoBatch, i: int, board: np.ndarray, to_play: int = BLACK) -> None:
        """Start slot i from an arbitrary board (int8 [N, N]) with `to_play` to move; no earlier history."""
        flat = np.ascontiguousarray(board, dtype=np.int8).reshape(self.num_points)
        self.reset(batch, i)
        batch.history[i, 0] = flat
        batch.hashes[i, 0] = K.board_hash(flat, self._zobrist)
        batch.to_play[i] = to_play

    def board(self, batch: GoBatch, i: int) -> np.ndarray:
        """int8 [N, N] copy of slot i's board."""
        return batch.history[i, batch.length[i]].reshape(self.size, self.size).copy()

    def play(self, batch: GoBatch, i: int, action: int) -> None:
        action = int(action)
        if not 0 <= action < self.num_actions:
            raise IllegalMove(str(action), f"not an action on a {self.size}x{self.size} board", self.render(batch, i))
        if self.is_over(batch, i):
            raise IllegalMove(self.action_to_text(action), "game is over", self.render(batch, i))
        status = K.play_slot(*batch.arrays(), i, action, self._zobrist, self._nbrs)
        if status != K.LEGAL:
            raise IllegalMove(self.action_to_text(action), K.REASONS[status], self.render(batch, i))

    def legal_mask(self, batch: GoBatch, i: int) -> np.ndarray:
        slots = np.array([i], np.int32)
        return self.leaf_inputs(batch, slots, np.zeros((1, 0), np.int32), np.zeros(1, np.int32), False).legal[0]

    def to_play(self, batch: GoBatch, i: int) -> int:
        return int(batch.to_play[i])

    def move_count(self, batch: GoBatch, i: int) -> int:
        return int(batch.length[i])

    def is_over(self, batch: GoBatch, i: int) -> bool:
        return bool(batch.passes[i] >= 2 or batch.length[i] >= self.max_moves)

    def outcome(self, batch: GoBatch, i: int) -> float:
        return float(np.sign(self.score(batch, i)))

    def score(self, batch: GoBatch, i: int) -> float:
        return float(K.slot_score(batch.history, batch.length, i, self._nbrs, self.komi))

    # --- leaves ----------------------------------------------------------------
    def leaf_inputs(self, batch: GoBatch, slots, paths, depth, want_planes: bool = True,
                    fill_own_eyes: bool = True, early_passes: bool = True) -> LeafInputs:
        slots = np.ascontiguousarray(slots, dtype=np.int32)
        paths = np.ascontiguousarray(paths, dtype=np.int32).reshape(len(slots), -1)
        depth = np.ascontiguousarray(depth, dtype=np.int32)
        L = len(slots)
        legal = np.zeros((L, self.num_actions), np.bool_)
        terminal = np.empty(L, np.float32)
        planes = np.zeros((L if want_planes else 0, self.num_planes, self.num_points), np.uint8)
        args = (*batch.arrays(), slots, paths, depth, want_planes, self.max_moves, self.komi, self._zobrist,
                self._nbrs, self._diags, not fill_own_eyes, not early_passes, legal, terminal, planes)
        chunks = parallel_chunks(L)
        if chunks:
            K.leaf_inputs_chunks(*args, chunks)
        else:
            K.leaf_inputs(*args)
        shaped = planes.reshape(L, self.num_planes, self.size, self.size) if want_planes else None
        return LeafInputs(legal=legal, terminal_value=terminal, planes=shaped)

    def pattern_keys(self, planes: np.ndarray) -> np.ndarray:
        """KataGo's bucket of a node: the mover, the point of the last move and of the one before (a pass or
        no move: a point of its own), and the 5x5 window around the last move (empty, the side to move's, the
        mover's, off the board; each stone's atari from the liberty planes where the input has them), all
        read off the input planes: the last move is the mover's one new stone, the one before the side to
        move's."""
        H = K.HISTORY_PLANES
        L = planes.shape[0]
        own, opp = planes[:, 0].astype(bool), planes[:, H].astype(bool)
        flat = (L, self.num_points)
        last_new = (opp & ~planes[:, H + 1].astype(bool)).reshape(flat)
        prev_new = (planes[:, 1].astype(bool) & ~planes[:, 2].astype(bool)).reshape(flat)
        last = np.where(last_new.any(axis=1), last_new.argmax(axis=1), self.num_points)
        prev = np.where(prev_new.any(axis=1), prev_new.argmax(axis=1), self.num_points)
        codes = own * 1 + opp * 2
        if self.liberty_planes:
            atari = planes[:, 2 * H + 1].astype(bool) | planes[:, 2 * H + 4].astype(bool)
            codes = codes + 4 * atari
        centre = np.where(last < self.num_points, last, -1)
        colour = planes[:, 2 * H, 0, 0].astype(np.int64)
        return window_keys(codes.astype(np.int64), centre, np.stack([last, prev, colour], axis=1))

    def rollout_values(self, batch: GoBatch, slots, paths, depth, seed: int) -> np.ndarray:
        slots = np.ascontiguousarray(slots, dtype=np.int32)
        paths = np.ascontiguousarray(paths, dtype=np.int32).reshape(len(slots), -1)
        depth = np.ascontiguousarray(depth, dtype=np.int32)
        out = np.empty(len(slots), np.float32)
        K.rollouts(*batch.arrays(), slots, paths, depth, K.rng_state(seed), self.max_moves, self.komi,
                   self._zobrist, self._nbrs, self._diags, out)
        return out

    def symmetries(self) -> np.ndarray:
        return self._symmetries

    # --- text --------------------------------------------------------------------
    def render(self, batch: GoBatch, i: int) -> str:
        return render_board(self.board(batch, i))

    # --- benchmark -----------------------------------------------------------------
    def random_moves_per_second(self, seconds: float = 2.0, games: int = 64) -> dict:
        """Speed of uniformly random legal play on `games` slots, single-threaded (JIT warmed first)."""
        batch, rng = self.new_batch(games), K.rng_state(0)
        K.random_games(*batch.arrays(), 100, self.max_moves, rng, self._zobrist, self._nbrs, self._diags)
        chunk = 10_000
        moves, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            moves += K.random_games(*batch.arrays(), chunk, self.max_moves, rng, self._zobrist, self._nbrs, self._diags)
        elapsed = time.perf_counter() - start
        return {"moves": moves, "seconds": elapsed, "moves_per_s": moves / elapsed}


def _batch_with_room(game: GoGame, src: GoBatch, boards: int) -> GoBatch:
    """A one-slot copy of src's slot 0 whose history holds `boards` boards (its length + 1 at least)."""
    nn = game.num_points
    batch = GoBatch(
        history=np.zeros((1, boards, nn), np.int8),
        hashes=np.zeros((1, boards), np.uint64),
        length=np.zeros(1, np.int32),
        passes=np.zeros(1, np.int8),
        to_play=np.ones(1, np.int8),
    )
    game.copy_slot(src, 0, batch, 0)
    return batch


def render_board(board: np.ndarray) -> str:
    """ASCII board with GTP coordinates: X black, O white, `.` empty."""
    n = board.shape[0]
    letters = "    " + " ".join(COLUMNS[:n])
    lines = [letters]
    for r in range(n):
        row = " ".join(STONE_TEXT[int(v)] for v in board[r])
        lines.append(f"{n - r:>3} {row} {n - r}")
    lines.append(letters)
    return "\n".join(lines)


@functools.lru_cache(maxsize=None)
def _game(size: int, komi: float, liberty_planes: bool = False) -> GoGame:
    return GoGame(size, komi, liberty_planes)


@functools.lru_cache(maxsize=None)
def _open_game(size: int, komi: float, max_moves: int, liberty_planes: bool = False) -> GoGame:
    """The rules of an open-ended game: Go whose move cap is only the horizon of a search."""
    game = GoGame(size, komi, liberty_planes)
    game.max_moves = max_moves  # nothing in GoGame is derived from it at construction
    return game


def _open_horizon(num_points: int, length: int) -> int:
    """A move cap for an open-ended game of `length` moves: at least 2*N*N moves ahead, doubling."""
    cap = 4 * num_points
    while cap < length + 2 * num_points:
        cap *= 2
    return cap


class GoPosition(Position):
    """One Go position as a value: `play` returns a new position and never changes this one.

    An open-ended position (`open_ended=True`, the GTP board) is never over:
    moves are accepted after two passes (the pass count starts again) and past
    2*N*N moves; its game's move cap stays at least 2*N*N moves ahead, so a
    search from it sees the same horizon as one from the empty board, and
    positional superko is checked against every position since the start.
    """

    def __init__(self, game: GoGame, batch: GoBatch, moves: tuple[int, ...] = (), open_ended: bool = False):
        super().__init__(game, batch, moves)
        self.open_ended = open_ended

    @classmethod
    def initial(cls, size: int = 9, komi: float = 7.5, open_ended: bool = False,
                liberty_planes: bool = False) -> "GoPosition":
        """The empty board; `liberty_planes`: its searches give the network the liberty planes too."""
        if open_ended:
            game = _open_game(size, float(komi), _open_horizon(size * size, 0), bool(liberty_planes))
            return cls(game, _batch_with_room(game, game.new_batch(1), 1), open_ended=True)
        game = _game(size, float(komi), bool(liberty_planes))
        return cls(game, game.new_batch(1))

    def play(self, move: int | str) -> "GoPosition":
        """The position after the side to move plays `move` (action or GTP text); IllegalMove if not legal."""
        if not self.open_ended:
            return super().play(move)
        action = self._action(move)
        length = int(self.batch.length[0]) + 1
        game = self.game
        if game.max_moves < length + 2 * game.num_points:
            game = _open_game(self.size, self.komi, _open_horizon(game.num_points, length), game.liberty_planes)
        batch = _batch_with_room(game, self.batch, length + 1)
        game.play(batch, 0, action)
        batch.passes[0] %= 2  # two passes end nothing here: the count starts again
        return GoPosition(game, batch, self._moves + (action,), open_ended=True)

    @classmethod
    def from_ascii(cls, text: str, komi: float = 7.5, to_play: int = BLACK) -> "GoPosition":
        """A position from rows of `X` (black), `O` (white), `.` (empty), top row first; spaces ignored."""
        rows = [line.replace(" ", "") for line in text.strip().splitlines()]
        rows = [r for r in rows if r]
        n = len(rows)
        if any(len(r) != n for r in rows):
            raise ValueError(f"board is not square: rows of lengths {[len(r) for r in rows]}")
        code = {"X": BLACK, "O": WHITE, ".": EMPTY}
        try:
            board = np.array([[code[ch] for ch in r] for r in rows], np.int8)
        except KeyError as e:
            raise ValueError(f"unknown board character {e.args[0]!r} (use X, O, .)") from None
        game = _game(n, float(komi))
        batch = game.new_batch(1)
        game.set_position(batch, 0, board, to_play)
        return cls(game, batch)

    # --- views -------------------------------------------------------------------------
    @property
    def size(self) -> int:
        return self.game.size

    @property
    def komi(self) -> float:
        return self.game.komi

    @property
    def board(self) -> np.ndarray:
        """[N, N] int8 copy: +1 black, -1 white, 0 empty."""
        return self.game.board(self.batch, 0)

    def score(self) -> float:
        """Tromp-Taylor area score: black minus white minus komi."""
        return self.game.score(self.batch, 0)

    def result_text(self) -> str:
        """GTP/SGF result: "B+3.5", "W+0.5", or "0" for a tie."""
        return score_text(self.score())

    def __repr__(self) -> str:
        side = colour_name(self.to_play)
        return f"GoPosition(size={self.size}, komi={self.komi}, {side} to play)\n{self.render()}"


def neighbours(p: int, size: int) -> list[int]:
    """The orthogonal neighbours of point `p` of a flat size x size board."""
    r, c = divmod(p, size)
    return [(r + dr) * size + c + dc for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1))
            if 0 <= r + dr < size and 0 <= c + dc < size]


def chains(board: np.ndarray, size: int) -> list[list[int]]:
    """The chains of stones of a flat board, each as a sorted list of points."""
    seen = np.zeros(board.shape[0], bool)
    found = []
    for start in np.flatnonzero(board):
        if seen[start]:
            continue
        colour, chain, todo = board[start], [], [int(start)]
        seen[start] = True
        while todo:
            p = todo.pop()
            chain.append(p)
            for q in neighbours(p, size):
                if not seen[q] and board[q] == colour:
                    seen[q] = True
                    todo.append(q)
        found.append(sorted(chain))
    return found


def liberties(board: np.ndarray, size: int, chain: list[int]) -> list[int]:
    """The empty points next to a chain of a flat board."""
    return sorted({q for p in chain for q in neighbours(p, size) if board[q] == 0})


def ownership_and_score(board: np.ndarray, komi: float) -> tuple[np.ndarray, float]:
    """Tromp-Taylor ownership of every point of a finished board, and its score, from black's view.

    A stone owns its point; an empty region belongs to the one colour it
    reaches and is neutral when it reaches both (or neither, on an empty
    board). No stones are removed as dead: the board is scored as it stands,
    as `GoGame.score` scores it, so `score == ownership.sum() - komi`.

    Args:
        board: [N, N] or [N*N] int8, +1 black, -1 white, 0 empty.
        komi: points given to white.
    Returns:
        ownership [N*N] int8 (+1 black, -1 white, 0 neutral), score float (black minus white minus komi).
    """
    flat = np.ascontiguousarray(board, dtype=np.int8).reshape(-1)
    size = int(round(np.sqrt(flat.size)))
    if size * size != flat.size:
        raise ValueError(f"board of {flat.size} points is not square")
    nbrs = _game(size, 0.0)._nbrs
    ownership = flat.copy()
    buf = np.empty(flat.size, np.int32)
    mark = np.zeros(flat.size, np.int64)
    for p in np.flatnonzero(flat == EMPTY):
        if mark[p]:
            continue
        end, reach = K.empty_region(flat, nbrs, p, buf, mark, np.int64(1))
        ownership[buf[:end]] = {1: BLACK, 2: WHITE}.get(int(reach), EMPTY)
    return ownership, float(ownership.sum(dtype=np.int64)) - float(komi)
