"""Go's auxiliary training targets: final ownership and score, per position from the side to move's view.

KataGo (Wu 2019, "Accelerating Self-Play Learning in Go", section 3.4) trains
its network to predict, besides the move and the result, which player ends up
owning each point and the final score. Both come from the final board of a
game that was played out: `aux_targets` turns that board into the per-position
arrays a shard carries (`Shard.ownership`, `Shard.score`, `Shard.aux_mask`).
A game that ended by resignation has no final board to count, so its positions
carry no target (`no_aux_targets`, mask False).
"""

from __future__ import annotations

import numpy as np

from zero.games.go import ownership_and_score


def aux_targets(final_board: np.ndarray, komi: float, to_play: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The auxiliary targets of a played-out game's positions.

    Args:
        final_board: [N, N] or [N*N] int8, the board the game ended on (+1 black, -1 white).
        komi: the game's komi.
        to_play: [P] +1/-1, the side to move at each recorded position.
    Returns:
        ownership [P, N*N] int8 (+1 the side to move owns the point, -1 the opponent, 0 neutral),
        score [P] float32 (the side to move's Tromp-Taylor area minus the opponent's, komi included),
        aux_mask [P] bool, all True.
    """
    own, score = ownership_and_score(final_board, komi)
    side = np.asarray(to_play, np.int8).reshape(-1, 1)
    ownership = (own[None, :] * side).astype(np.int8)
    return ownership, (score * side[:, 0]).astype(np.float32), np.ones(len(side), np.bool_)


def no_aux_targets(positions: int, points: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Placeholders for the positions of a game without a final count (resigned): zeros, mask False."""
    return (np.zeros((positions, points), np.int8), np.zeros(positions, np.float32),
            np.zeros(positions, np.bool_))


def stack_aux_targets(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> dict[str, np.ndarray]:
    """Games' targets (`aux_targets` or `no_aux_targets`, in game order) as a shard's arrays: ownership, score and
    aux_mask over all their positions."""
    return {name: np.concatenate([part[i] for part in parts]) for i, name in enumerate(("ownership", "score",
                                                                                         "aux_mask"))}
