"""Self-play shards: content, byte-identical replay, SGF per game, corrupt files, resignation calibration."""

import numpy as np
import pytest

from zero.games import make_game
from zero.selfplay import calibrate_resign_threshold, play_shard, resign_false_positive_rate
from zero.sgf import read_collection, read_collection_text
from zero.shards import ShardError, read_shard, verify_shard


def test_shard_round_trip_and_contents(tiny_params, tiny_checkpoint, tmp_path):
    out = tmp_path / "shard.npz"
    summary = play_shard(tiny_params, tiny_checkpoint, out, seed=3, sgf_dir=tmp_path / "sgf")
    shard = read_shard(out)
    game = make_game(tiny_params.game)
    assert summary["games"] == len(shard.length) == 6
    assert summary["positions"] == len(shard.value) == shard.length.sum() - 0  # no resignations at -0.9 here
    assert shard.policy.shape == (len(shard.value), 36)
    np.testing.assert_allclose(shard.policy.astype(np.float32).sum(1), 1, atol=1e-2)
    planes = shard.unpacked_planes()
    assert planes.shape == (len(shard.value), 4, 6, 6)
    # replay each game's moves: the stored planes are the positions before each move, and z
    # is the final result from the side to move's view
    for g in range(len(shard.length)):
        rows = np.flatnonzero(shard.game_index == g)
        batch = game.new_batch(1)
        for r, action in zip(rows, shard.moves[g, : shard.length[g]]):
            expected = game.leaf_inputs(batch, np.zeros(1, np.int32), np.zeros((1, 1), np.int32),
                                        np.zeros(1, np.int32)).planes[0]
            np.testing.assert_array_equal(planes[r], expected)
            assert shard.value[r] == shard.result[g] * game.to_play(batch, 0)
            assert shard.policy[r, action] > 0  # the move played was searched
            game.play(batch, 0, int(action))
        assert game.is_over(batch, 0) and game.outcome(batch, 0) == shard.result[g]
    assert [p.name for p in (tmp_path / "sgf").iterdir()] == ["shard.sgf.gz"]  # one collection a shard
    games = read_collection(tmp_path / "sgf" / "shard.sgf.gz")
    assert [g.moves for g in games] == [list(shard.moves[g, : shard.length[g]]) for g in range(len(shard.length))]


