"""KataGo's surprise weighting (train.policy_surprise_weight, train.value_surprise_weight): the starting
network reads each training position once, and the draws favour those whose search policy or outcome it
did not expect."""

import numpy as np
import pytest
import torch

from zero.config import load_params
from zero.network import init_checkpoint, load_checkpoint
from zero.selfplay import play_shard
from zero.losses import surprise, surprise_weights
from zero.train import train
from zero.train_data import WindowError, training_data

GO = ["game.size=5", "network.size=b1c8", "selfplay.visits=16", "selfplay.concurrent_games=4",
      "selfplay.games_per_shard=4", "train.batch_size=16", "train.steps=3", "train.lr_milestones=[2]"]


@pytest.fixture(scope="module")
def shard(tmp_path_factory):
    d = tmp_path_factory.mktemp("surprise")
    params = load_params(None, GO)
    init_checkpoint(params, d / "net.pt", 0)
    play_shard(params, d / "net.pt", d / "s.npz", seed=1)
    return d


def test_the_surprises_are_the_kl_divergences_of_the_targets_from_the_network(shard):
    params = load_params(None, GO)
    net, _ = load_checkpoint(shard / "net.pt", torch.device("cpu"))
    data = training_data([shard / "s.npz"], params.train, net.config, 1)
    index = data.training_positions()
    policy, value = surprise(net, data.window, index, 7, torch.device("cpu"))  # batches of 7: a ragged last one
    identity = np.broadcast_to(np.arange(data.window.num_actions), (len(index), data.window.num_actions))
    planes, pi, z = data.window.batch(index, identity)
    with torch.no_grad():
        logits, v = net.eval()(torch.from_numpy(planes))
    prior = torch.softmax(logits, 1).double().numpy()
    pi = pi.astype(np.float64)
    expect = np.where(pi > 0, pi * np.log(np.where(pi > 0, pi, 1) / prior), 0).sum(1)
    np.testing.assert_allclose(policy, expect, rtol=1e-4, atol=1e-6)
    won, t = (1 + v.double().numpy()) / 2, (1 + z.astype(np.float64)) / 2  # z is ±1 here: no entropy of its own
    assert set(np.unique(z)) <= {-1.0, 1.0}
    np.testing.assert_allclose(value, -(t * np.log(won) + (1 - t) * np.log(1 - won)), rtol=1e-4)
    assert (policy > 0).all() and (value > 0).all()


def test_the_weights_mix_uniform_and_surprise_shares():
    policy, value = np.array([1.0, 3.0, 0.0, 0.0]), np.array([0.0, 0.0, 0.0, 2.0])
    w = surprise_weights(policy, value, 0.5, 0.25)
    np.testing.assert_allclose(w, 0.25 + 0.5 * policy / 1.0 + 0.25 * value / 0.5)
    assert w.mean() == pytest.approx(1.0)  # each share keeps its mass: the weights average 1
    np.testing.assert_allclose(surprise_weights(policy, np.zeros(4), 0.0, 0.5), np.ones(4))  # nothing to favour
    np.testing.assert_allclose(surprise_weights(policy, value, 0.0, 0.0), np.ones(4))


def test_draws_follow_the_weights_and_leave_the_held_out_positions_out(shard):
    params = load_params(None, [*GO, "train.holdout_share=0.25"])
    net, _ = load_checkpoint(shard / "net.pt", torch.device("cpu"))
    data = training_data([shard / "s.npz"], params.train, net.config, 1)
    positions = data.training_positions()
    assert len(positions) < len(data.window) and not data.held[positions].any()
    weights = np.zeros(len(positions))
    weights[[0, 3]] = [1.0, 3.0]
    data.weigh(weights)
    index, inverse = data.draw(np.random.default_rng(0), 40_000)
    assert set(np.unique(index)) == {positions[0], positions[3]}
    assert (index == positions[3]).mean() == pytest.approx(0.75, abs=0.01)
    assert inverse.shape == (40_000, data.window.num_actions)
    for bad in (np.ones(len(positions) + 1), -np.ones(len(positions)), np.zeros(len(positions)),
                np.full(len(positions), np.nan)):
        with pytest.raises(WindowError, match="draw weights"):
            data.weigh(bad)


def test_a_training_with_the_switch_weighs_its_draws_and_says_what_they_are_worth(shard, tmp_path):
    on = load_params(None, [*GO, "train.policy_surprise_weight=0.5", "train.value_surprise_weight=0.25"])
    summary = train(on, shard / "net.pt", [shard / "s.npz"], tmp_path / "on.pt", seed=0)
    s = summary["surprise"]
    assert (s["policy_weight"], s["value_weight"], s["positions"]) == (0.5, 0.25, summary["positions"])
    assert s["policy_kl_mean"] > 0 and s["value_kl_mean"] > 0 and 0 < s["effective_share"] < 1
    train(on, shard / "net.pt", [shard / "s.npz"], tmp_path / "again.pt", seed=0)
    assert _weights(tmp_path / "again.pt") == _weights(tmp_path / "on.pt")  # a function of the network and window
    off = load_params(None, GO)
    plain = train(off, shard / "net.pt", [shard / "s.npz"], tmp_path / "off.pt", seed=0)
    assert "surprise" not in plain and _weights(tmp_path / "off.pt") != _weights(tmp_path / "on.pt")


def _weights(checkpoint) -> list[bytes]:
    net, _ = load_checkpoint(checkpoint, torch.device("cpu"))
    return [t.numpy().tobytes() for t in net.state_dict().values()]


def test_the_switches_are_shares_that_keep_the_hash_while_off():
    with pytest.raises(ValueError, match="together at most 1"):
        load_params(None, ["train.policy_surprise_weight=0.75", "train.value_surprise_weight=0.5"])
    with pytest.raises(ValueError, match="policy_surprise_weight"):
        load_params(None, ["train.policy_surprise_weight=-0.1"])
    base = load_params(None, [])
    assert load_params(None, ["train.policy_surprise_weight=0", "train.value_surprise_weight=0"]).digest() == \
        base.digest()
    assert load_params(None, ["train.value_surprise_weight=0.1"]).digest() != base.digest()


def test_a_generations_record_keeps_what_the_weighted_draws_were_worth():
    from flows.tracking import GenerationFacts, generation_record

    facts = GenerationFacts(3, "abc", "run", {"run_seed": 1}, {"git_commit": "f00", "git_dirty": False})
    shard = {"games": 4, "positions": 40, "resigned": 1, "reused": False, "nn_evals": 900}
    weighed = {"policy_weight": 0.5, "value_weight": 0.0, "positions": 40, "policy_kl_mean": 0.8,
               "value_kl_mean": 0.6, "effective_share": 0.7, "seconds": 1.5}
    train_summary = {"steps": 3, "positions": 40, "seed": 5, "sha256": "cafe", "final": {}, "reuse": {},
                     "surprise": weighed}
    args, rest = ("go-5x5", {}, [shard]), ({}, {"hashes": {}}, "run-id", "2", {}, "lock", 12.0)
    assert generation_record(facts, *args, train_summary, *rest)["train"]["surprise"] == weighed
    del train_summary["surprise"]
    assert "surprise" not in generation_record(facts, *args, train_summary, *rest)["train"]
