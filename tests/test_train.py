"""Training on tiny synthetic shards: it learns, it is repeatable, symmetries move planes and targets together."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from zero.config import params_from_dict
from zero.games.base import square_symmetries
from zero.network import NetConfig, ZeroNet, load_checkpoint, save_checkpoint
from zero.shards import SHARD_FORMAT, Shard, file_sha256, pack_planes, write_shard
from zero.train import METRIC_KEYS, RESUME_SUFFIX, WindowError, apply_symmetry, load_window, train

C, H, W = 4, 6, 6
A = H * W


def synthetic_shard(n: int, seed: int, plane_shape=(C, H, W), num_actions=A) -> tuple[Shard, np.ndarray]:
    """n positions with one stone each: the policy target is the stone's point, the value
    is +1 if the stone is on plane 0 and -1 if on plane 1 (both symmetry-invariant relations).
    Also returns the stone points [n]."""
    c, h, w = plane_shape
    rng = np.random.default_rng(seed)
    point = rng.integers(0, h * w, size=n)
    which = rng.integers(0, 2, size=n)
    planes = np.zeros((n, c, h * w), np.float32)
    planes[np.arange(n), which, point] = 1
    planes[:, c - 1] = 1  # a constant plane, as the games have
    policy = np.zeros((n, num_actions), np.float32)
    policy[np.arange(n), point] = 1
    shard = Shard(
        planes=pack_planes(planes.reshape(n, c, h, w)),
        policy=policy.astype(np.float16),
        value=np.where(which == 0, 1, -1).astype(np.int8),
        game_index=np.zeros(n, np.int32),
        moves=np.full((1, 4), -1, np.int16),
        length=np.zeros(1, np.int32),
        seed=np.array([seed], np.int64),
        result=np.zeros(1, np.int8),
        resigned=np.zeros(1, bool),
        no_resign=np.zeros(1, bool),
        resign_value=np.zeros((1, 2), np.float32),
        header={
            "format": SHARD_FORMAT,
            "game": "gomoku-6x6x4",
            "plane_shape": list(plane_shape),
            "num_actions": num_actions,
            "config": {},
            "seed": seed,
        },
    )
    return shard, point


def tiny_params(**train):
    base = {"batch_size": 32, "steps": 40, "learning_rate": 0.05, "lr_milestones": [30], "device": "cpu"}
    base.update(train)
    return params_from_dict({"network": {"size": "b1c8", "value_hidden": 16}, "train": base})


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture
def setup(tmp_path):
    torch.manual_seed(0)
    net = ZeroNet(NetConfig(in_planes=C, height=H, width=W, num_actions=A, blocks=1, filters=8, value_hidden=16))
    init = tmp_path / "init.pt"
    save_checkpoint(net.eval(), init, {"game": "gomoku-6x6x4", "generation": 0})
    shards = []
    for i in range(2):
        shard, _ = synthetic_shard(300, seed=i)
        path = tmp_path / f"shard{i}.npz"
        write_shard(path, shard)
        shards.append(path)
    return init, shards


def eval_loss(net: ZeroNet, shard: Shard) -> float:
    x = torch.from_numpy(shard.unpacked_planes())
    pi = torch.from_numpy(shard.policy.astype(np.float32))
    z = torch.from_numpy(shard.value.astype(np.float32))
    with torch.no_grad():
        logits, v = net.eval()(x)
        return float(-(pi * F.log_softmax(logits, 1)).sum(1).mean() + ((z - v) ** 2).mean())


def test_training_lowers_the_loss(setup, tmp_path):
    init, shards = setup
    fixed, _ = synthetic_shard(200, seed=99)
    before = eval_loss(load_checkpoint(init)[0], fixed)
    out = tmp_path / "out.pt"
    summary = train(tiny_params(steps=120, lr_milestones=[100]), init, shards, out, seed=1)
    after = eval_loss(load_checkpoint(out)[0], fixed)
    assert after < 0.5 * before, (before, after)
    assert summary["steps"] == 120 and summary["positions"] == 600 and summary["shards"] == 2
    assert set(summary["final"]) == set(METRIC_KEYS) | {"value_std"}
    assert summary["final"]["value_std"] > 0.01  # the trained value head tells positions apart


def test_out_checkpoint_loads_back_with_meta(setup, tmp_path):
    init, shards = setup
    out = tmp_path / "out.pt"
    train(tiny_params(steps=3), init, shards, out, seed=5, meta={"generation": 1})
    net, meta = load_checkpoint(out)
    assert not net.training
    assert meta["steps"] == 3 and meta["seed"] == 5 and meta["positions"] == 600
    assert meta["shards"] == [file_sha256(p) for p in shards]
    assert meta["generation"] == 1 and meta["game"] == "gomoku-6x6x4"
    assert meta["init_checkpoint_sha256"] == file_sha256(init)


def test_same_seed_same_weights(setup, tmp_path):
    init, shards = setup
    outs = []
    for name, seed in (("a", 3), ("b", 3), ("c", 4)):
        out = tmp_path / f"{name}.pt"
        train(tiny_params(steps=10), init, shards, out, seed=seed)
        outs.append(load_checkpoint(out)[0].state_dict())
    same = all(torch.equal(outs[0][k], outs[1][k]) for k in outs[0])
    differ = any(not torch.equal(outs[0][k], outs[2][k]) for k in outs[0] if outs[0][k].is_floating_point())
    assert same and differ


def test_max_grad_norm_bounds_a_step_and_is_the_plain_step_below_its_norm(setup, tmp_path):
    init, shards = setup
    before = dict(load_checkpoint(init)[0].named_parameters())

    def one_step(name, **clip):
        seen = []
        train(tiny_params(steps=1, momentum=0.0, weight_decay=0.0, **clip), init, shards, tmp_path / name, seed=2,
              on_step=lambda step, m: seen.append(m))
        after = dict(load_checkpoint(tmp_path / name)[0].named_parameters())
        moved = torch.sqrt(sum(((after[k] - before[k]).double() ** 2).sum() for k in before))
        return float(moved.detach()), seen[0]["grad_norm"]

    plain, norm = one_step("plain.pt")
    assert plain == pytest.approx(0.05 * norm, rel=1e-4)  # one SGD step moves lr x the gradient's norm
    loose, loose_norm = one_step("loose.pt", max_grad_norm=10 * norm)
    assert (loose, loose_norm) == (plain, norm)
    a, b = (load_checkpoint(tmp_path / n)[0].state_dict() for n in ("plain.pt", "loose.pt"))
    assert all(torch.equal(a[k], b[k]) for k in a)  # a clip above the norm changes nothing
    clipped, clipped_norm = one_step("clipped.pt", max_grad_norm=norm / 4)
    assert clipped_norm == norm  # the metric is the norm before clipping
    assert clipped == pytest.approx(0.05 * norm / 4, rel=1e-4)


def test_on_step_gets_every_metric_each_step(setup, tmp_path):
    init, shards = setup
    seen = []
    train(tiny_params(steps=5, lr_milestones=[3], lr_gamma=0.1), init, shards, tmp_path / "o.pt", seed=0,
          on_step=lambda step, m: seen.append((step, dict(m))))
    assert [s for s, _ in seen] == list(range(5))
    for _, m in seen:
        assert set(m) == set(METRIC_KEYS)
        assert all(np.isfinite(v) for v in m.values())
        assert m["loss"] == pytest.approx(m["policy_loss"] + m["value_loss"] + m["l2"])
        assert 0 <= m["entropy"] <= np.log(A) + 1e-5
    assert [m["lr"] for _, m in seen] == pytest.approx([0.05, 0.05, 0.05, 0.005, 0.005])


class Stop(Exception):
    """A training killed after a given step."""


def stopped_at(step: int):
    def on_step(i, metrics):
        if i == step:
            raise Stop
    return on_step


RESUMED = dict(steps=40, lr_milestones=[20, 30], holdout_share=0.2, max_grad_norm=5.0)


def test_a_stopped_training_goes_on_to_the_same_bytes(setup, tmp_path):
    init, shards = setup
    whole = tmp_path / "whole.pt"
    seen_whole = []
    train(tiny_params(**RESUMED), init, shards, whole, seed=7, on_step=lambda i, m: seen_whole.append((i, m)))
    out = tmp_path / "out.pt"
    with pytest.raises(Stop):  # killed during step 25: the state after step 24 was kept
        train(tiny_params(**RESUMED), init, shards, out, seed=7, on_step=stopped_at(25), resume_every_s=0)
    state = tmp_path / ("out.pt" + RESUME_SUFFIX)
    assert state.is_file() and not out.exists()
    seen = []
    summary = train(tiny_params(**RESUMED), init, shards, out, seed=7, on_step=lambda i, m: seen.append((i, m)))
    assert summary["resumed_at_step"] == 25
    assert [i for i, _ in seen] == list(range(25, 40))  # past both learning-rate milestones' first
    assert [m["lr"] for _, m in seen] == [m["lr"] for i, m in seen_whole[25:]]
    assert out.read_bytes() == whole.read_bytes()  # weights, and the meta's final (and held-out) losses
    assert not state.exists()

    # a caller that keeps its own record of every step gets the kept ones first
    with pytest.raises(Stop):
        train(tiny_params(**RESUMED), init, shards, out, seed=7, on_step=stopped_at(25), resume_every_s=0)
    replayed = []
    train(tiny_params(**RESUMED), init, shards, out, seed=7, on_step=lambda i, m: replayed.append((i, m)),
          replay_kept=True)
    assert [i for i, _ in replayed] == list(range(40))
    untimed = [(i, {k: v for k, v in m.items() if k != "positions_per_s"}) for i, m in replayed]
    assert untimed == [(i, {k: v for k, v in m.items() if k != "positions_per_s"}) for i, m in seen_whole]


KILLED_RUN = """
import sys, time
import torch
from zero.config import params_from_dict
from zero.train import train
torch.set_num_threads(1)
params = params_from_dict({"network": {"size": "b1c8", "value_hidden": 16}, "train": {
    "batch_size": 32, "steps": 200, "learning_rate": 0.05, "lr_milestones": [100], "device": "cpu"}})
