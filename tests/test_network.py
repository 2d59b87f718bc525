"""Network shapes and checkpoints: round trip, atomic writes, refusal of corrupt or foreign files;
KataGo's global pooling and auxiliary heads, and the paper's network when they are off."""

import math
import pickle

import pytest
import torch

from zero.config import load_params, network_parameters
from zero.games import make_game
from zero.network import (LATER_FIELDS, CheckpointError, GlobalPoolingBlock, NetConfig, ZeroNet, global_pool,
                          init_network, load_checkpoint, net_config_for, save_checkpoint)


@pytest.mark.parametrize("overrides,planes,actions", [
    (["game.size=9", "network.size=b2c16"], 17, 82),
    (["game.size=5", "network.size=b1c8"], 17, 26),
    (["game.name=gomoku", "game.height=6", "game.width=8", "game.k=4", "network.size=b1c8"], 4, 48),
])
def test_heads_have_the_game_shape(overrides, planes, actions):
    params = load_params(None, overrides)
    game = make_game(params.game)
    net = init_network(params, game, seed=0)
    x = torch.zeros(3, planes, game.height, game.width)
    logits, value = net(x)
    assert logits.shape == (3, actions) and value.shape == (3,)
    assert torch.all(value.abs() < 1)


def test_network_size_by_name():
    params = load_params(None, ["network.size=b3c24"])
    cfg = net_config_for(params, make_game(params.game))
    net = ZeroNet(cfg)
    assert len(net.trunk) == 3 and net.trunk[0].conv1.out_channels == 24


def test_checkpoint_round_trip_carries_config_and_meta(tiny_params, tmp_path):
    game = make_game(tiny_params.game)
    net = init_network(tiny_params, game, seed=7)
    path = tmp_path / "sub" / "net.pt"
    save_checkpoint(net, path, {"generation": 3})
    loaded, meta = load_checkpoint(path)
    assert meta == {"generation": 3}
    assert loaded.config == net.config
    for k, v in net.state_dict().items():
        assert torch.equal(v, loaded.state_dict()[k])
    assert [p.name for p in path.parent.iterdir()] == ["net.pt"]  # no temp file left


def test_same_seed_same_weights(tiny_params):
    game = make_game(tiny_params.game)
    a, b = init_network(tiny_params, game, 1), init_network(tiny_params, game, 1)
    c = init_network(tiny_params, game, 2)
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    assert not torch.equal(a.stem[0].weight, c.stem[0].weight)


def test_corrupt_checkpoint_is_refused(tiny_checkpoint, tmp_path):
    data = tiny_checkpoint.read_bytes()
    bad = tmp_path / "truncated.pt"
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="truncated.pt"):
        load_checkpoint(bad)
    with pytest.raises(CheckpointError, match="no such checkpoint"):
        load_checkpoint(tmp_path / "missing.pt")


class Payload:
    def __reduce__(self):
        return (print, ("code ran",))


def test_checkpoint_that_would_run_code_is_refused(tmp_path, capsys):
    evil = tmp_path / "evil.pt"
    torch.save({"format": "zero-checkpoint-v1", "x": Payload()}, evil)
    with pytest.raises(CheckpointError, match="evil.pt"):
        load_checkpoint(evil)
    assert "code ran" not in capsys.readouterr().out
    plain = tmp_path / "plain.pkl"
    plain.write_bytes(pickle.dumps({"a": 1}))
    with pytest.raises(CheckpointError):
        load_checkpoint(plain)


def test_foreign_torch_file_is_refused(tmp_path):
    other = tmp_path / "other.pt"
    torch.save({"weights": torch.zeros(2)}, other)
    with pytest.raises(CheckpointError, match="not a zero checkpoint"):
        load_checkpoint(other)


# --- global pooling and auxiliary heads (KataGo's switches) -------------------------------------
PAPER_B1_NAMES = [
    "stem.0.weight", *[f"stem.1.{k}" for k in ("weight", "bias", "running_mean", "running_var", "num_batches_tracked")],
    "trunk.0.conv1.weight",
    *[f"trunk.0.bn1.{k}" for k in ("weight", "bias", "running_mean", "running_var", "num_batches_tracked")],
    "trunk.0.conv2.weight",
    *[f"trunk.0.bn2.{k}" for k in ("weight", "bias", "running_mean", "running_var", "num_batches_tracked")],
    "policy_conv.0.weight",
    *[f"policy_conv.1.{k}" for k in ("weight", "bias", "running_mean", "running_var", "num_batches_tracked")],
    "policy_fc.weight", "policy_fc.bias", "value_conv.0.weight",
    *[f"value_conv.1.{k}" for k in ("weight", "bias", "running_mean", "running_var", "num_batches_tracked")],
    "value_fc.0.weight", "value_fc.0.bias", "value_fc.2.weight", "value_fc.2.bias",
]


def test_switches_off_build_the_paper_network_and_write_the_old_config(tmp_path):
    params = load_params(None, ["game.size=5", "network.size=b1c8", "network.global_pooling_every=1"])
    net = init_network(params, make_game(params.game), seed=0)
    assert list(net.state_dict()) == PAPER_B1_NAMES  # global_pooling off: its `every` changes nothing
    assert net.config.pooling_blocks == () and not net.config.aux_heads
    save_checkpoint(net, tmp_path / "net.pt")
    blob = torch.load(tmp_path / "net.pt", weights_only=True)
    assert sorted(blob["config"]) == sorted(
        ["in_planes", "height", "width", "num_actions", "blocks", "filters", "value_hidden"])
    # the same seed gives the same weights and forward as the network built from the old config alone
    old = ZeroNet(NetConfig(**blob["config"]))
    old.load_state_dict(net.state_dict())
    x = torch.rand(2, 17, 5, 5)
    assert all(torch.equal(a, b) for a, b in zip(old.eval()(x), net.eval()(x)))


