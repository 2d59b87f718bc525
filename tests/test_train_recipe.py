"""The fast recipe's training switches: auxiliary targets, the reuse cap, held-out games, mixed precision."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from test_train import A, C, H, W, synthetic_shard, tiny_params

from zero.network import NetConfig, ZeroNet, load_checkpoint, save_checkpoint
from zero.shards import file_sha256, read_shard, write_shard
from zero.losses import AUX_METRIC_KEYS, aux_losses, evaluate
from zero.train import METRIC_KEYS, holdout_positions, load_window, reuse, train

GAMES = 10  # per shard, 30 positions each


def recipe_shard(seed: int, aux: bool = True, masked_games=(), masked_targets: str = "zero"):
    """300 positions in 10 games. Targets that follow from the planes: every point is owned by the side to
    move when it wins (z = +1) and by the opponent otherwise, and the score is 12 z. The positions of
    `masked_games` carry no target (mask False), their arrays filled with `masked_targets`."""
    shard, _ = synthetic_shard(300, seed)
    shard.game_index = np.repeat(np.arange(GAMES), 300 // GAMES).astype(np.int32)
    shard.moves = np.full((GAMES, 4), -1, np.int16)
    shard.length = np.zeros(GAMES, np.int32)
    shard.seed = np.arange(GAMES, dtype=np.int64)
    shard.result = np.zeros(GAMES, np.int8)
    shard.resigned = np.zeros(GAMES, bool)
    shard.no_resign = np.zeros(GAMES, bool)
    shard.resign_value = np.zeros((GAMES, 2), np.float32)
    if aux:
        z = shard.value.astype(np.int8)
        shard.ownership = np.repeat(z[:, None], H * W, axis=1)
        shard.score = 12.0 * z.astype(np.float32)
        shard.aux_mask = ~np.isin(shard.game_index, masked_games)
        masked = ~shard.aux_mask
        if masked_targets == "zero":
            shard.ownership[masked], shard.score[masked] = 0, 0.0
        else:  # the opposite of the truth, and a wild score
            shard.ownership[masked] *= -1
            shard.score[masked] = -80.0
    return shard


def write(tmp_path, name, shard):
    path = tmp_path / name
    write_shard(path, shard)
    return path


def init_net(tmp_path, aux_heads: bool = False, name: str = "init.pt"):
    torch.manual_seed(0)
    net = ZeroNet(NetConfig(C, H, W, A, blocks=1, filters=8, value_hidden=16, aux_heads=aux_heads))
    path = tmp_path / name
    save_checkpoint(net.eval(), path, {"game": "gomoku-6x6x4"})
    return path


def weights(path):
    return load_checkpoint(path)[0].state_dict()


def same_weights(a, b) -> bool:
    wa, wb = weights(a), weights(b)
    return wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


# --- auxiliary targets -------------------------------------------------------------------------


def test_training_lowers_the_aux_losses(tmp_path):
    init = init_net(tmp_path, aux_heads=True)
    shards = [write(tmp_path, f"s{i}.npz", recipe_shard(i, masked_games=(0, 1))) for i in range(2)]
    fixed = load_window([write(tmp_path, "fixed.npz", recipe_shard(9))], 10_000)
    everything = np.arange(len(fixed))
    before = evaluate(load_checkpoint(init)[0], fixed, everything, 100, torch.device("cpu"), use_aux=True)
    seen = []
    summary = train(tiny_params(steps=150, lr_milestones=[120]), init, shards, tmp_path / "out.pt", seed=1,
                    on_step=lambda step, m: seen.append(m))
    after = evaluate(load_checkpoint(tmp_path / "out.pt")[0], fixed, everything, 100, torch.device("cpu"), use_aux=True)
    assert after["ownership_loss"] < 0.5 * before["ownership_loss"], (before, after)
    assert after["score_loss"] < 0.5 * before["score_loss"], (before, after)
    assert set(summary["final"]) == set(METRIC_KEYS) | set(AUX_METRIC_KEYS) | {"value_std"}
    for m in seen:
        assert m["loss"] == pytest.approx(m["policy_loss"] + m["value_loss"] + m["l2"]
                                          + 1.5 * m["ownership_loss"] + 0.02 * m["score_loss"])


def test_aux_losses_ignore_masked_positions():
    rng = torch.Generator().manual_seed(0)
    own, own_t = torch.rand(6, 9, generator=rng) * 2 - 1, torch.randint(-1, 2, (6, 9), generator=rng).float()
    score, score_t = torch.randn(6, generator=rng) * 20, torch.randn(6, generator=rng) * 20
    mask = torch.tensor([True, True, True, False, False, False])
    first = aux_losses(own[:3], score[:3], own_t[:3], score_t[:3], mask[:3])
    padded = aux_losses(own, score, own_t, score_t, mask)
    assert all(torch.allclose(a, b) for a, b in zip(first, padded))
    # by hand for one position: targets +1 and 0 at two points, a 3-point score miss (quadratic part)
    o, s = aux_losses(torch.tensor([[0.6, 0.0]]), torch.tensor([10.0]), torch.tensor([[1.0, 0.0]]),
                      torch.tensor([13.0]), torch.tensor([True]))
    assert float(o) == pytest.approx((-np.log(0.8) + np.log(2)) / 2)
    assert float(s) == pytest.approx(0.5 * 9)
    none = aux_losses(own, score, own_t, score_t, torch.zeros(6, dtype=torch.bool))
    assert float(none[0]) == 0 and float(none[1]) == 0


def test_masked_positions_do_not_change_training(tmp_path):
    init = init_net(tmp_path, aux_heads=True)
    params = tiny_params(steps=15)
    outs = {}
    for kind, masked, targets in (("zero", (2, 5), "zero"), ("garbage", (2, 5), "garbage"),
                                  ("unmasked", (), "zero")):
        shard = recipe_shard(0, masked_games=masked, masked_targets=targets)
        if kind == "unmasked":  # the garbage targets of the others, now counted
            shard.ownership[np.isin(shard.game_index, (2, 5))] *= -1
            shard.score[np.isin(shard.game_index, (2, 5))] = -80.0
        path = write(tmp_path, f"{kind}.npz", shard)
        train(params, init, [path], tmp_path / f"{kind}.pt", seed=2)
        outs[kind] = tmp_path / f"{kind}.pt"
    assert same_weights(outs["zero"], outs["garbage"])
    assert not same_weights(outs["zero"], outs["unmasked"])


def test_old_shards_still_train(tmp_path):
    """A network with aux heads trains on a window mixing shards with and without targets; a network
    without them trains on shards with targets exactly as on the same shards without."""
    old, new = write(tmp_path, "old.npz", recipe_shard(0, aux=False)), write(tmp_path, "new.npz", recipe_shard(1))
    window = load_window([old, new], 10_000)
    assert window.aux_mask.tolist() == [False] * 300 + [True] * 300
    summary = train(tiny_params(steps=5), init_net(tmp_path, aux_heads=True), [old, new], tmp_path / "a.pt", seed=0)
    assert all(np.isfinite(v) for v in summary["final"].values()) and "ownership_loss" in summary["final"]
    assert load_window([old], 10_000).aux_mask is None
    plain = init_net(tmp_path)
    new_without = write(tmp_path, "new_without.npz", recipe_shard(1, aux=False))
    train(tiny_params(steps=5), plain, [old, new], tmp_path / "b.pt", seed=0)
    train(tiny_params(steps=5), plain, [old, new_without], tmp_path / "c.pt", seed=0)
    assert same_weights(tmp_path / "b.pt", tmp_path / "c.pt")


# --- data reuse ----------------------------------------------------------------------------------


def test_reuse_figures_and_cap_by_hand(tmp_path):
    init = init_net(tmp_path)
    shards = [write(tmp_path, f"s{i}.npz", recipe_shard(i, aux=False)) for i in range(2)]
    # 600 positions, the newest generation (1 shard) 300; 40 steps of 32 draw 1280 positions
    summary = train(tiny_params(steps=40), init, shards, tmp_path / "a.pt", seed=0, newest_shards=1)
    assert summary["reuse"] == {"steps": 40, "planned_steps": 40, "samples_per_position": pytest.approx(1280 / 600),
                                "lifetime_samples_per_position": pytest.approx(1280 / 300),
                                "train_positions": 600, "new_positions": 300}
    # a cap of 2 draws per position over its life: floor(2 * 300 / 32) = 18 steps, 576 draws;
    # the learning-rate drop at 30 of 40 steps moves to round(30 * 18 / 40) = 14
    lrs = []
    summary = train(tiny_params(steps=40, max_samples_per_position=2), init, shards, tmp_path / "b.pt", seed=0,
                    newest_shards=1, on_step=lambda step, m: lrs.append(m["lr"]))
    assert summary["steps"] == 18 and load_checkpoint(tmp_path / "b.pt")[1]["steps"] == 18
    assert summary["reuse"]["samples_per_position"] == pytest.approx(0.96)
    assert summary["reuse"]["lifetime_samples_per_position"] == pytest.approx(1.92)
    assert lrs == pytest.approx([0.05] * 14 + [0.005] * 4)
    # a cap above the figure changes nothing; by default the newest generation is pipeline.selfplay_shards
    # shards (4, so here both)
    summary = train(tiny_params(steps=40, max_samples_per_position=5), init, shards, tmp_path / "c.pt", seed=0)
    assert summary["steps"] == 40 and summary["reuse"]["new_positions"] == 600
    assert same_weights(tmp_path / "a.pt", tmp_path / "c.pt")
    assert reuse(1000, 256, 100_000, 10, max_samples_per_position=1)["steps"] == 1  # at least one step


# --- held-out games ------------------------------------------------------------------------------


def test_holdout_is_by_game_deterministic_and_from_the_newest_shards(tmp_path):
    shards = [write(tmp_path, f"s{i}.npz", recipe_shard(i, aux=False)) for i in range(3)]
    window = load_window(shards, 10_000)
    held = holdout_positions(window, newest_shards=2, share=0.1)  # 20 newest games: 2 held out
    assert held.sum() == 2 * 30 and not held[:300].any()
    keys = set(zip(window.shard_number()[held], window.game_index[held]))
    kept = set(zip(window.shard_number()[~held], window.game_index[~held]))
    assert len(keys) == 2 and not keys & kept  # whole games, never split
    np.testing.assert_array_equal(held, holdout_positions(load_window(shards, 10_000), 2, 0.1))
    assert holdout_positions(window, 1, 0.001).sum() == 30  # at least one game
    assert holdout_positions(window, 1, 0.99).sum() == 9 * 30  # never all of them
    assert not holdout_positions(window, 1, 0.0).any()


def test_held_out_games_are_never_trained_on_and_their_loss_is_reported(tmp_path):
    init = init_net(tmp_path)
    shards = [write(tmp_path, f"s{i}.npz", recipe_shard(i, aux=False)) for i in range(2)]
    window = load_window(shards, 10_000)
    held = holdout_positions(window, 1, 0.2)
    seen = {}
    summary = train(tiny_params(steps=20, holdout_share=0.2), init, shards, tmp_path / "h.pt", seed=4,
                    newest_shards=1, on_step=lambda step, m: seen.update({step: m}))
    # the same training on the shards without the held-out games gives the same weights
    newest = read_shard(shards[1])
    keep = ~held[300:]
    for name in ("planes", "policy", "value", "game_index"):
        setattr(newest, name, getattr(newest, name)[keep])
    reduced = write(tmp_path, "reduced.npz", newest)
    train(tiny_params(steps=20), init, [shards[0], reduced], tmp_path / "r.pt", seed=4)
    assert same_weights(tmp_path / "h.pt", tmp_path / "r.pt")
    # the held-out loss, worked out here from the trained network
    net = load_checkpoint(tmp_path / "h.pt")[0]
    c, h, w = window.plane_shape
    x = torch.from_numpy(np.unpackbits(window.planes[held], axis=1, count=c * h * w).reshape(-1, c, h, w)
                         .astype(np.float32))
    pi = torch.from_numpy(window.policy[held].astype(np.float32))
    z = torch.from_numpy(window.value[held].astype(np.float32))
    with torch.no_grad():
        logits, v = net(x)
    expected_policy = float(-(pi * F.log_softmax(logits, 1)).sum(1).mean())
    expected_value = float(((z - v) ** 2).mean())
    assert summary["holdout"] == {"games": 2, "positions": 60, "policy_loss": pytest.approx(expected_policy, rel=1e-5),
                                  "value_loss": pytest.approx(expected_value, rel=1e-5),
                                  "value_std": pytest.approx(float(v.double().std(unbiased=False)), rel=1e-4)}
    assert summary["final"]["holdout_policy_loss"] == summary["holdout"]["policy_loss"]
    assert summary["final"]["value_std"] == summary["holdout"]["value_std"] > 0.001
    assert load_checkpoint(tmp_path / "h.pt")[1]["final"]["value_std"] == summary["final"]["value_std"]
    assert summary["reuse"]["train_positions"] == 540 and summary["reuse"]["new_positions"] == 240
    assert [s for s, m in sorted(seen.items()) if "holdout_value_loss" in m] == list(range(1, 20, 2))


def test_held_out_aux_losses_are_left_out_when_no_held_out_position_carries_targets(tmp_path):
    init = init_net(tmp_path, aux_heads=True)
    window = load_window([write(tmp_path, "s.npz", recipe_shard(0, masked_games=(0, 1)))], 10_000)
    net, cpu = load_checkpoint(init)[0], torch.device("cpu")
    unmasked = evaluate(net, window, np.flatnonzero(window.game_index >= 2), 100, cpu, use_aux=True)
    masked = evaluate(net, window, np.flatnonzero(window.game_index < 2), 100, cpu, use_aux=True)
    assert set(unmasked) == {"policy_loss", "value_loss", "value_std", *AUX_METRIC_KEYS}
    assert set(masked) == {"policy_loss", "value_loss", "value_std"}  # not a loss of 0.0


def kill_value_head(net):
    """`net` with its value head's one-channel batch norm set as generation 89's, deeper (weight -0.04,
    bias -50): no position lifts it above zero, so the ReLU after it never fires."""
    with torch.no_grad():
        net.value_conv[1].weight.fill_(-0.04)
        net.value_conv[1].bias.fill_(-50.0)
    return net


def test_a_dead_value_head_has_no_spread_and_a_live_one_has(tmp_path):
    # the value head's one-channel convolution behind a ReLU: pushed below zero everywhere, the head says
    # the same of every position (generation 89 of the 9x9 line); training reports it as value_std 0
    init = init_net(tmp_path)
    shards = [write(tmp_path, f"s{i}.npz", recipe_shard(i, aux=False)) for i in range(2)]
    live = train(tiny_params(steps=2), init, shards, tmp_path / "live.pt", seed=4)["final"]["value_std"]
    net, meta = load_checkpoint(init)
    save_checkpoint(kill_value_head(net), tmp_path / "dead-init.pt", meta, checksum=True)
    final = train(tiny_params(steps=2), tmp_path / "dead-init.pt", shards, tmp_path / "dead.pt", seed=4)["final"]
    assert live > 0.001
    assert final["value_std"] == 0.0
    assert load_checkpoint(tmp_path / "dead.pt")[1]["final"]["value_std"] == 0.0


# --- mixed precision -----------------------------------------------------------------------------


def test_mixed_precision_changes_nothing_on_the_cpu(tmp_path):
    init = init_net(tmp_path)
    shards = [write(tmp_path, f"s{i}.npz", recipe_shard(i, aux=False)) for i in range(2)]
    losses = {}
    for on in (False, True):
        losses[on] = []
        train(tiny_params(steps=8, mixed_precision=on), init, shards, tmp_path / f"{on}.pt", seed=6,
              on_step=lambda step, m, on=on: losses[on].append((m["policy_loss"], m["value_loss"])))
    assert losses[False] == losses[True]
    assert file_sha256(tmp_path / "False.pt") == file_sha256(tmp_path / "True.pt")


def test_cpu_bf16_trains_under_bfloat16_autocast_and_saves_a_float32_checkpoint(tmp_path, monkeypatch):
    """train.cpu_bf16: the forward pass in bfloat16 on the CPU (the convolutions' outputs are bfloat16), the
    losses near float32's, and the checkpoint's weights float32 and near float32 training's."""
    init = init_net(tmp_path, aux_heads=True)
    shards = [write(tmp_path, f"s{i}.npz", recipe_shard(i)) for i in range(2)]
    dtypes = []
    forward_aux = ZeroNet.forward_aux

    def spy(net, x):
        out = forward_aux(net, x)
        dtypes.append(out[0].dtype)
        return out

    monkeypatch.setattr(ZeroNet, "forward_aux", spy)
    losses = {}
    for on in (False, True):
        losses[on], dtypes[:] = [], []
        summary = train(tiny_params(steps=8, cpu_bf16=on, learning_rate=0.01), init, shards, tmp_path / f"{on}.pt",
                        seed=6, on_step=lambda step, m, on=on: losses[on].append((m["policy_loss"], m["value_loss"])))
        assert dtypes == [torch.bfloat16 if on else torch.float32] * 8
        assert np.isfinite(losses[on]).all() and summary["steps"] == 8
    assert losses[True] != losses[False]
    np.testing.assert_allclose(np.array(losses[True]), np.array(losses[False]), rtol=0.05, atol=0.02)
    start, off, on = weights(init), weights(tmp_path / "False.pt"), weights(tmp_path / "True.pt")
    assert all(on[k].dtype == off[k].dtype for k in off)
    flat = {name: torch.cat([w[k].flatten().float() for k in off if off[k].is_floating_point()])
            for name, w in (("start", start), ("off", off), ("on", on))}
    moved = (flat["off"] - flat["start"]).norm()
    assert (flat["on"] - flat["off"]).norm() < 0.25 * moved  # the same training, to bfloat16's rounding


# --- channels-last layout on the CPU ---------------------------------------------------------------


def test_channels_last_trains_the_same_network_to_float_rounding_and_saves_a_plain_checkpoint(tmp_path, monkeypatch):
    init = init_net(tmp_path, aux_heads=True)
    shards = [write(tmp_path, f"s{i}.npz", recipe_shard(i)) for i in range(2)]
    layouts = []  # the layout of each training batch and of the first convolution's weight
    forward_aux = ZeroNet.forward_aux

    def spy(net, x):
        conv = next(m for m in net.modules() if isinstance(m, torch.nn.Conv2d))
        layouts.append((x.is_contiguous(memory_format=torch.channels_last),
                        conv.weight.is_contiguous(memory_format=torch.channels_last)))
        return forward_aux(net, x)

    monkeypatch.setattr(ZeroNet, "forward_aux", spy)
    losses = {}
    for on in (False, True):
        losses[on], layouts[:] = [], []
        train(tiny_params(steps=8, channels_last=on), init, shards, tmp_path / f"{on}.pt", seed=6,
              on_step=lambda step, m, on=on: losses[on].append((m["policy_loss"], m["value_loss"])))
        assert layouts == [(on, on)] * 8
    np.testing.assert_allclose(np.array(losses[True]), np.array(losses[False]), rtol=1e-4, atol=1e-5)
    off, on = weights(tmp_path / "False.pt"), weights(tmp_path / "True.pt")
    assert off.keys() == on.keys()
    for k in off:
        torch.testing.assert_close(on[k], off[k], rtol=1e-3, atol=1e-4)
    net, _ = load_checkpoint(tmp_path / "True.pt")
    assert all(p.is_contiguous() for p in net.state_dict().values())  # saved in the default layout


def test_channels_last_holds_for_the_held_out_loss_too(tmp_path, monkeypatch):
    init = init_net(tmp_path, aux_heads=True)
    shards = [write(tmp_path, f"s{i}.npz", recipe_shard(i)) for i in range(2)]
    layouts = []  # per forward pass: (input channels-last, weights channels-last, network in training mode)
    forward_aux = ZeroNet.forward_aux

    def spy(net, x):
        conv = next(m for m in net.modules() if isinstance(m, torch.nn.Conv2d))
        layouts.append((x.is_contiguous(memory_format=torch.channels_last),
                        conv.weight.is_contiguous(memory_format=torch.channels_last), net.training))
        return forward_aux(net, x)

    monkeypatch.setattr(ZeroNet, "forward_aux", spy)
    held = {}
    for on in (False, True):
        layouts[:] = []
        summary = train(tiny_params(steps=4, channels_last=on, holdout_share=0.2), init, shards,
                        tmp_path / f"h{on}.pt", seed=6, newest_shards=1)
        held[on] = summary["holdout"]
        evaluations = [entry for entry in layouts if not entry[2]]
        assert evaluations and all(entry[:2] == (on, on) for entry in layouts)
    assert held[True].keys() == held[False].keys()
    for k, v in held[False].items():
        assert held[True][k] == pytest.approx(v, rel=1e-4, abs=1e-5), k


def test_channels_last_is_a_switch():
    from zero.config import load_params

    base = load_params(None, [])
    assert load_params(None, ["train.channels_last=false"]).digest() == base.digest()
    assert load_params(None, ["train.channels_last=true"]).digest() != base.digest()


# --- CUDA graphs: train.cuda_graph ------------------------------------------------------------------


def test_cuda_graph_changes_nothing_on_the_cpu(tmp_path):
    init = init_net(tmp_path, aux_heads=True)
    shards = [write(tmp_path, f"s{i}.npz", recipe_shard(i)) for i in range(2)]
    summaries = {on: train(tiny_params(steps=6, lr_milestones=[3], cuda_graph=on, max_grad_norm=1.0), init, shards,
                           tmp_path / f"{on}.pt", seed=4) for on in (False, True)}
    assert file_sha256(tmp_path / "True.pt") == file_sha256(tmp_path / "False.pt")
    assert "cuda_graph" not in summaries[True]


@pytest.mark.parametrize("aux_heads", [False, True])
def test_the_graphs_buffers_give_the_steps_of_the_plain_update(tmp_path, monkeypatch, aux_heads):
    """_GraphedUpdate without its graph (what the CPU can run): each minibatch copied into the same buffers,
    the auxiliary targets in their places, across a milestone of the learning rate; the same bytes as the
    plain steps, and the metrics of each step its own."""
    import zero.train as zt

    init = init_net(tmp_path, aux_heads=aux_heads)
    shards = [write(tmp_path, f"s{i}.npz", recipe_shard(i, aux=aux_heads)) for i in range(2)]
    params = tiny_params(steps=7, lr_milestones=[4], max_grad_norm=1.0)
    plain, buffered, made = [], [], []
    train(params, init, shards, tmp_path / "plain.pt", seed=5, on_step=lambda i, m: plain.append(m))

    def buffers_only(model, cfg, optimizer, capture=None):
        made.append(zt._GraphedUpdate(model, cfg, optimizer, capture=False))
        return made[-1]

    monkeypatch.setattr(zt, "_updater", buffers_only)
    train(params, init, shards, tmp_path / "buffered.pt", seed=5, on_step=lambda i, m: buffered.append(m))
    assert len(made) == 1 and made[0].steps == 7 and len(made[0].inputs) == (6 if aux_heads else 3)
    assert file_sha256(tmp_path / "buffered.pt") == file_sha256(tmp_path / "plain.pt")
    keys = [k for k in plain[0] if k != "positions_per_s"]
    assert [[m[k] for k in keys] for m in buffered] == [[m[k] for k in keys] for m in plain]
    assert len({m["policy_loss"] for m in buffered}) == 7  # each step's own metrics, not the buffers' last


@pytest.mark.skipif(not torch.cuda.is_available(), reason="train.cuda_graph captures on a CUDA device; none here")
def test_cuda_graph_trains_as_the_plain_steps_on_cuda(tmp_path):
    init = init_net(tmp_path, aux_heads=True)
    shards = [write(tmp_path, f"s{i}.npz", recipe_shard(i)) for i in range(2)]
    losses, summaries = {}, {}
    for on in (False, True):
        losses[on] = []
        params = tiny_params(steps=12, lr_milestones=[6, 9], cuda_graph=on, max_grad_norm=1.0, device="cuda",
                             mixed_precision=True, holdout_share=0.2)
        summaries[on] = train(params, init, shards, tmp_path / f"{on}.pt", seed=6,
                              on_step=lambda i, m, on=on: losses[on].append((m["policy_loss"], m["lr"])))
    assert summaries[True]["cuda_graph"] is True and "cuda_graph" not in summaries[False]
    assert [lr for _, lr in losses[True]] == [lr for _, lr in losses[False]]
    np.testing.assert_allclose([p for p, _ in losses[True]], [p for p, _ in losses[False]], rtol=2e-2)
    off, on = weights(tmp_path / "False.pt"), weights(tmp_path / "True.pt")
    for k in off:
        torch.testing.assert_close(on[k], off[k], rtol=2e-2, atol=2e-3)
