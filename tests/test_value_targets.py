"""The q/z value target: the search's root value by the value head (selfplay.root_values) recorded beside
each position's outcome, and mixed into the value head's target (train.value_q_weight)."""

import numpy as np
import pytest
import torch

from zero.config import SearchConfig, load_params
from zero.evaluator import NetworkEvaluator, masked_softmax
from zero.games import make_game
from zero.games.gomoku import GomokuPosition
from zero.mcts import Search
from zero.network import ScoreUtilityNet, init_checkpoint, init_network
from zero.selfplay import play_shard
from zero.shards import ShardError, read_shard, write_shard
from zero.train import train
from zero.train_data import load_window

GO = ["game.size=5", "network.size=b1c8", "network.aux_heads=true", "mcts.score_utility=0.5",
      "selfplay.visits=16", "selfplay.concurrent_games=4", "selfplay.games_per_shard=4",
      "train.batch_size=16", "train.steps=3", "train.lr_milestones=[2]"]


def _head(u):
    """The value head's value in the trees' test evaluator: a function of the utility, apart from it."""
    return (0.5 * u ** 3 - 0.2).astype(np.float32)


class TwoValues:
    """Priors and a utility that depend only on the leaf's planes, and the value head's value beside it
    (values [L, 2]), with the submit/collect pair of an evaluator that may hold calls in flight."""

    needs_planes = True

    def __init__(self, num_actions, both=True):
        rng = np.random.default_rng(4)
        self.weights = self.vweights = None
        self.rng, self.num_actions, self.both = rng, num_actions, both

    def evaluate(self, game, batch, slots, paths, depth, inputs):
        flat = inputs.planes.reshape(len(slots), -1).astype(np.float64)
        if self.weights is None:
            self.weights = self.rng.normal(size=(flat.shape[1], self.num_actions))
            self.vweights = self.rng.normal(size=flat.shape[1])
        utility = np.tanh(flat @ self.vweights * 0.1).astype(np.float32)
        priors = masked_softmax(flat @ self.weights, inputs.legal)
        return priors, (np.stack([utility, _head(utility)], 1) if self.both else utility)

    def submit(self, game, batch, slots, paths, depth, inputs):
        return self.evaluate(game, batch, slots, paths, depth, inputs)

    def collect(self, handle):
        return handle


def _check_backups(t, b=0):
    """Every edge's V against the tree: a finished child gives V = W; else the child's own value head's value
    (read off its stored utility) plus everything backed up through its edges, from the other side."""
    checked = 0
    for node in range(t.num_nodes[b]):
        for a in np.flatnonzero(t.child[b, node] >= 0):
            c = t.child[b, node, a]
            if not t.expanded[b, c] or t.N[b, node, a] == 0:
                continue
            if not np.isnan(t.terminal[b, c]):
                np.testing.assert_allclose(t.V[b, node, a], t.W[b, node, a], atol=1e-4)
            else:
                head = _head(np.array([t.value[b, c]]))[0]
                np.testing.assert_allclose(t.V[b, node, a], -(head + t.V[b, c].sum()), atol=1e-3)
                np.testing.assert_allclose(t.W[b, node, a], -(t.value[b, c] + t.W[b, c].sum()), atol=1e-3)
            checked += 1
    return checked


def _position():
    pos = GomokuPosition.initial(6, 6, 4)
    for move in ("C3", "D4", "C4"):
        pos = pos.play(move)
    return pos.game, pos