@pytest.mark.parametrize("blocks,every,expected", [(6, 3, (2, 5)), (1, 3, (0,)), (4, 1, (0, 1, 2, 3)), (5, 2, (0, 2, 4))])
def test_pooling_blocks_are_the_last_and_every_kth_before_it(blocks, every, expected):
    cfg = NetConfig(17, 5, 5, 26, blocks=blocks, filters=8, pooling_every=every, pooling_channels=2)
    assert cfg.pooling_blocks == expected
    net = ZeroNet(cfg)
    assert tuple(i for i, b in enumerate(net.trunk) if isinstance(b, GlobalPoolingBlock)) == expected


def test_switches_on_shapes_parameter_count_and_round_trip(tmp_path):
    params = load_params(None, ["game.size=5", "network.size=b3c8", "network.global_pooling=true",
                                "network.aux_heads=true"])
    net = init_network(params, make_game(params.game), seed=0)
    c = net.config
    assert (c.pooling_every, c.pooling_channels, c.aux_heads) == (3, 2, True)  # a quarter of 8 filters
    assert sum(p.numel() for p in net.parameters()) == network_parameters(
        17, 5, 5, 26, 3, 8, 64, pooling_every=3, pooling_channels=2, aux_heads=True)
    x = torch.rand(4, 17, 5, 5)
    net.eval()
    logits, value, ownership, score = net.forward_aux(x)
    assert logits.shape == (4, 26) and value.shape == (4,) and ownership.shape == (4, 25) and score.shape == (4,)
    assert torch.all(ownership.abs() < 1)
    plain = net(x)
    assert torch.equal(plain[0], logits) and torch.equal(plain[1], value)  # the aux heads leave the paper's alone
    save_checkpoint(net, tmp_path / "net.pt", checksum=True)
    loaded, _ = load_checkpoint(tmp_path / "net.pt")
    assert loaded.config == c
    assert all(torch.equal(a, b) for a, b in zip(loaded.forward_aux(x), net.forward_aux(x)))
    with pytest.raises(ValueError, match="no auxiliary heads"):
        ZeroNet(NetConfig(17, 5, 5, 26, 1, 8)).forward_aux(x)


def test_global_pool_by_hand():
    g = torch.tensor([[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]],
                       [[0.0, 0.0, 0.0], [0.0, -3.0, 0.0], [0.0, 0.0, 12.0]]]])  # [1, 2, 3, 3]
    scale = (math.sqrt(9) - 14) / 10  # -1.1 on a 3x3 board
    expected = torch.tensor([[5.0, 1.0, 5.0 * scale, 1.0 * scale, 9.0, 12.0]])
    torch.testing.assert_close(global_pool(g), expected)


def test_pooled_bias_by_hand():
    """One pooled channel copying input channel 0 (1x1 conv weight 1, batch norm the identity); the linear
    layer maps (mean, scaled mean, max) to a bias per filter."""
    block = GlobalPoolingBlock(filters=2, pooled=1).eval()
    with torch.no_grad():
        block.pool_conv.weight.copy_(torch.tensor([[[[1.0]], [[0.0]]]]))
        block.pool_bn.running_var.fill_(1 - block.pool_bn.eps)  # so the batch norm divides by exactly 1
        block.pool_fc.weight.copy_(torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 10.0]]))
        block.pool_fc.bias.copy_(torch.tensor([0.5, 0.0]))
    x = torch.zeros(1, 2, 3, 3)
    x[0, 0, 0, 0], x[0, 0, 2, 1], x[0, 0, 1, 1] = 9.0, 4.5, -2.0  # ReLU drops the -2: mean 1.5, max 9
    x[0, 1] = 100.0  # channel 1 is not pooled
    mean, maxv, scale = 1.5, 9.0, -1.1
    expected = torch.tensor([[mean + 0.5, mean * scale + 10 * maxv]])
    torch.testing.assert_close(block.pooled_bias(x), expected)


def test_checkpoint_config_of_pooling_is_checked(tmp_path):
    net = ZeroNet(NetConfig(17, 5, 5, 26, 2, 8, pooling_every=1, pooling_channels=2))
    save_checkpoint(net, tmp_path / "ok.pt")
    assert load_checkpoint(tmp_path / "ok.pt")[0].config.pooling_blocks == (0, 1)
    blob = torch.load(tmp_path / "ok.pt", weights_only=True)
    for bad, match in (({"pooling_channels": 0}, "both or neither"), ({"aux_heads": 1}, "not a boolean"),
                       ({"pooling_every": -1}, "not a non-negative integer")):
        torch.save({**blob, "config": {**blob["config"], **bad}}, tmp_path / "bad.pt")
        with pytest.raises(CheckpointError, match=match):
            load_checkpoint(tmp_path / "bad.pt")
    assert set(LATER_FIELDS) == {"pooling_every", "pooling_channels", "aux_heads"}
