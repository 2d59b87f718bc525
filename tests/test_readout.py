"""flows.readout and zero.losses.positions_read: networks read the same positions, stones that die counted."""

import json

import numpy as np
import pytest
import torch

from flows.readout import ReadoutError, main, readout
from zero.config import load_params
from zero.losses import evaluate, positions_read, reading_shares
from zero.network import init_checkpoint, load_checkpoint, save_checkpoint
from zero.selfplay import play_shard
from zero.shards import read_shard
from zero.train_data import load_window

GO_5 = ["game.size=5", "network.size=b1c8", "network.aux_heads=true", "selfplay.visits=8",
        "selfplay.concurrent_games=4", "selfplay.games_per_shard=6", "selfplay.resign_playout_share=0",
        "selfplay.resign_min_move=6"]


@pytest.fixture(scope="module")
def played(tmp_path_factory):
    """A 5x5 shard of games played out (every position has ownership), one without ownership, two networks."""
    d = tmp_path_factory.mktemp("readout")
    out = load_params(None, GO_5 + ["selfplay.resign_threshold=-1.0"])
    init_checkpoint(out, d / "a.pt", 0)
    init_checkpoint(out, d / "b.pt", 1)
    play_shard(out, d / "a.pt", d / "out.npz", seed=2)
    plain = load_params(None, GO_5 + ["network.aux_heads=false", "selfplay.resign_threshold=1.0"])
    init_checkpoint(plain, d / "plain.pt", 0)
    play_shard(plain, d / "plain.pt", d / "resigned.npz", seed=2)  # no aux heads: no ownership in the shard
    return d


def _stones(shard):
    """Each position's stones from the side to move's view (+1 its own, -1 the opponent's), from the shard."""
    c, h, w = shard.plane_shape
    planes = shard.unpacked_planes().reshape(-1, c, h * w)
    return planes[:, 0] - planes[:, 8]


def test_a_network_that_gives_every_point_to_the_side_to_move_reads_its_own_stones_alive(played):
    shard = read_shard(played / "out.npz")
    net, _ = load_checkpoint(played / "a.pt")
    with torch.no_grad():
        net.ownership_conv.weight.zero_()
        net.ownership_conv.bias.fill_(5.0)
    window = load_window([played / "out.npz"], 10_000)
    got = reading_shares(positions_read(net, window, np.arange(len(window)), 7, torch.device("cpu")))
    stones, own = _stones(shard), shard.ownership.astype(np.float32)
    live = (stones != 0) & (own == stones)
    dead = (stones != 0) & ~live
    assert got["positions"] == len(shard.value) and got["dead_stones"] == dead.sum() > 0
    assert got["live_stones"] == live.sum() > 0
    # it says every stone of the side to move lives and every opponent's stone does not
    assert got["dead_read"] == pytest.approx((dead & (stones < 0)).sum() / dead.sum())
    assert got["live_read"] == pytest.approx((live & (stones > 0)).sum() / live.sum())


