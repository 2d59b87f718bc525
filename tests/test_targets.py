"""Go's auxiliary targets on ASCII boards worked out by hand, and their place in shards."""

from __future__ import annotations

import numpy as np
import pytest

from zero.games.go import GoPosition, ownership_and_score
from zero.shards import SHARD_FORMAT, Shard, ShardError, read_shard, write_shard
from zero.targets import aux_targets, no_aux_targets

# Black owns A5 (its own eye), the 2x2 corner A1-B2, and its 8 stones: 13 points.
# White owns E5, E3, E1 and its 7 stones: 10 points. C5-C4 reaches both colours: neutral.
BOARD = """
. X . O .
X X . O O
X X X O .
. . X O O
. . X O .
"""
OWNERSHIP = [
    [1, 1, 0, -1, -1],
    [1, 1, 0, -1, -1],
    [1, 1, 1, -1, -1],
    [1, 1, 1, -1, -1],
    [1, 1, 1, -1, -1],
]


@pytest.mark.parametrize("board,komi,ownership,score", [
    (BOARD, 0.5, OWNERSHIP, 13 - 10 - 0.5),
    (BOARD, 7.5, OWNERSHIP, 13 - 10 - 7.5),
    (". . . . .\n" * 5, 7.5, [[0] * 5] * 5, -7.5),  # nothing reaches any colour: all neutral
    (". . . . .\n" * 2 + ". . O . .\n" + ". . . . .\n" * 2, 0.5, [[-1] * 5] * 5, -25.5),
])
def test_ownership_and_score_by_hand(board, komi, ownership, score):
    pos = GoPosition.from_ascii(board, komi=komi)
    own, got = ownership_and_score(pos.board, komi)
    np.testing.assert_array_equal(own.reshape(5, 5), np.array(ownership, np.int8))
    assert own.dtype == np.int8
    assert got == pytest.approx(score)
    assert got == pytest.approx(pos.score())  # the same count as the rules' own scoring


def test_targets_are_from_the_side_to_move():
    pos = GoPosition.from_ascii(BOARD, komi=0.5)
    to_play = np.array([1, -1, 1, -1], np.int8)
    ownership, score, mask = aux_targets(pos.board, 0.5, to_play)
    assert ownership.shape == (4, 25) and ownership.dtype == np.int8
    flat = np.array(OWNERSHIP, np.int8).reshape(-1)
    for i, side in enumerate(to_play):
        np.testing.assert_array_equal(ownership[i], side * flat)
    np.testing.assert_allclose(score, [2.5, -2.5, 2.5, -2.5])
    assert mask.all()
    own0, score0, mask0 = no_aux_targets(3, 25)
    assert own0.shape == (3, 25) and not own0.any() and not score0.any() and not mask0.any()


def go_shard(positions: int = 4, aux: bool = True) -> Shard:
    n, hw = positions, 25
    rng = np.random.default_rng(0)
    policy = np.zeros((n, hw + 1), np.float16)
    policy[:, -1] = 1
    own, score, mask = aux_targets(GoPosition.from_ascii(BOARD).board, 0.5, np.resize([1, -1], n))
    mask[-1] = False
    return Shard(
        planes=rng.integers(0, 256, size=(n, (17 * hw + 7) // 8)).astype(np.uint8),
        policy=policy, value=np.ones(n, np.int8), game_index=np.zeros(n, np.int32),
        moves=np.full((1, 8), -1, np.int16), length=np.array([n], np.int32), seed=np.zeros(1, np.int64),
        result=np.ones(1, np.int8), resigned=np.zeros(1, bool), no_resign=np.ones(1, bool),
        resign_value=np.zeros((1, 2), np.float32),
        header={"format": SHARD_FORMAT, "game": "go-5", "plane_shape": [17, 5, 5], "num_actions": 26,
                "config": {}, "seed": 0},
        ownership=own if aux else None, score=score if aux else None, aux_mask=mask if aux else None,
    )


def test_shard_round_trip_with_and_without_aux_targets(tmp_path):
    with_aux, without = go_shard(), go_shard(aux=False)
    write_shard(tmp_path / "a.npz", with_aux)
    write_shard(tmp_path / "b.npz", without)
    a, b = read_shard(tmp_path / "a.npz"), read_shard(tmp_path / "b.npz")
    assert a.has_aux and not b.has_aux and b.ownership is None
    np.testing.assert_array_equal(a.ownership, with_aux.ownership)
    np.testing.assert_array_equal(a.score, with_aux.score)
    np.testing.assert_array_equal(a.aux_mask, [True, True, True, False])
    # a shard without them holds exactly the members it always had
    import zipfile
    assert sorted(zipfile.ZipFile(tmp_path / "b.npz").namelist()) == sorted(
        f"{n}.npy" for n in ("header", "planes", "policy", "value", "game_index", "moves", "length", "seed",
                             "result", "resigned", "no_resign", "resign_value"))


def test_inconsistent_aux_targets_are_refused(tmp_path):
    partial = go_shard()
    partial.score = None
    with pytest.raises(ShardError, match="auxiliary targets need all"):
        write_shard(tmp_path / "p.npz", partial)
    bad = go_shard()
    bad.ownership = bad.ownership[:, :24]
    write_shard(tmp_path / "bad.npz", bad)
    with pytest.raises(ShardError, match=r"bad.npz: inconsistent shard: ownership shape \(4, 24\)"):
        read_shard(tmp_path / "bad.npz")
    out_of_range = go_shard()
    out_of_range.ownership[0, 0] = 3
    write_shard(tmp_path / "range.npz", out_of_range)
    with pytest.raises(ShardError, match="ownership values outside"):
        read_shard(tmp_path / "range.npz")
    nan = go_shard()
    nan.score[1] = np.nan
    write_shard(tmp_path / "nan.npz", nan)
    with pytest.raises(ShardError, match="score holds NaN"):
        read_shard(tmp_path / "nan.npz")
