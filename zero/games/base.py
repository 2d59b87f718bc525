"""The interface both games implement.

A game keeps many games at once in a *batch*: preallocated numpy arrays, one
row per game slot, updated in place by numba kernels. The search never copies
a board: it keeps only actions in its tree, and asks the game to replay a
path of actions from a slot's current position to reach a leaf
(`leaf_inputs`). Single positions for people and tests (GTP, SGF, the rules
tests) are the value classes `GoPosition` / `GomokuPosition`, whose `play`
returns a new position.

Conventions:
- colours are +1 (black, first player) and -1 (white);
- an action is an int in [0, num_actions): row-major point index
  `row * width + col` with row 0 at the top, and for Go `num_actions - 1` is pass;
- values are from the point of view of the side to move, in [-1, 1];
- `outcome` is from black's point of view: +1 black won, -1 white won, 0 draw.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from zero.notation import action_to_vertex, vertex_to_action


class IllegalMove(ValueError):
    """A move that the rules do not allow; carries the move and the board."""

    def __init__(self, move: str, reason: str, board: str = ""):
        self.move = move
        self.reason = reason
        self.board = board
        text = f"illegal move {move}: {reason}"
        if board:
            text += "\n" + board
        super().__init__(text)


PARALLEL_MIN_LEAVES = 64  # below this many leaves a round's tree and board work stays on one thread


def parallel_chunks(leaves: int) -> int:
    """How many slices to cut a round's leaves into for the parallel numba kernels: one per numba
    thread (at least 16 leaves each), or 0 for the one-thread kernels. The slices are independent
    (each slot's tree and board is its own), so the results do not depend on the number of threads."""
    import numba

    threads = numba.get_num_threads()
    return min(threads, leaves // 16) if threads > 1 and leaves >= PARALLEL_MIN_LEAVES else 0


@dataclass
class LeafInputs:
    """What the game reports about a batch of leaves (L of them)."""

    legal: np.ndarray  # [L, A] bool, legal actions at the leaf
    terminal_value: np.ndarray  # [L] float32, NaN unless the game is over at the leaf; side to move's view
    planes: np.ndarray | None  # [L, C, H, W] uint8 0/1 network input, None when not asked for


class Game(ABC):
    """A two-player zero-sum board game over batches of game slots."""

    name: str
    height: int
    width: int
    num_actions: int  # height * width, plus one for pass in Go
    num_planes: int  # network input planes
    max_moves: int  # a game is over after this many moves
    pass_action: int  # -1 where the game has no pass

    # --- batches -------------------------------------------------------------
    @abstractmethod
    def new_batch(self, size: int):
        """Arrays for `size` game slots, each at the empty starting position."""

    @abstractmethod
    def reset(self, batch, i: int) -> None:
        """Put slot i back to the starting position."""

    @abstractmethod
    def copy_slot(self, src_batch, i: int, dst_batch, j: int) -> None:
        """Copy slot i of src_batch into slot j of dst_batch (same game)."""

    @abstractmethod
    def play(self, batch, i: int, action: int) -> None:
        """Play `action` for the side to move in slot i; IllegalMove if not legal (slot unchanged)."""

    @abstractmethod
    def legal_mask(self, batch, i: int) -> np.ndarray:
        """[A] bool: the legal actions in slot i (all False once the game is over)."""

    @abstractmethod
    def to_play(self, batch, i: int) -> int:
        """+1 if black is to move in slot i, -1 if white."""

    @abstractmethod
    def move_count(self, batch, i: int) -> int:
        """Moves played so far in slot i (passes included)."""

    @abstractmethod
    def is_over(self, batch, i: int) -> bool:
        """Whether the game in slot i has ended (resignation is the caller's business)."""

    @abstractmethod
    def outcome(self, batch, i: int) -> float:
        """Result of a finished game in slot i from black's view: +1, -1 or 0 (draw)."""

    @abstractmethod
    def leaf_inputs(
        self,
        batch,
        slots: np.ndarray,  # [L] int32, the slot each leaf starts from
        paths: np.ndarray,  # [L, D] int32, actions from the slot's position to the leaf
        depth: np.ndarray,  # [L] int32, how many of each row of paths are used
        want_planes: bool = True,
        fill_own_eyes: bool = True,
        early_passes: bool = True,
    ) -> LeafInputs:
        """Replay each path (its actions are legal) on a scratch copy and describe the leaf.

        fill_own_eyes False (Go): `legal` leaves out the side to move's own single-point eyes, moves the
        rules allow and a search never needs (mcts.fill_own_eyes); games without eyes ignore it.
        early_passes False (Go): `legal` holds the pass only where the opponent has just passed or no
        other action is in `legal` (mcts.early_passes); games without a pass ignore it.
        """

    @abstractmethod
    def rollout_values(
        self,
        batch,
        slots: np.ndarray,  # [L] int32
        paths: np.ndarray,  # [L, D] int32
        depth: np.ndarray,  # [L] int32
        seed: int,
    ) -> np.ndarray:
        """[L] float32: result of one uniformly random playout from each leaf, leaf's side to move's view."""

    def pattern_keys(self, planes: np.ndarray) -> np.ndarray:
        """[L] int64: a key (>= 0, or -1 for none) for the local pattern of each leaf whose network input
        planes are `planes` ([L, C, H, W]), for the subtree value bias correction (zero.subtree_bias): two
        leaves in the same key are positions where the same move was just made into the same surroundings."""
        raise NotImplementedError(f"{self.name} has no pattern keys")

    @abstractmethod
    def symmetries(self) -> np.ndarray:
        """[S, A] int: perm[s, a] is where action a goes under symmetry s (identity first; pass fixed)."""

    # --- text ----------------------------------------------------------------
    def action_to_text(self, action: int) -> str:
        """GTP vertex (`D4`, `pass` in Go; columns skip I); ValueError for an action that is not on the board."""
        return action_to_vertex(int(action), self.height, self.width, self._pass_or_none())

    def text_to_action(self, text: str) -> int:
        """Inverse of action_to_text; NotationError (a ValueError) naming the text if it is not a move here."""
        return vertex_to_action(text, self.height, self.width, self._pass_or_none())

    def _pass_or_none(self) -> int | None:
        return self.pass_action if self.pass_action >= 0 else None

    @abstractmethod
    def render(self, batch, i: int) -> str:
        """The board of slot i as text with coordinates."""

    @abstractmethod
    def score(self, batch, i: int) -> float:
        """Go: Tromp-Taylor area score black minus white minus komi. Gomoku: the outcome."""


def central_points(height: int, width: int) -> np.ndarray:
    """The actions of the points at least two lines from every edge (one line on boards under 7): the centre
    5x5 of 9x9, where the ladder's and self-play's random openings put their stones."""
    rows = range(2, height - 2) if height >= 7 else range(1, height - 1)
    cols = range(2, width - 2) if width >= 7 else range(1, width - 1)
    return np.array([r * width + c for r in rows for c in cols], np.int64)


def square_symmetries(height: int, width: int, extra_actions: int = 0) -> np.ndarray:
    """Permutations of the board's points under its symmetries.

    Eight (rotations and reflections) on a square board, four (identity, two
    flips, half turn) on a rectangle. Extra actions (pass) map to themselves.
    """
    idx = np.arange(height * width).reshape(height, width)
    if height == width:
        views = [np.rot90(idx, k) for k in range(4)] + [np.rot90(idx.T, k) for k in range(4)]
    else:
        views = [idx, idx[::-1, :], idx[:, ::-1], idx[::-1, ::-1]]
    perms = []
    for v in views:
        # v[r, c] is the original point that lands on (r, c): so original v[r,c] -> r*width+c
        p = np.empty(height * width + extra_actions, dtype=np.int64)
        p[v.reshape(-1)] = np.arange(height * width)
        p[height * width :] = np.arange(height * width, height * width + extra_actions)
        perms.append(p)
    return np.stack(perms)


class Position:
    """One position as a value, held in a one-slot batch: `play` returns a new position.

    Subclasses add their constructors (`initial`, `from_ascii`) and game-specific views.
    """

    def __init__(self, game: Game, batch, moves: tuple[int, ...] = ()):
        self.game = game
        self.batch = batch  # one slot, never written after construction
        self._moves = tuple(moves)  # actions played since the position was set up

    def _action(self, move: int | str) -> int:
        """An action from an int or GTP text; IllegalMove naming the text if it is not a point here."""
        if not isinstance(move, str):
            return int(move)
        try:
            return self.game.text_to_action(move)
        except ValueError:
            no_pass = move.strip().lower() == "pass" and self.game.pass_action < 0
            reason = f"{self.game.name} has no pass" if no_pass else "off the board"
            raise IllegalMove(move, reason, self.render()) from None

    def play(self, move: int | str):
        """The position after the side to move plays `move` (action or GTP text); IllegalMove if not legal."""
        action = self._action(move)
        batch = self.game.new_batch(1)
        self.game.copy_slot(self.batch, 0, batch, 0)
        self.game.play(batch, 0, action)
        return type(self)(self.game, batch, self._moves + (action,))

    def legal_actions(self) -> list[int]:
        return np.flatnonzero(self.game.legal_mask(self.batch, 0)).tolist()

    def planes(self) -> np.ndarray:
        """[C, H, W] uint8 (0/1) network input planes of this position."""
        one = np.zeros(1, np.int32)
        return self.game.leaf_inputs(self.batch, one, np.zeros((1, 1), np.int32), one).planes[0]

    @property
    def moves(self) -> list[int]:
        return list(self._moves)

    @property
    def to_play(self) -> int:
        return self.game.to_play(self.batch, 0)

    @property
    def is_over(self) -> bool:
        return self.game.is_over(self.batch, 0)

    @property
    def height(self) -> int:
        return self.game.height

    @property
    def width(self) -> int:
        return self.game.width

    def render(self) -> str:
        return self.game.render(self.batch, 0)
