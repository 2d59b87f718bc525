"""A network that grows with its line: the grown network computes what the small one did, its new
weights learn, the schedule only grows, and the pipeline's training grows the champion when the
generation's size asks for it."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F

from flows import stages
from pipeline_support import smoke_line
from zero.config import ConfigError, load_params
from zero.network import NetConfig, ZeroNet, grow_network, load_checkpoint

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _trained_looking(config: NetConfig, seed: int = 0) -> ZeroNet:
    """A network with non-trivial batch-norm statistics and weights, as a trained one has."""
    torch.manual_seed(seed)
    net = ZeroNet(config)
    with torch.no_grad():
        for p in net.parameters():
            p.add_(0.1 * torch.randn_like(p))
        net.train()
        for _ in range(3):
            net(torch.randn(32, config.in_planes, config.height, config.width))
    return net.eval()


GO9 = dict(in_planes=17, height=9, width=9, num_actions=82, value_hidden=32)


@pytest.mark.parametrize("small, big", [
    (dict(blocks=6, filters=64, pooling_every=3, pooling_channels=16, aux_heads=True), (10, 96, 24)),
    (dict(blocks=2, filters=16), (5, 16, 0)),          # deeper only, no pooling
    (dict(blocks=3, filters=16), (3, 40, 0)),          # wider only
    (dict(blocks=4, filters=32, pooling_every=2, pooling_channels=8), (7, 48, 8)),  # pooled channels kept
])
def test_the_grown_network_gives_the_same_outputs(small, big):
    net = _trained_looking(NetConfig(**GO9, **small))
    grown = grow_network(net, *big, seed=3)
    assert (grown.config.blocks, grown.config.filters) == big[:2] and grown.config.pooling_channels == big[2]
    assert sum(p.numel() for p in grown.parameters()) > sum(p.numel() for p in net.parameters())
    x = torch.randn(16, 17, 9, 9)
    with torch.no_grad():
        for a, b in zip(net(x), grown(x)):
            assert torch.allclose(a, b, atol=1e-5), (a - b).abs().max()
        if net.config.aux_heads:
            for a, b in zip(net.forward_aux(x), grown.forward_aux(x)):
                assert torch.allclose(a, b, atol=1e-4), (a - b).abs().max()
        if big[1] > small["filters"]:  # the new channels carry features of their own, not dead weight
            assert grown.trunk(grown.stem(x))[:, small["filters"]:].abs().mean() > 0.01


def test_the_new_weights_learn():
    small = dict(blocks=2, filters=16, pooling_every=2, pooling_channels=4, aux_heads=True)
    grown = grow_network(_trained_looking(NetConfig(**GO9, **small)), 4, 24, 6, seed=1).train()
    x = torch.randn(32, 17, 9, 9)
    logits, value = grown(x)
    (F.cross_entropy(logits, torch.randint(0, 82, (32,))) + value.square().mean()).backward()
    # the heads read the new channels, and each new block's residual branch moves
    assert grown.policy_conv[0].weight.grad[:, 16:].abs().sum() > 0
    assert grown.value_conv[0].weight.grad[:, 16:].abs().sum() > 0
    for i in (0, 1):  # the new blocks, before the old ones
        assert grown.trunk[i].bn2.weight.grad[:16].abs().sum() > 0


def test_a_network_does_not_shrink_or_lose_its_pooling_blocks():
    net = _trained_looking(NetConfig(**GO9, blocks=4, filters=32))
    with pytest.raises(ValueError, match="does not shrink"):
        grow_network(net, 3, 32, 0, seed=0)
    with pytest.raises(ValueError, match="does not shrink"):
        grow_network(net, 4, 24, 0, seed=0)
    pooled = _trained_looking(NetConfig(**GO9, blocks=4, filters=32, pooling_every=3, pooling_channels=8))
    with pytest.raises(ValueError, match="does not shrink"):
        grow_network(pooled, 5, 32, 4, seed=0)


def test_the_schedule_picks_a_size_by_generation_and_only_grows():
    p = load_params(None, ['network.size=b2c16', 'network.size_schedule=[[3, "b3c16"], [6, "b4c24"]]'])
    assert [p.network.for_generation(g).size for g in (0, 2, 3, 5, 6, 40)] == \
        ["b2c16", "b2c16", "b3c16", "b3c16", "b4c24", "b4c24"]
    assert p.network.for_generation(6).pooling_channels == 6
    assert load_params(None, ["network.size=b2c16"]).network.for_generation(9).size == "b2c16"
    for bad, says in [('[[3, "b1c16"]]', "does not shrink"), ('[[3, "b3c16"], [5, "b3c8"]]', "never fewer"),
                      ('[[3, "b3c16"], [3, "b4c16"]]', "one size a generation"), ('[[3, "big"]]', "b<blocks>c<filters>")]:
        with pytest.raises(ConfigError, match=says):
            load_params(None, ["network.size=b2c16", f"network.size_schedule={bad}"])
    # off, the switch is not in the params hash: every existing line keeps its hash
    assert load_params(None, ["network.size=b2c16"]).digest() == \
        load_params(None, ["network.size=b2c16", "network.size_schedule=[]"]).digest()
    assert "size_schedule" not in json.dumps(load_params(None, ["network.size=b2c16"]).model_dump(mode="json"))


def test_a_generation_of_a_larger_size_trains_its_champion_grown(tmp_path):
    """Generation 1 of a line scheduled to grow there: its candidate is the champion grown, then trained."""
    params, (g0, g1) = smoke_line(tmp_path, ["pipeline.selfplay_shards=1", "selfplay.games_per_shard=4",
                                             "train.steps=3", 'network.size_schedule=[[1, "b2c16"]]'])
    small, _ = load_checkpoint(g0.champion)
    stages.selfplay(g1, workers=1)
    stages.dataset(g1)
    summary = stages.train(g1)
    big, meta = load_checkpoint(g1.candidate)
    assert (small.config.blocks, small.config.filters) != (2, 16)
    assert (big.config.blocks, big.config.filters) == (2, 16)
    assert summary["grown_from"] == meta["grown_from"] == f"b{small.config.blocks}c{small.config.filters}"
    assert stages.gate(g1, workers=1)["games"] == params.gate.games  # the grown candidate plays its match


def test_a_line_scheduled_large_from_its_start_is_initialised_large(tmp_path):
    _, (g0, _) = smoke_line(tmp_path, ['network.size_schedule=[[0, "b2c12"]]'])
    net, _ = load_checkpoint(g0.champion)
    assert (net.config.blocks, net.config.filters) == (2, 12)