@pytest.mark.parametrize("config", [
    dict(visits=120),
    dict(visits=120, leaf_batch=4),
    dict(visits=120, leaf_batch=4, leaf_batches_in_flight=2),
], ids=["one-leaf", "virtual-loss", "in-flight"])
def test_the_tree_backs_up_the_value_heads_values_beside_the_utility_and_keeps_them_on_reuse(config):
    game, pos = _position()
    search = Search(game, TwoValues(game.num_actions), 1, SearchConfig(**config))
    search.run(pos.batch, np.array([0]))
    t = search.tree
    assert _check_backups(t) > 20
    root = np.array([0])
    want = t.V[0, 0].sum() / t.N[0, 0].sum()
    np.testing.assert_allclose(t.root_head_values(root), [want], rtol=1e-6)
    assert abs(t.root_head_values(root)[0] - t.root_values(root)[0][0]) > 1e-3  # apart from the utility's

    plain = Search(game, TwoValues(game.num_actions, both=False), 1, SearchConfig(**config))
    plain.run(pos.batch, np.array([0]))  # the head's values ride along: the search itself is the same
    np.testing.assert_array_equal(plain.tree.N, t.N)
    np.testing.assert_array_equal(plain.tree.W, t.W)
    # one value: V is W, up to the rounding of the virtual losses added to W and taken back
    np.testing.assert_allclose(plain.tree.V, plain.tree.W, atol=1e-5)
    np.testing.assert_allclose(plain.tree.root_head_values(root), plain.tree.root_values(root)[0])

    a = int(t.N[0, 0].argmax())
    child_v = t.V[0, t.child[0, 0, a]].copy()
    t.advance(0, a)
    np.testing.assert_array_equal(t.V[0, 0], child_v)
    _check_backups(t)
    search.run(pos.play(a).batch, root)
    assert _check_backups(t) > 20
    t.reset(0)
    assert not t.V[0, 0].any()


def _go(overrides=()):
    params = load_params(None, [*GO, *overrides])
    game = make_game(params.game)
    return params, game, init_network(params, game, seed=3).eval()


@pytest.mark.parametrize("fast", [False, True], ids=["eager", "fast"])
def test_the_evaluator_returns_the_value_head_beside_the_utility(fast):
    params, game, net = _go()
    batch = game.new_batch(3)
    slots = np.arange(3, dtype=np.int32)
    for s, a in ((1, 7), (2, 12)):
        game.play(batch, s, a)
    zeros = np.zeros((3, 1), np.int32)
    inputs = game.leaf_inputs(batch, slots, zeros, np.zeros(3, np.int32))
    args = (game, batch, slots, zeros, zeros[:, 0], inputs)
    priors, both = NetworkEvaluator(ScoreUtilityNet(net, 0.5, 10.0, head_value=True), None, fast=fast).evaluate(*args)
    plain_priors, utility = NetworkEvaluator(ScoreUtilityNet(net, 0.5, 10.0), None, fast=fast).evaluate(*args)
    assert both.shape == (3, 2) and utility.shape == (3,)
    np.testing.assert_array_equal(priors, plain_priors)
    np.testing.assert_allclose(both[:, 0], utility, atol=1e-6)
    with torch.no_grad():
        value = net.forward_aux(torch.from_numpy(inputs.planes).float())[1].numpy()
    np.testing.assert_allclose(both[:, 1], value, atol=1e-4)
    assert np.abs(both[:, 1] - both[:, 0]).max() > 1e-4


def test_self_play_records_each_kept_positions_root_value_and_training_mixes_it_in(tmp_path):
    # the campaign's way of playing: playout caps (a share of positions kept), searches in steps, fast inference
    play = ["selfplay.root_values=true", "selfplay.full_search_share=0.5", "selfplay.fast_visits=4",
            "selfplay.step_rounds=2", "selfplay.fast_inference=true"]
    params = load_params(None, [*GO, *play])
    init_checkpoint(params, tmp_path / "net.pt", 0)
    play_shard(params, tmp_path / "net.pt", tmp_path / "q.npz", seed=1)
    shard = read_shard(tmp_path / "q.npz")
    assert shard.root_value.shape == shard.value.shape and len(shard.value) > 10
    assert np.abs(shard.root_value).max() <= 1.0 and np.unique(shard.root_value).size > 5

    off = load_params(None, [*GO, *play[1:]])  # without the switch: no root values, the same games
    play_shard(off, tmp_path / "net.pt", tmp_path / "z.npz", seed=1)
    plain = read_shard(tmp_path / "z.npz")
    assert plain.root_value is None
    np.testing.assert_array_equal(plain.value, shard.value)
    np.testing.assert_array_equal(plain.moves, shard.moves)

    mixed = load_params(None, [*GO, *play, "train.value_q_weight=0.5"])
    summary = train(mixed, tmp_path / "net.pt", [tmp_path / "z.npz", tmp_path / "q.npz"], tmp_path / "out.pt", seed=0)
    assert summary["value_q"] == {"weight": 0.5, "positions_with_root_value": len(shard.value)}
    assert "value_q" not in train(off, tmp_path / "net.pt", [tmp_path / "q.npz"], tmp_path / "o2.pt", seed=0)