train(params, sys.argv[1], sys.argv[2:4], sys.argv[4], seed=3, on_step=lambda i, m: time.sleep(0.02),
      resume_every_s=0)
"""


def test_a_training_killed_by_sigkill_goes_on_to_the_same_bytes(setup, tmp_path):
    init, shards = setup
    params = tiny_params(steps=200, lr_milestones=[100])
    whole = tmp_path / "whole.pt"
    train(params, init, shards, whole, seed=3)
    out = tmp_path / "out.pt"
    state = tmp_path / ("out.pt" + RESUME_SUFFIX)
    proc = subprocess.Popen([sys.executable, "-c", KILLED_RUN, str(init), *map(str, shards), str(out)])
    deadline = time.monotonic() + 120
    while not state.is_file() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # mid-way through later saves
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL and not out.exists()
    summary = train(params, init, shards, out, seed=3)
    assert 0 < summary["resumed_at_step"] < 200
    assert out.read_bytes() == whole.read_bytes() and not state.exists()


def test_a_kept_state_of_other_inputs_or_torn_is_not_used(setup, tmp_path, caplog):
    init, shards = setup
    whole = tmp_path / "whole.pt"
    train(tiny_params(steps=12), init, shards, whole, seed=8)
    out = tmp_path / "out.pt"
    state = tmp_path / ("out.pt" + RESUME_SUFFIX)
    with pytest.raises(Stop):  # a state kept by a training of another seed
        train(tiny_params(steps=12), init, shards, out, seed=9, on_step=stopped_at(6), resume_every_s=0)
    assert state.is_file()
    with caplog.at_level("WARNING", logger="zero.train"):
        summary = train(tiny_params(steps=12), init, shards, out, seed=8)
    assert "resumed_at_step" not in summary and "other inputs" in caplog.text and str(state) in caplog.text
    assert out.read_bytes() == whole.read_bytes()

    out.unlink()
    with pytest.raises(Stop):
        train(tiny_params(steps=12), init, shards, out, seed=8, on_step=stopped_at(6), resume_every_s=0)
    state.write_bytes(state.read_bytes()[:300])  # torn
    caplog.clear()
    with caplog.at_level("WARNING", logger="zero.train"):
        summary = train(tiny_params(steps=12), init, shards, out, seed=8)
    assert "resumed_at_step" not in summary and "unreadable" in caplog.text and str(state) in caplog.text
    assert out.read_bytes() == whole.read_bytes() and not state.exists()


def test_wrong_shape_shard_is_named(setup, tmp_path):
    init, shards = setup
    bad, _ = synthetic_shard(10, seed=7, plane_shape=(C, 5, 5), num_actions=25)
    bad_path = tmp_path / "bad.npz"
    write_shard(bad_path, bad)
    with pytest.raises(WindowError, match="bad.npz"):
        train(tiny_params(steps=1), init, [shards[0], bad_path], tmp_path / "o.pt", seed=0)
    assert not (tmp_path / "o.pt").exists()


def test_window_keeps_the_most_recent_positions(setup):
    _, shards = setup
    w = load_window(shards, 450)
    assert len(w) == 450
    assert [s["positions"] for s in w.shards] == [150, 300]
    newest, _ = synthetic_shard(300, seed=1)
    np.testing.assert_array_equal(w.planes[-300:], newest.planes)
    oldest, _ = synthetic_shard(300, seed=0)
    np.testing.assert_array_equal(w.planes[:150], oldest.planes[150:])
    # once full, older shards are not read at all (a missing one would otherwise fail)
    assert len(load_window(["/nonexistent.npz", shards[1]], 300)) == 300
    with pytest.raises(WindowError):
        load_window([], 10)


@pytest.mark.parametrize("h,w,extra", [(6, 6, 0), (5, 5, 1), (4, 6, 0)])
def test_symmetry_moves_planes_and_policy_together(h, w, extra):
    a = h * w + extra
    shard, point = synthetic_shard(20, seed=3, plane_shape=(C, h, w), num_actions=a)
    perms = square_symmetries(h, w, extra_actions=extra)
    inverses = np.argsort(perms, axis=1)
    planes = shard.unpacked_planes().reshape(20, C, h * w)
    policy = shard.policy.astype(np.float32)
    if extra:
        policy[:5] = 0
        policy[:5, -1] = 1  # a pass target stays a pass
    for s in range(len(perms)):
        inv = np.repeat(inverses[s][None], 20, axis=0)
        moved_planes, moved_policy = apply_symmetry(planes, policy, inv)
        stone = moved_planes[:, :2].sum(axis=1).argmax(axis=1)
        target = moved_policy.argmax(axis=1)
        np.testing.assert_array_equal(stone, perms[s][point])
        np.testing.assert_array_equal(target[5 if extra else 0 :], stone[5 if extra else 0 :])
        if extra:
            assert (target[:5] == a - 1).all()
        assert (moved_planes[:, -1] == 1).all()
    # the transformed boards are exactly the rotations/reflections of the original
    board = planes[0, :2].sum(axis=0).reshape(h, w)
    images = {apply_symmetry(planes[:1], policy[:1], inverses[s][None])[0][0, :2].sum(0).reshape(h, w).tobytes()
              for s in range(len(perms))}
    expected = {np.ascontiguousarray(m).tobytes() for m in
                ([np.rot90(board, k) for k in range(4)] + [np.rot90(board.T, k) for k in range(4)] if h == w
                 else [board, board[::-1], board[:, ::-1], board[::-1, ::-1]])}
    assert images == expected


def test_symmetry_of_one_position_under_a_read_only_broadcast_inverse_warns_of_nothing():
    """An evaluation's last batch may hold one position, its identity inverse a read-only broadcast."""
    planes = np.arange(2 * 3 * 4, dtype=np.float32).reshape(1, 2, 12) % 5
    policy = np.linspace(0, 1, 13, dtype=np.float32)[None]
    inverse = np.broadcast_to(np.append(np.roll(np.arange(12), 1), 12), (1, 13))  # the pass stays the pass
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        moved_planes, moved_policy = apply_symmetry(planes, policy, inverse)
    np.testing.assert_array_equal(moved_planes, np.take_along_axis(planes, inverse[:, None, :12].repeat(2, 1), 2))
    np.testing.assert_array_equal(moved_policy, np.take_along_axis(policy, inverse, 1))
