"""Network shapes and checkpoints: round trip, atomic writes, refusal of corrupt or foreign files."""

import pickle

import pytest
import torch

from zero.config import load_params
from zero.games import make_game
from zero.network import CheckpointError, ZeroNet, init_network, load_checkpoint, net_config_for, save_checkpoint


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
