"""zero.inference: batch norm folded into the convolutions, leaves evaluated on the device (symmetries and
softmax in torch), the bucketed static buffers of the CUDA-graph path (a CPU stand-in for the capture), and
the params switch `fast_inference` that chooses it without changing anything while it is off."""

import numpy as np
import pytest
import torch

from zero.config import load_params
from zero.evaluator import NetworkEvaluator
from zero.games import make_game
from zero.inference import BUCKETS, LeafNet, bucket_for, fold_batchnorm
from zero.mcts import Search
from zero.network import init_network


def _randomised(net):
    """Batch norms with running statistics and affine weights far from their initial values."""
    g = torch.Generator().manual_seed(3)
    for m in net.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            n = m.num_features
            m.running_mean.copy_(torch.randn(n, generator=g) * 0.5)
            m.running_var.copy_(torch.rand(n, generator=g) * 2 + 0.1)
            m.weight.data.copy_(torch.randn(n, generator=g))
            m.bias.data.copy_(torch.randn(n, generator=g) * 0.3)
    return net.eval()


def _net(overrides):
    params = load_params(None, overrides)
    game = make_game(params.game)
    return params, game, _randomised(init_network(params, game, seed=4))


NETS = [
    ["game.size=9", "network.size=b2c16"],
    ["game.size=7", "network.size=b3c16", "network.global_pooling=true", "network.aux_heads=true"],
    ["game.name=gomoku", "game.height=6", "game.width=6", "game.k=4", "network.size=b2c16"],
]


@pytest.mark.parametrize("overrides", NETS)
def test_folded_network_computes_what_the_network_in_eval_mode_does(overrides):
    params, game, net = _net(overrides)
    folded = fold_batchnorm(net)
    assert not any(isinstance(m, torch.nn.BatchNorm2d) for m in folded.modules())
    assert any(isinstance(m, torch.nn.BatchNorm2d) for m in net.modules())  # the original is untouched
    x = (torch.rand(5, game.num_planes, game.height, game.width, generator=torch.Generator().manual_seed(1))
         < 0.4).float()
    with torch.no_grad():
        want, got = net(x), folded(x)
    torch.testing.assert_close(got[0], want[0], atol=2e-5, rtol=1e-5)
    torch.testing.assert_close(got[1], want[1], atol=2e-6, rtol=1e-5)
    if params.network.aux_heads:
        with torch.no_grad():
            for a, b in zip(folded.forward_aux(x), net.forward_aux(x)):
                torch.testing.assert_close(a, b, atol=5e-5, rtol=1e-5)


def _leaves(game, n, seed=0):
    """n leaves of varied positions: the input planes and legal masks of random slots and paths."""
    rng = np.random.default_rng(seed)
    batch = game.new_batch(n)
    for i in range(n):
        for _ in range(int(rng.integers(0, 12))):
            legal = np.flatnonzero(game.legal_mask(batch, i))
            if game.is_over(batch, i) or len(legal) == 0:
                break
            game.play(batch, i, int(rng.choice(legal)))
    slots = np.arange(n, dtype=np.int32)
    return game.leaf_inputs(batch, slots, np.zeros((n, 1), np.int32), np.zeros(n, np.int32)), batch


@pytest.mark.parametrize("overrides", NETS)
def test_the_fast_evaluator_gives_the_eager_evaluator_s_priors_and_values(overrides):
    _, game, net = _net(overrides)
    inputs, batch = _leaves(game, 24)
    slots = np.arange(24, dtype=np.int32)
    args = (game, batch, slots, np.zeros((24, 1), np.int32), np.zeros(24, np.int32), inputs)
    eager = NetworkEvaluator(net, game.symmetries(), seed=9)
    fast = NetworkEvaluator(net, game.symmetries(), seed=9, fast=True)
    p0, v0 = eager.evaluate(*args)
    p1, v1 = fast.evaluate(*args)
    np.testing.assert_allclose(p1, p0, atol=2e-6)
    np.testing.assert_allclose(v1, v0, atol=2e-6)
    assert (p1[~inputs.legal] == 0).all()
    np.testing.assert_allclose(p1.sum(axis=1), 1.0, atol=1e-5)
    assert fast.nn_positions == eager.nn_positions == 24


def test_a_leaf_with_no_legal_action_gets_uniform_priors():
    _, game, net = _net(NETS[0])
    leaf = LeafNet(net, game.symmetries(), torch.device("cpu"))
    planes = torch.zeros(2, game.num_planes, game.height, game.width)
    legal = torch.zeros(2, game.num_actions, dtype=torch.bool)
    legal[1, 3] = True
    priors, _ = leaf(planes, torch.tensor([0, 5]), legal)
    np.testing.assert_allclose(priors[0].numpy(), 1.0 / game.num_actions, rtol=1e-6)
    assert priors[1, 3] == 1.0 and priors[1].sum() == 1.0