def test_same_seed_gives_the_same_bytes(tiny_params, tiny_checkpoint, tmp_path):
    a = play_shard(tiny_params, tiny_checkpoint, tmp_path / "a.npz", seed=11)
    b = play_shard(tiny_params, tiny_checkpoint, tmp_path / "b.npz", seed=11)
    c = play_shard(tiny_params, tiny_checkpoint, tmp_path / "c.npz", seed=12)
    assert (tmp_path / "a.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()
    assert a["sha256"] == b["sha256"] != c["sha256"]


def test_go_shard_on_5x5(tmp_path):
    from zero.config import load_params
    from zero.network import init_checkpoint

    params = load_params(None, ["game.size=5", "network.size=b1c8", "selfplay.visits=8",
                                "selfplay.concurrent_games=4", "selfplay.games_per_shard=4"])
    init_checkpoint(params, tmp_path / "net.pt", 0)
    summary = play_shard(params, tmp_path / "net.pt", tmp_path / "go.npz", seed=1, sgf_dir=tmp_path)
    shard = read_shard(tmp_path / "go.npz")
    assert shard.plane_shape == (17, 5, 5) and shard.policy.shape[1] == 26
    assert summary["games"] == 4 and all(0 < n <= 50 for n in shard.length)
    assert len(read_collection(tmp_path / "go.sgf.gz")) == 4
    text = read_collection_text(tmp_path / "go.sgf.gz")
    assert text.count("GM[1]") == text.count("SZ[5]") == text.count("KM[7.5]") == text.count("RU[") == 4


def test_corrupt_or_truncated_shard_is_named(tiny_params, tiny_checkpoint, tmp_path):
    out = tmp_path / "good.npz"
    play_shard(tiny_params, tiny_checkpoint, out, seed=1)
    data = out.read_bytes()
    (tmp_path / "half.npz").write_bytes(data[: len(data) // 2])
    (tmp_path / "junk.npz").write_bytes(b"not a shard at all")
    assert verify_shard(out)
    for name in ("half.npz", "junk.npz"):
        assert not verify_shard(tmp_path / name)
        with pytest.raises(ShardError, match=name):
            read_shard(tmp_path / name)
    np.savez(tmp_path / "other.npz", x=np.zeros(3))
    with pytest.raises(ShardError, match="not a zero shard"):
        read_shard(tmp_path / "other.npz")


def test_resignation_and_calibration(tiny_params, tiny_checkpoint, tmp_path):
    # a threshold of +1 resigns at once, except in calibration games, which are played out
    params = tiny_params.model_copy(update={"selfplay": tiny_params.selfplay.model_copy(
        update={"resign_threshold": 1.0, "resign_playout_share": 0.5, "games_per_shard": 12,
                "concurrent_games": 12})})
    play_shard(params, tiny_checkpoint, tmp_path / "r.npz", seed=2)
    shard = read_shard(tmp_path / "r.npz")
    assert shard.no_resign.any() and (~shard.no_resign).any()
    assert shard.resigned[~shard.no_resign].all()
    assert not shard.resigned[shard.no_resign].any()
    assert (shard.length[shard.no_resign] >= 7).all()  # four in a row needs at least 7 moves
    # every calibration game "would have resigned" at +1 for both sides, so the winner's
    # resignation is a false positive: rate = decisive calibration games / calibration games
    rate, total = resign_false_positive_rate([shard], 1.0)
    decisive = (shard.result[shard.no_resign] != 0).sum()
    assert total == shard.no_resign.sum() and rate == pytest.approx(decisive / total)
    assert resign_false_positive_rate([shard], -1.01)[0] == 0.0
    t = calibrate_resign_threshold([shard])
    assert -1.0 <= t <= 1.0 and resign_false_positive_rate([shard], t)[0] <= 0.05


def test_a_shard_sized_by_positions_plays_on_until_it_has_them(tiny_params, tiny_checkpoint, tmp_path):
    """selfplay.min_positions_per_shard: resigned or short games cannot leave a shard short of positions."""
    from zero.config import load_params

    plain = play_shard(tiny_params, tiny_checkpoint, tmp_path / "plain.npz", seed=5)
    target = 3 * plain["positions"] + 1
    sized = tiny_params.model_copy(update={"selfplay": tiny_params.selfplay.model_copy(
        update={"min_positions_per_shard": target})})
    calls = []
    a = play_shard(sized, tiny_checkpoint, tmp_path / "a.npz", seed=5, progress=lambda *c: calls.append(c))
    b = play_shard(sized, tiny_checkpoint, tmp_path / "b.npz", seed=5)
    # the progress of the further rounds goes on from the first games: counts never fall, the last is the shard's
    done, total, positions = zip(*calls)
    assert list(done) == sorted(done) and list(positions) == sorted(positions) and min(total) == plain["games"]
    assert calls[-1] == (a["games"], a["games"], a["positions"])
    shard = read_shard(tmp_path / "a.npz")
    assert a["positions"] >= target and a["games"] > plain["games"] and a["games"] == len(shard.length)
    # each further round is made of the shard's own games: the first games are those of the plain shard
    first = read_shard(tmp_path / "plain.npz")
    np.testing.assert_array_equal(shard.moves[: plain["games"], : first.moves.shape[1]], first.moves)
    assert len(set(shard.seed.tolist())) == len(shard.seed)  # no game played twice
    assert a["sha256"] == b["sha256"]  # reproducible, as every shard is
    # a target the first games already reach changes nothing, and 0 is the params without the switch
    met = sized.model_copy(update={"selfplay": sized.selfplay.model_copy(
        update={"min_positions_per_shard": plain["positions"]})})
    assert play_shard(met, tiny_checkpoint, tmp_path / "met.npz", seed=5)["games"] == plain["games"]
    assert load_params(None, ["selfplay.min_positions_per_shard=0"]).digest() == load_params(None, []).digest()