def test_networks_are_read_on_the_same_positions(played, capsys):
    out = played / "readout.json"
    assert main([str(played / "out.npz"), "--model", f"a={played / 'a.pt'}", "--model", f"b={played / 'b.pt'}",
                 "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    shard = read_shard(played / "out.npz")
    assert result["positions"] == result["positions_with_ownership"] == len(shard.value)
    a, b = result["models"]["a"], result["models"]["b"]
    assert a["dead_stones"] == b["dead_stones"] and a["live_stones"] == b["live_stones"]
    assert a["value_loss"] != b["value_loss"]  # two networks, one set of positions
    printed = capsys.readouterr()
    assert "| a | " in printed.out
    # each network's pass says how far it is (lines on stderr where it is no terminal)
    batches = -(-len(shard.value) // 256)
    assert f"readout a: {batches}/{batches} batches (100%)" in printed.err and "readout b: " in printed.err
    # a shard without ownership targets: the losses only
    only = readout([played / "resigned.npz"], {"a": played / "a.pt"})
    assert only["positions_with_ownership"] == 0 and "dead_read" not in only["models"]["a"]
    assert "ownership_loss" not in only["models"]["a"]


def test_what_cannot_be_read_is_named(played, tmp_path, capsys):
    with pytest.raises(ReadoutError, match="b: .*no such checkpoint"):
        readout([played / "out.npz"], {"b": tmp_path / "none.pt"})
    other = load_params(None, ["game.size=5", "network.size=b1c8", "game.liberty_planes=true"])
    init_checkpoint(other, tmp_path / "libs.pt", 0)
    with pytest.raises(ReadoutError, match="libs .*23 planes on 5x5 does not read these shards' positions \\(17"):
        readout([played / "out.npz"], {"libs": tmp_path / "libs.pt"})
    (tmp_path / "junk.npz").write_bytes(b"junk")
    assert main([str(tmp_path / "junk.npz"), "--model", f"a={played / 'a.pt'}"]) == 2
    assert "junk.npz" in capsys.readouterr().err
    assert main([str(played / "out.npz"), "--model", "a"]) == 2
    assert "NAME=CHECKPOINT" in capsys.readouterr().err


def test_a_pair_is_set_side_by_side_with_intervals_over_the_games(played, capsys):
    shard = read_shard(played / "out.npz")
    net, meta = load_checkpoint(played / "a.pt")
    with torch.no_grad():  # a network that gives every point to the side to move: it reads no own stone dying
        net.ownership_conv.weight.zero_()
        net.ownership_conv.bias.fill_(5.0)
    save_checkpoint(net, played / "mine.pt", meta, checksum=True)
    models = {"a": played / "a.pt", "b": played / "b.pt", "mine": played / "mine.pt"}
    got = readout([played / "out.npz"], models, [("a", "b"), ("a", "a"), ("mine", "a")])
    assert got["games"] == len(shard.length) > 1
    m = got["models"]
    ab, aa, mine = got["pairs"]
    # the point estimates are the differences of the whole readout's figures
    assert ab["value_loss"]["difference"] == pytest.approx(m["a"]["value_loss"] - m["b"]["value_loss"], abs=1e-5)
    assert ab["value_loss"]["low"] <= ab["value_loss"]["difference"] <= ab["value_loss"]["high"]
    assert ab["value_loss"]["low"] < ab["value_loss"]["high"]
    assert mine["dead_read"]["difference"] == pytest.approx(m["mine"]["dead_read"] - m["a"]["dead_read"])
    # a network against itself differs by nothing, in every draw of the games
    assert aa["value_loss"] == {"difference": 0.0, "low": 0.0, "high": 0.0}
    assert aa["dead_read"] == {"difference": 0.0, "low": 0.0, "high": 0.0}
    assert main([str(played / "out.npz"), "--model", f"a={played / 'a.pt'}", "--model", f"b={played / 'b.pt'}",
                 "--pair", "a:b"]) == 0
    assert "| a - b | " in capsys.readouterr().out
    with pytest.raises(ReadoutError, match="--pair a:c: no --model named 'c'"):
        readout([played / "out.npz"], {"a": played / "a.pt"}, [("a", "c")])
    assert main([str(played / "out.npz"), "--model", f"a={played / 'a.pt'}", "--pair", "a"]) == 2
    assert "expected A:B" in capsys.readouterr().err


def test_one_pass_gives_the_held_out_losses_of_training(played):
    """The readout's losses are zero.losses.evaluate's on the same positions (its one pass replaces that one)."""
    window = load_window([played / "out.npz"], 10_000)
    net, _ = load_checkpoint(played / "a.pt")
    want = evaluate(net, window, np.arange(len(window)), 5, torch.device("cpu"), True)
    got = readout([played / "out.npz"], {"a": played / "a.pt"})["models"]["a"]
    for key in ("policy_loss", "value_loss", "value_std", "ownership_loss", "score_loss"):
        assert got[key] == pytest.approx(want[key], rel=1e-5), key


def test_positions_fall_in_bands_of_stones_on_the_board(played, capsys):
    shard = read_shard(played / "out.npz")
    stones = (_stones(shard) != 0).sum(axis=1)
    assert stones.min() < 6 <= stones.max()  # both bands hold positions
    got = readout([played / "out.npz"], {"a": played / "a.pt", "b": played / "b.pt"}, [("a", "b")], cuts=[6])
    assert got["stone_bands"] == ["0-5", "6+"]
    a = got["models"]["a"]
    early, late = a["by_stones"]
    assert (early["positions"], late["positions"]) == ((stones < 6).sum(), (stones >= 6).sum())
    assert early["dead_stones"] + late["dead_stones"] == a["dead_stones"]
    # a band's losses are the means over its own positions: the whole is their weighted mean
    assert (early["value_loss"] * early["positions"] + late["value_loss"] * late["positions"]) / a["positions"] \
        == pytest.approx(a["value_loss"], rel=1e-6)
    b = got["models"]["b"]
    row = got["pairs"][0]
    assert [band["stones"] for band in row["by_stones"]] == ["0-5", "6+"]
    for band, mine, theirs in zip(row["by_stones"], a["by_stones"], b["by_stones"]):
        assert band["positions"] == mine["positions"]
        assert band["value_loss"]["difference"] == pytest.approx(mine["value_loss"] - theirs["value_loss"], abs=1e-5)
        assert band["value_loss"]["low"] <= band["value_loss"]["difference"] <= band["value_loss"]["high"]
    # 9x9's default: a quarter and half of the board
    assert readout([played / "out.npz"], {"a": played / "a.pt"})["stone_bands"] == ["0-5", "6-11", "12+"]
    assert main([str(played / "out.npz"), "--model", f"a={played / 'a.pt'}", "--model", f"b={played / 'b.pt'}",
                 "--pair", "a:b", "--stones", "6"]) == 0
    out = capsys.readouterr().out
    assert "| a | 6+ | " in out and "| a - b | 0-5 | " in out
    for bad in ("6,x", "6,3", "0"):
        assert main([str(played / "out.npz"), "--model", f"a={played / 'a.pt'}", "--stones", bad]) == 2
        assert "--stones" in capsys.readouterr().err