def test_buckets():
    assert [bucket_for(n) for n in (1, 8, 9, 100, 128, 129, 8192)] == [8, 8, 16, 128, 128, 256, 8192]
    assert bucket_for(10_000) == 10_000  # past the largest bucket a batch is its own size
    assert list(BUCKETS) == sorted(BUCKETS)


def test_the_bucketed_static_buffers_pad_each_batch_and_never_leak_a_row_into_another():
    """The graph path's logic on the CPU: one capture per bucket, batches padded to it, and a smaller batch
    after a larger one (stale rows past its end) gives exactly what it gives alone."""
    _, game, net = _net(NETS[0])
    perms = game.symmetries()
    eager = LeafNet(net, perms, torch.device("cpu"), graphs=False)
    bucketed = LeafNet(net, perms, torch.device("cpu"), graphs="emulate")
    rng = np.random.default_rng(2)
    for n in (20, 5, 32, 7, 200, 3):
        planes = torch.from_numpy((rng.random((n, game.num_planes, 9, 9)) < 0.3).astype(np.float32))
        sym = torch.from_numpy(rng.integers(len(perms), size=n))
        legal = torch.from_numpy(rng.random((n, game.num_actions)) < 0.7)
        p0, v0 = eager(planes, sym, legal)
        p1, v1 = bucketed(planes, sym, legal)
        assert p1.shape == (n, game.num_actions) and v1.shape == (n,)
        torch.testing.assert_close(p1, p0, atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(v1, v0, atol=1e-6, rtol=1e-5)
    assert sorted(bucketed._graphs) == [8, 32, 256]
    assert bucketed.captures == 3


def test_searches_with_the_fast_evaluator_build_the_eager_search_s_tree():
    """Priors that agree to float rounding give the same visit counts on a short search."""
    params, game, net = _net(NETS[0])
    config = params.mcts.search(48)
    trees = []
    for fast in (False, True):
        search = Search(game, NetworkEvaluator(net, game.symmetries(), seed=1, fast=fast), 4, config)
        batch = game.new_batch(4)
        search.run(batch, np.arange(4, dtype=np.int32))
        trees.append(search.tree.N[:, 0].copy())
    np.testing.assert_array_equal(trees[0], trees[1])


def test_fast_inference_is_a_switch_that_keeps_the_params_hash_while_off():
    base = load_params(None, [])
    off = load_params(None, ["selfplay.fast_inference=false", "gate.fast_inference=false"])
    on = load_params(None, ["selfplay.fast_inference=true"])
    assert off.digest() == base.digest()
    assert on.digest() != base.digest()
    assert "fast_inference" not in base.model_dump()["selfplay"]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_graphs_give_the_eager_call_s_answer():
    _, game, net = _net(NETS[0])
    device = torch.device("cuda")
    perms = game.symmetries()
    eager = LeafNet(net, perms, device, graphs=False)
    graphed = LeafNet(net, perms, device, graphs=True)
    rng = np.random.default_rng(0)
    for n in (100, 37, 100):
        planes = torch.from_numpy((rng.random((n, game.num_planes, 9, 9)) < 0.3)).to(device, torch.uint8)
        sym = torch.from_numpy(rng.integers(len(perms), size=n)).to(device)
        legal = torch.from_numpy(rng.random((n, game.num_actions)) < 0.7).to(device)
        p0, v0 = eager(planes, sym, legal)
        p1, v1 = graphed(planes, sym, legal)
        torch.testing.assert_close(p1, p0, atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(v1, v0, atol=1e-5, rtol=1e-4)
    assert graphed.captures == 2


def test_on_the_cpu_the_convolutions_run_channels_last_and_give_the_eager_answer():
    """The CPU's fast path keeps its convolution weights in channels-last layout (oneDNN's NHWC kernels) and
    evaluates a leaf's planes in that layout; the answer is the eager network's to float rounding."""
    _, game, net = _net(NETS[1])
    leaf = LeafNet(net, game.symmetries(), torch.device("cpu"))
    convs = [m for m in leaf.net.modules() if isinstance(m, torch.nn.Conv2d)]
    assert leaf.channels_last and convs
    assert all(c.weight.is_contiguous(memory_format=torch.channels_last) for c in convs)
    assert not any(c.weight.is_contiguous(memory_format=torch.channels_last) and c.weight.shape[2] > 1
                   for c in net.modules() if isinstance(c, torch.nn.Conv2d))  # the original is untouched
    rng = np.random.default_rng(5)
    planes = torch.from_numpy((rng.random((16, game.num_planes, 7, 7)) < 0.3).astype(np.float32))
    legal = torch.from_numpy(rng.random((16, game.num_actions)) < 0.7)
    priors, values = leaf(planes, None, legal)
    with torch.no_grad():
        logits, want_values = net(planes)
    want = torch.softmax(logits.masked_fill(~legal, float("-inf")), dim=1)
    torch.testing.assert_close(priors, want, atol=2e-6, rtol=1e-5)
    torch.testing.assert_close(values, want_values, atol=2e-6, rtol=1e-5)


@pytest.mark.parametrize("overrides", NETS)
def test_the_bfloat16_network_on_the_cpu_stays_within_bfloat16_rounding_of_float32(overrides):
    """cpu_bf16: the folded network's weights and activations in bfloat16 on the CPU, the softmax in float32:
    priors and values within bfloat16's rounding of the float32 evaluation, the same legal mask and sums."""
    _, game, net = _net(overrides)
    inputs, batch = _leaves(game, 24)
    slots = np.arange(24, dtype=np.int32)
    args = (game, batch, slots, np.zeros((24, 1), np.int32), np.zeros(24, np.int32), inputs)
    fp32 = NetworkEvaluator(net, game.symmetries(), seed=9, fast=True)
    bf16 = NetworkEvaluator(net, game.symmetries(), seed=9, fast=True, cpu_bf16=True)
    assert bf16.leaf_net.dtype == torch.bfloat16 and fp32.leaf_net.dtype == torch.float32
    assert all(p.dtype == torch.bfloat16 for p in bf16.leaf_net.net.parameters())
    p0, v0 = fp32.evaluate(*args)
    p1, v1 = bf16.evaluate(*args)
    assert p1.dtype == np.float32 and v1.dtype == np.float32
    assert not np.array_equal(p1, p0)  # it does run in bfloat16
    np.testing.assert_allclose(p1, p0, atol=0.03)
    np.testing.assert_allclose(v1, v0, atol=0.05)
    assert (p1[~inputs.legal] == 0).all()
    np.testing.assert_allclose(p1.sum(axis=1), 1.0, atol=1e-5)
    # the priors' order is float32's where they are far apart: the search's choices barely move
    top0, top1 = p0.argmax(axis=1), p1.argmax(axis=1)
    gap = np.sort(p0, axis=1)[:, -1] - np.sort(p0, axis=1)[:, -2]
    assert (top0 == top1)[gap > 0.05].all()


def test_bfloat16_on_the_cpu_needs_the_fast_evaluation():
    _, game, net = _net(NETS[0])
    with pytest.raises(ValueError, match="cpu_bf16 needs the fast evaluation"):
        NetworkEvaluator(net, game.symmetries(), cpu_bf16=True)


def test_a_shard_with_cpu_bf16_plays_its_network_in_bfloat16(tmp_path):
    """selfplay.cpu_bf16 reaches the shard's evaluator: the same games' bytes as the float32 fast path would
    be a switch that does nothing; a shard played again with it is the same bytes (deterministic)."""
    from zero.selfplay import play_shard

    base = ["game.size=5", "network.size=b1c8", "selfplay.visits=8", "selfplay.games_per_shard=4",
            "selfplay.concurrent_games=4", "selfplay.fast_inference=true", "selfplay.threads=1"]
    net = _randomised(init_network(load_params(None, base), make_game(load_params(None, base).game), seed=2))
    loaded = []

    def load(checkpoint, device):
        loaded.append(checkpoint)
        return net

    sha = {}
    for name, extra in (("fp32", []), ("bf16", ["selfplay.cpu_bf16=true"]), ("bf16-again", ["selfplay.cpu_bf16=true"])):
        out = play_shard(load_params(None, base + extra), "net.pt", tmp_path / f"{name}.npz", seed=3, load_network=load)
        assert out["games"] == 4
        sha[name] = out["sha256"]
    assert sha["bf16"] == sha["bf16-again"]
    assert sha["bf16"] != sha["fp32"]


def test_bfloat16_on_a_cpu_without_its_instructions_warns(monkeypatch):
    import zero.inference as inference

    _, game, net = _net(NETS[0])
    monkeypatch.setattr(inference, "cpu_has_bfloat16", lambda: False)
    with pytest.warns(UserWarning, match="no bfloat16 instructions"):
        LeafNet(net, game.symmetries(), torch.device("cpu"), half=True)
    monkeypatch.setattr(inference, "cpu_has_bfloat16", lambda: True)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        LeafNet(net, game.symmetries(), torch.device("cpu"), half=True)
        LeafNet(net, game.symmetries(), torch.device("cpu"))


def test_the_warm_up_of_bfloat16_params_plays_float32_on_a_cpu_without_its_instructions(monkeypatch):
    """`zero warmup` (run by make install) compiles the same kernels either way, so on such a CPU it does not
    spend its games in emulated bfloat16, nor warn about it."""
    import warnings

    import zero.inference as inference
    from zero.bench import warm_up

    monkeypatch.setattr(inference, "cpu_has_bfloat16", lambda: False)
    params = load_params(None, ["game.size=5", "network.size=b1c8", "selfplay.fast_inference=true",
                                "selfplay.cpu_bf16=true", "selfplay.threads=1"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        done = warm_up(params)
    assert done["seconds"] > 0
    assert [str(w.message) for w in caught if "bfloat16" in str(w.message)] == []