def test_gumbel_self_play_records_its_root_values_too(tmp_path):
    params = load_params(None, [*GO, "selfplay.root_values=true", "mcts.root=gumbel", "mcts.gumbel_considered=4"])
    init_checkpoint(params, tmp_path / "net.pt", 0)
    play_shard(params, tmp_path / "net.pt", tmp_path / "g.npz", seed=4)
    shard = read_shard(tmp_path / "g.npz")
    assert shard.root_value.shape == shard.value.shape and np.unique(shard.root_value).size > 5


def test_the_window_mixes_q_into_z_where_a_position_has_one(tmp_path):
    params = load_params(None, [*GO, "selfplay.root_values=true"])
    init_checkpoint(params, tmp_path / "net.pt", 0)
    play_shard(params, tmp_path / "net.pt", tmp_path / "q.npz", seed=2)
    play_shard(load_params(None, GO), tmp_path / "net.pt", tmp_path / "z.npz", seed=3)
    window = load_window([tmp_path / "z.npz", tmp_path / "q.npz"], 100_000)
    older, newer = window.shards[0]["positions"], window.shards[1]["positions"]
    assert np.isnan(window.root_value[:older]).all() and not np.isnan(window.root_value[older:]).any()
    index = np.arange(older + newer)
    z = window.value.astype(np.float32)
    q = read_shard(tmp_path / "q.npz").root_value
    np.testing.assert_array_equal(window.value_target(index), z)
    mix = window.value_target(index, 0.25)
    np.testing.assert_array_equal(mix[:older], z[:older])
    np.testing.assert_allclose(mix[older:], 0.75 * z[older:] + 0.25 * q, rtol=1e-6)
    identity = np.broadcast_to(np.arange(window.num_actions), (len(index), window.num_actions))
    np.testing.assert_allclose(window.batch(index, identity, 0.25)[2], mix)


def test_a_shards_root_values_are_checked_on_reading(tmp_path):
    params = load_params(None, [*GO, "selfplay.root_values=true"])
    init_checkpoint(params, tmp_path / "net.pt", 0)
    play_shard(params, tmp_path / "net.pt", tmp_path / "q.npz", seed=2)
    shard = read_shard(tmp_path / "q.npz")
    shard.root_value = shard.root_value.copy()
    shard.root_value[0] = 3.0
    write_shard(tmp_path / "bad.npz", shard)
    with pytest.raises(ShardError, match=r"bad.npz: .*root_value outside"):
        read_shard(tmp_path / "bad.npz")
    shard.root_value = shard.root_value[:-1]
    write_shard(tmp_path / "short.npz", shard)
    with pytest.raises(ShardError, match=r"short.npz: .*root_value float32 shape"):
        read_shard(tmp_path / "short.npz")


def test_the_switches_are_named_when_they_disagree_and_keep_the_hash_while_off():
    with pytest.raises(ValueError, match="train.value_q_weight needs selfplay.root_values"):
        load_params(None, ["train.value_q_weight=0.25"])
    with pytest.raises(ValueError, match="value_q_weight"):
        load_params(None, ["selfplay.root_values=true", "train.value_q_weight=1.5"])
    base = load_params(None, [])
    assert load_params(None, ["selfplay.root_values=false", "train.value_q_weight=0"]).digest() == base.digest()
    assert load_params(None, ["selfplay.root_values=true"]).digest() != base.digest()


def test_a_generations_record_says_how_many_value_targets_mixed_in_a_root_value():
    from flows.tracking import GenerationFacts, generation_record

    facts = GenerationFacts(3, "abc", "run", {"run_seed": 1}, {"git_commit": "f00", "git_dirty": False})
    shard = {"games": 4, "positions": 40, "resigned": 1, "reused": False, "nn_evals": 900}
    train_summary = {"steps": 3, "positions": 40, "seed": 5, "sha256": "cafe", "final": {}, "reuse": {},
                     "value_q": {"weight": 0.5, "positions_with_root_value": 30}}
    args = ("go-5x5", {}, [shard])
    rest = ({}, {"hashes": {}}, "run-id", "2", {}, "lock", 12.0)
    record = generation_record(facts, *args, train_summary, *rest)
    assert record["train"]["value_q"] == {"weight": 0.5, "positions_with_root_value": 30}
    del train_summary["value_q"]
    assert "value_q" not in generation_record(facts, *args, train_summary, *rest)["train"]
