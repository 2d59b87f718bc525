"""Training: fit the network to a window of recent self-play positions.

Each step draws a minibatch uniformly from the window, maps every position
through a random one of the board's symmetries (planes and policy target
together) and takes one SGD step on AlphaGo Zero's loss

    l = (z - v)^2 - pi^T log p + c ||theta||^2

with momentum and a step-wise learning-rate schedule. The c ||theta||^2 term
is the optimizer's weight decay: `params.train.weight_decay` is the paper's c,
and since d/dtheta c||theta||^2 = 2 c theta, SGD gets `weight_decay = 2c`. It
applies to every parameter (batch-norm scales and biases too), as in the paper.

The window is kept bit-packed and unpacked one minibatch at a time
(zero.train_data). The same seed and inputs give the same weights on the same
machine.

`train` runs in four steps: the model (`_model`: the network, its device and
arithmetic), the data (`training_data`: the window, the held-out games, the
steps), the loop (`_run_steps`: each `_step`, the held-out losses, the kept
state) and the checkpoint (`_final_metrics`, `_write_checkpoint`).

Switches of a faster recipe, all off by default (params.train):

- auxiliary targets (with network.aux_heads): KataGo's ownership and score
  losses (Wu 2019, "Accelerating Self-Play Learning in Go"), on the positions
  whose shard carries them (`zero.losses.aux_losses`);
- `max_samples_per_position`: fewer steps when a position would be drawn more
  often than that over its life in the window (`reuse`);
- `holdout_share`: a share of the newest generation's games, chosen by game,
  kept out of training and scored at intervals (`holdout_positions`);
- `mixed_precision`: bf16 autocast on CUDA (no effect on the CPU);
- `cpu_bf16`: bf16 autocast on the CPU (no effect on CUDA): about 1.7 times the positions a second on a
  CPU with bfloat16 instructions; the weights, their updates and the losses stay float32;
- `cuda_graph`: on CUDA, each step replayed from a CUDA graph (`_GraphedUpdate`; no effect on the CPU).

Every run reports how often positions are reused (`summary["reuse"]`).

A training that stops (a killed worker, a lost machine) goes on where it was: about once a minute it
keeps its state (weights, momentum, the sampler's and torch's random state, the metrics so far) in
`<out>.resume` beside the checkpoint it will write, and a training of the same inputs started again
continues from there to the same weights, byte for byte, as one that never stopped (`TrainState`).
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from zero.fileio import atomic_write
from zero.losses import AUX_METRIC_KEYS, evaluate, step_losses, surprise, surprise_weights, to_tensors
from zero.network import grow_network, load_checkpoint, pick_device, save_checkpoint, set_threads
from zero.shards import file_sha256
from zero.train_data import (  # noqa: F401 (zero.train's API)
    TrainData, Window, WindowError, apply_symmetry, holdout_positions, load_window, reuse, symmetry_inverses,
    training_data,
)

METRIC_KEYS = ("loss", "policy_loss", "value_loss", "l2", "entropy", "grad_norm", "lr", "positions_per_s")
HOLDOUT_PREFIX = "holdout_"  # holdout_policy_loss, holdout_value_loss, ...: with train.holdout_share
VALUE_STD_POSITIONS = 2048  # positions the value head's final spread is measured on without held-out games
TIMING_KEYS = ("positions_per_s",)  # metrics that measure the machine, not the network
HOLDOUT_EVALS = 10  # times the held-out loss is measured over a training (the last step always)
RESUME_SUFFIX = ".resume"  # beside the checkpoint a training writes: its state while it runs
RESUME_EVERY_S = 60.0  # seconds of training between two saves of that state
RESUME_FORMAT = "zero-train-resume-1"
READ_EVERY = 20  # steps whose metrics are read from the device at once (one wait for the device, not one a step)

log = logging.getLogger(__name__)


@contextlib.contextmanager
def _deterministic(device: torch.device, seed: int):
    """Seed torch and pin cuDNN to deterministic kernels, restoring global state afterwards.

    (On a GPU, bitwise repeatability across processes may also need
    CUBLAS_WORKSPACE_CONFIG=:4096:8 set before CUDA starts.)
    """
    cudnn = torch.backends.cudnn
    saved = (cudnn.deterministic, cudnn.benchmark)
    devices = [device.index or 0] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        cudnn.deterministic, cudnn.benchmark = True, False
        try:
            yield
        finally:
            cudnn.deterministic, cudnn.benchmark = saved


def _bf16(cfg, device: torch.device) -> bool:
    """Whether training runs under bf16 autocast: mixed_precision on CUDA, cpu_bf16 on the CPU."""
    return cfg.mixed_precision if device.type == "cuda" else cfg.cpu_bf16


def _layout(cfg) -> torch.memory_format:
    """The memory layout of the network and its batches: channels-last under `channels_last`."""
    return torch.channels_last if cfg.channels_last else torch.contiguous_format


def _optimizer(net, cfg) -> torch.optim.SGD:
    """SGD with momentum; the L2 term c||theta||^2 as weight_decay = 2c (see the module's docstring)."""
    return torch.optim.SGD(net.parameters(), lr=cfg.learning_rate, momentum=cfg.momentum,
                           weight_decay=2 * cfg.weight_decay)


def _objective(losses: dict, cfg) -> torch.Tensor:
    """What a step minimises (the L2 term aside): policy and value losses, plus the weighted auxiliary
    losses when the batch had their targets."""
    objective = losses["policy_loss"] + losses["value_loss"]
    if "ownership_loss" in losses:
        objective = (objective + cfg.ownership_weight * losses["ownership_loss"]
                     + cfg.score_weight * losses["score_loss"])
    return objective


def measure_training(net, cfg, seconds: float, seed: int = 0) -> dict:
    """Training positions a second of `net` under the train section `cfg` (its batch size, arithmetic,
    channels_last, gradient clip, device; torch threads as set by the caller), in whole steps as `train` takes
    them (`_step`, read every READ_EVERY steps) on a window of random positions and targets, the auxiliary
    ones too when the network has their heads. The network is trained in place (pass a copy). A warm-up step
    (with train.cuda_graph on CUDA, the graph's warm-up and capture) is not timed; `minibatch_ms` is the part of a
    step spent drawing its minibatch (`_minibatch`)."""
    device = pick_device(cfg.device)
    layout = _layout(cfg)
    model = _Model(net=net.to(device).to(memory_format=layout).train(), device=device, amp=_bf16(cfg, device),
                   layout=layout, init_meta={}, grown_from=None)
    rng = np.random.default_rng(seed)
    b = cfg.batch_size
    data = _random_data(net.config, 4 * b, rng)
    optimizer = _optimizer(model.net, cfg)
    schedule = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[])
    update = _updater(model, cfg, optimizer)
    warm_up = _GraphedUpdate.WARMUP + 1 if isinstance(update, _GraphedUpdate) else 1
    _read([_step(model, data, cfg, optimizer, schedule, rng, update) for _ in range(warm_up)], cfg, 1.0)
    steps, started = 0, time.perf_counter()
    while steps == 0 or time.perf_counter() - started < seconds:
        _read([_step(model, data, cfg, optimizer, schedule, rng, update) for _ in range(READ_EVERY)], cfg, 1.0)
        steps += READ_EVERY
    elapsed = time.perf_counter() - started
    return {"positions_per_s": round(steps * b / elapsed, 1), "steps": steps, "seconds": round(elapsed, 2),
            "minibatch_ms": round(_minibatch_ms(data, b, device, layout, rng), 2),
            "batch_size": b, "channels_last": layout is torch.channels_last,
            "mixed_precision": model.amp and device.type == "cuda",
            "cpu_bf16": model.amp and device.type == "cpu", "cuda_graph": model.cuda_graph,
            "device": str(device)}


def _random_data(nc, n: int, rng: np.random.Generator) -> TrainData:
    """A window of `n` random positions and targets shaped for the network config `nc`, all of it trained on."""
    c, h, w = nc.in_planes, nc.height, nc.width
    hw = h * w
    window = Window(planes=rng.integers(0, 256, (n, -(-c * hw // 8)), dtype=np.uint8),
                    policy=rng.dirichlet(np.ones(nc.num_actions), size=n).astype(np.float16),
                    value=rng.choice([-1, 1], size=n).astype(np.int8), plane_shape=(c, h, w),
                    num_actions=nc.num_actions, ownership=rng.integers(-1, 2, (n, hw), dtype=np.int8),
                    score=rng.normal(0, 10, n).astype(np.float32), aux_mask=np.ones(n, np.bool_))
    return TrainData(window=window, use_aux=nc.aux_heads, inverses=symmetry_inverses(nc),
                     held=np.zeros(n, np.bool_), held_index=np.zeros(0, np.int64), pool=None, newest_shards=1,
                     figures={})


def _minibatch_ms(data: TrainData, batch_size: int, device: torch.device, layout, rng: np.random.Generator,
                  batches: int = 20) -> float:
    """Milliseconds a training step spends drawing its minibatch from `data` (`_minibatch`: unpacking,
    symmetries, the copy to `device`)."""
    _minibatch(data, rng, batch_size, device, layout)  # warm-up
    started = time.perf_counter()
    for _ in range(batches):
        x = _minibatch(data, rng, batch_size, device, layout)[0]
    float(x[0, 0, 0, 0])  # waits for the device
    return (time.perf_counter() - started) / batches * 1000


def _weigh_by_surprise(model: "_Model", data: TrainData, cfg) -> dict | None:
    """With train.policy_surprise_weight or value_surprise_weight: the starting network's surprise at each
    training position, the draws weighted by it (TrainData.weigh); the figures for the summary."""
    a, b = cfg.policy_surprise_weight, cfg.value_surprise_weight
    if not a and not b:
        return None
    started = time.perf_counter()
    positions = data.training_positions()
    policy, value = surprise(model.net, data.window, positions, max(cfg.batch_size, 1024), model.device,
                             model.amp, model.layout)
    weights = surprise_weights(policy, value, a, b)
    data.weigh(weights)
    return {"policy_weight": a, "value_weight": b, "positions": len(positions),
            "policy_kl_mean": float(policy.mean()), "value_kl_mean": float(value.mean()),
            # (sum w)^2 / (n sum w^2): the share of the positions the weighted draws are worth, uniform = 1
            "effective_share": float(weights.sum() ** 2 / (len(weights) * (weights ** 2).sum())),
            "seconds": time.perf_counter() - started}


def _trunk(config) -> tuple[int, int, int]:
    """A NetConfig's trunk: blocks, filters, pooled channels."""
    return config.blocks, config.filters, config.pooling_channels


def _trunk_of(network) -> tuple[int, int, int]:
    """The trunk a params network section asks for, as `_trunk` reads a NetConfig."""
    return network.blocks, network.filters, network.pooling_channels if network.global_pooling else 0


class TrainState:
    """A training's state between two steps, kept in `<out>.resume` so that a training stopped on the way
    goes on from its last save (every `every_s` seconds) to the weights it would have reached.

    `key` names what the training depends on (the starting checkpoint, the shards, the seed, the
    settings, the network, the device); a state kept for anything else, or a file that does not read
    (torn, or not a zero training state), is logged and the training starts over. Written atomically,
    read with weights_only.
    """

    def __init__(self, out_checkpoint: str | Path, key: dict, every_s: float = RESUME_EVERY_S):
        self.path = Path(str(out_checkpoint) + RESUME_SUFFIX)
        self.key = json.dumps(key, sort_keys=True)
        self.every_s = every_s
        self.saved_at = time.monotonic()

    def load(self) -> dict | None:
        """{step, net, optimizer, rng, torch_rng, cuda_rng, history, holdout} kept for this key, or None."""
        if not self.path.is_file():
            return None
        try:
            blob = torch.load(self.path, map_location="cpu", weights_only=True)
            if not isinstance(blob, dict) or blob.get("format") != RESUME_FORMAT:
                raise ValueError(f"no {RESUME_FORMAT!r} format tag")
            if blob["key"] != self.key:
                log.warning("%s: kept by a training of other inputs; this one starts at step 0", self.path)
                return None
            metrics = json.loads(blob["metrics"])
            return {**blob, "rng": json.loads(blob["rng"]), "history": metrics["history"],
                    "holdout": metrics["holdout"]}
        except Exception as e:  # a torn file or not ours: it only saves time, so start over
            log.warning("%s: unreadable (%s: %s); training starts at step 0", self.path, type(e).__name__,
                        str(e)[:200])
            return None

    def due(self) -> bool:
        return time.monotonic() - self.saved_at >= self.every_s

    def save(self, step: int, net, optimizer, rng: np.random.Generator, history: list, holdout: dict,
             device: torch.device) -> None:
        """Keep the state before step `step` (the steps before it done)."""
        blob = {
            "format": RESUME_FORMAT, "key": self.key, "step": step,
            "net": {k: v.detach().cpu().clone() for k, v in net.state_dict().items()},
            "optimizer": optimizer.state_dict(),
            "rng": json.dumps(rng.bit_generator.state),
            "torch_rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state(device) if device.type == "cuda" else None,
            "metrics": json.dumps({"history": history, "holdout": holdout}),
        }
        with atomic_write(self.path) as f:
            torch.save(blob, f)
        self.saved_at = time.monotonic()

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)


def train(
    params,
    init_checkpoint: str | Path,
    shard_paths: list[str | Path],
    out_checkpoint: str | Path,
    seed: int,
    on_step: Callable[[int, dict], None] | None = None,
    meta: dict | None = None,
    newest_shards: int | None = None,
    network=None,
    resume_every_s: float = RESUME_EVERY_S,
    replay_kept: bool = False,
) -> dict:
    """Train the network of `init_checkpoint` on the shards' window and write `out_checkpoint`.

    Args:
        params: the run's Params; reads `params.train` (and `pipeline.selfplay_shards`
            when `newest_shards` is not given).
        shard_paths: self-play shards, oldest first.
        seed: drives minibatch sampling and symmetries (numpy) and torch.
        on_step: called after every step as on_step(step, metrics), step from 0,
            metrics with the keys of METRIC_KEYS (`loss` is the whole objective,
            `l2` its c||theta||^2 part, `entropy` the mean entropy of the
            network's policy on the batch, in nats, `grad_norm` the norm of the
            loss's gradient before train.max_grad_norm clips it); with network.aux_heads also
            AUX_METRIC_KEYS (their weighted sum is part of `loss`); with
            train.holdout_share, at HOLDOUT_EVALS evenly spaced steps (the last
            included), the held-out losses as holdout_<name>.
        meta: extra entries for the checkpoint's meta (e.g. the generation).
        newest_shards: how many of the last shards are the newest generation
            (for the held-out games and the lifetime reuse figure); default
            `params.pipeline.selfplay_shards`, at most all of them.
        network: a NetworkConfig section whose trunk is larger than the checkpoint's: the network is
            grown into it first (zero.network.grow_network, seeded by `seed`); None or the same trunk
            trains the checkpoint's network as it is.
        resume_every_s: seconds between two saves of the training's state in `<out_checkpoint>.resume`
            (TrainState), from which a training of the same inputs started again goes on; the file is
            removed once the checkpoint is written.
        replay_kept: a training that resumes first passes the kept steps' metrics to on_step (for a caller
            that keeps its own record of every step; not for one whose record has them from the first run).
    Returns:
        {steps, positions, shards, seconds, final, reuse} and, with
        train.holdout_share, holdout: `final` holds each metric averaged over
        the last ~10% of steps (and the last held-out losses) and `value_std`, the
        spread of the value head's outputs at the end (see `evaluate`); `reuse` is
        `reuse(...)`'s figures; `holdout` has the held-out games, positions
        and losses at the end; `grown_from`, the size the network was grown
        from, when it was; `resumed_at_step`, the step a kept state let it start at, when one did;
        `surprise`, with train.policy_surprise_weight or value_surprise_weight: the weights, the mean
        surprises, the share of the positions the weighted draws are worth and the seconds the reading took.
    """
    cfg = params.train
    started = time.perf_counter()
    model = _model(cfg, init_checkpoint, network, seed)
    if newest_shards is None:
        newest_shards = params.pipeline.selfplay_shards
    data = training_data(shard_paths, cfg, model.net.config, newest_shards)
    weighed = _weigh_by_surprise(model, data, cfg)
    init_sha256 = file_sha256(init_checkpoint)
    state = TrainState(out_checkpoint, _resume_key(init_sha256, data, seed, cfg, model), resume_every_s)
    first, history, holdout = _run_steps(model, data, cfg, seed, state, on_step, replay_kept)
    final = _final_metrics(model, data, cfg, seed, history, holdout)
    _write_checkpoint(model, data, out_checkpoint, final, seed, init_sha256, meta)
    state.clear()
    summary = _summary(model, data, final, holdout, first, time.perf_counter() - started)
    if weighed:
        summary["surprise"] = weighed
    return summary


@dataclass
class _Model:
    """The network a training fits, where and in which arithmetic."""

    net: torch.nn.Module  # in training layout on `device`
    device: torch.device
    amp: bool  # bf16 autocast (`_bf16`)
    layout: torch.memory_format  # of the network and its batches (`_layout`)
    init_meta: dict  # the starting checkpoint's meta
    grown_from: str | None  # "b<blocks>c<filters>" of the checkpoint when its network was grown
    cuda_graph: bool = False  # its steps were replayed from a CUDA graph (train.cuda_graph, `_GraphedUpdate`)


def _model(cfg, init_checkpoint: str | Path, network, seed: int) -> _Model:
    """The starting checkpoint's network on the train section's device (torch on its threads), grown into
    `network`'s trunk when that is larger (seeded by `seed`)."""
    set_threads(cfg.threads)
    device = pick_device(cfg.device)
    net, init_meta = load_checkpoint(init_checkpoint, device)
    grown_from = None
    if network is not None and _trunk(net.config) != _trunk_of(network):
        grown_from = f"b{net.config.blocks}c{net.config.filters}"
        net = grow_network(net.cpu(), network.blocks, network.filters, network.pooling_channels, seed).to(device)
    layout = _layout(cfg)
    return _Model(net=net.to(memory_format=layout), device=device, amp=_bf16(cfg, device), layout=layout,
                  init_meta=init_meta, grown_from=grown_from)


def _resume_key(init_sha256: str, data: TrainData, seed: int, cfg, model: _Model) -> dict:
    """What a kept state must have been kept for to be resumed from (TrainState)."""
    return {
        "init_checkpoint": init_sha256, "shards": [s["sha256"] for s in data.window.shards],
        "seed": seed, "steps": data.steps, "newest_shards": data.newest_shards, "train": cfg.model_dump(mode="json"),
        "network": list(_trunk(model.net.config)), "device": model.device.type, "bf16": model.amp,
    }


def _run_steps(model: _Model, data: TrainData, cfg, seed: int, state: TrainState, on_step, replay_kept: bool,
               ) -> tuple[int, list[dict], dict]:
    """The SGD steps, from the step of a kept state when there is one, keeping the state as they go.

    Returns (the step it started at, every step's metrics, the last held-out losses or {}).
    """
    steps = data.steps
    milestones = [round(m * steps / cfg.steps) for m in cfg.lr_milestones]  # unchanged unless the cap cut steps
    eval_every = max(1, steps // HOLDOUT_EVALS)
    rng = np.random.default_rng(seed)
    first, history, holdout = 0, [], {}
    with _deterministic(model.device, seed):
        optimizer = _optimizer(model.net, cfg)
        schedule = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=milestones, gamma=cfg.lr_gamma)
        kept = state.load()
        if kept:
            first, history, holdout = _resume(kept, model, optimizer, schedule, rng)
            log.info("%s: training resumes at step %d of %d", state.path, first, steps)
            for i, metrics in enumerate(history if replay_kept and on_step is not None else ()):
                on_step(i, dict(metrics))
        model.net.train()
        update = _updater(model, cfg, optimizer)
        pending, since = [], time.perf_counter()
        for step in range(first, steps):
            pending.append(_step(model, data, cfg, optimizer, schedule, rng, update))
            evaluates = len(data.held_index) and ((step + 1) % eval_every == 0 or step == steps - 1)
            saves = step + 1 < steps and state.due()
            if not (evaluates or saves or len(pending) == READ_EVERY or step == steps - 1):
                continue
            read = _read(pending, cfg, time.perf_counter() - since)
            if evaluates:
                holdout = evaluate(model.net, data.window, data.held_index, cfg.batch_size, model.device,
                                   data.use_aux, model.amp, model.layout)
                read[-1].update({HOLDOUT_PREFIX + k: v for k, v in holdout.items()})
            for i, metrics in enumerate(read, start=step + 1 - len(read)):
                history.append(metrics)
                if on_step is not None:
                    on_step(i, dict(metrics))  # a copy: history keeps its own
            if saves:
                state.save(step + 1, model.net, optimizer, rng, history, holdout, model.device)
            pending, since = [], time.perf_counter()
    return first, history, holdout


def _resume(kept: dict, model: _Model, optimizer, schedule, rng: np.random.Generator) -> tuple[int, list, dict]:
    """Put the weights, momentum, schedule and random states back as `kept` (TrainState.load) has them;
    returns its (step, history, holdout)."""
    model.net.load_state_dict(kept["net"])
    optimizer.load_state_dict(kept["optimizer"])  # with the learning rate the schedule had reached
    schedule.last_epoch = kept["step"]
    rng.bit_generator.state = kept["rng"]
    torch.set_rng_state(kept["torch_rng"])
    if kept["cuda_rng"] is not None:
        torch.cuda.set_rng_state(kept["cuda_rng"], model.device)
    return kept["step"], kept["history"], kept["holdout"]


def _minibatch(data: TrainData, rng: np.random.Generator, batch_size: int, device: torch.device,
               layout: torch.memory_format) -> tuple:
    """A minibatch drawn with `rng` as tensors on `device`: planes (in `layout`), policy and value targets,
    and (ownership, score, mask) or None without auxiliary targets."""
    index, inverse = data.draw(rng, batch_size)
    planes, pi, z = data.window.batch(index, inverse, data.q_weight)
    aux = to_tensors(device, *data.window.aux_batch(index, inverse)) if data.use_aux else None
    x, pi_t, z_t = to_tensors(device, planes, pi, z)
    return x.contiguous(memory_format=layout), pi_t, z_t, aux


@dataclass
class _Pending:
    """One step's metrics still on the device: reading them waits for the device, so steps are read in
    groups (`_read`) and the CPU draws the next minibatches while the device runs the last ones."""

    names: list[str]  # the losses in `values`, then l2, entropy and grad_norm
    values: torch.Tensor
    lr: float


def _step(model: _Model, data: TrainData, cfg, optimizer, schedule, rng: np.random.Generator,
          update: Callable) -> _Pending:
    """One SGD step on a minibatch drawn with `rng`, its device work done by `update` (`_updater`); its
    metrics, not yet read (`_read`)."""
    batch = _minibatch(data, rng, cfg.batch_size, model.device, model.layout)
    lr = optimizer.param_groups[0]["lr"]
    values = update(*batch)
    schedule.step()
    return _Pending(_metric_names(data.use_aux), values, lr)


def _metric_names(use_aux: bool) -> list[str]:
    """The losses a step's metrics tensor holds first (`_update`), before l2, entropy and grad_norm."""
    return ["policy_loss", "value_loss", *(AUX_METRIC_KEYS if use_aux else ())]


def _update(model: _Model, cfg, optimizer, x, pi_t, z_t, aux) -> torch.Tensor:
    """A step's device work on one minibatch: the losses, their gradient (clipped to train.max_grad_norm),
    the SGD update; returns the metrics (`_metric_names`, then l2, entropy and grad_norm) stacked on the
    device. Nothing here reads the device, so a CUDA graph can hold all of it (`_GraphedUpdate`)."""
    net = model.net
    losses = step_losses(net, x, pi_t, z_t, aux, model.device, model.amp)
    objective = _objective(losses, cfg)
    optimizer.zero_grad(set_to_none=True)
    objective.backward()  # the L2 term's gradient comes from weight_decay
    grad_norm = torch.nn.utils.get_total_norm([p.grad for p in net.parameters() if p.grad is not None])
    if cfg.max_grad_norm:
        torch.nn.utils.clip_grads_with_norm_(net.parameters(), cfg.max_grad_norm, grad_norm)
    optimizer.step()
    with torch.no_grad():
        log_p = losses["log_p"]
        weights = [p.detach() for p in net.parameters()]
        l2 = cfg.weight_decay * torch.nn.utils.get_total_norm(weights, foreach=True) ** 2  # a few launches
        entropy = -(log_p.exp() * log_p).sum(dim=1).mean()
        names = _metric_names(aux is not None)
        return torch.stack([losses[k].detach() for k in names] + [l2, entropy, grad_norm])


def _updater(model: _Model, cfg, optimizer, capture: bool | None = None) -> Callable:
    """What does a step's device work (called with a minibatch, returns its metrics): `_update` itself, or
    with train.cuda_graph on CUDA the same work replayed from a CUDA graph (`_GraphedUpdate`). `capture`
    True or False asks for a `_GraphedUpdate` whatever the config, with or without its graph (False: its
    buffers alone, which the CPU can run)."""
    if capture is None:
        if not (cfg.cuda_graph and model.device.type == "cuda"):
            return functools.partial(_update, model, cfg, optimizer)
        capture = True
    return _GraphedUpdate(model, cfg, optimizer, capture)


class _GraphedUpdate:
    """train.cuda_graph: a step's device work (`_update`) captured once as a CUDA graph, then replayed: one
    launch a step instead of the few thousand kernels Python launches one by one (training a small network
    on a GPU waits on those launches, not on the card).

    Each step copies its minibatch into the buffers the graph reads. The first WARMUP steps run eagerly on a
    side stream (the momentum buffers and the libraries' workspaces come into being there, as capture needs);
    the graph holds the learning rate, so a milestone of the schedule captures it again. Where capture
    fails, the training logs why and goes on eagerly. The same steps as `_update`'s, up to the kernels the
    libraries choose; `model.cuda_graph` says whether a step was replayed.
    """

    WARMUP = 3

    def __init__(self, model: _Model, cfg, optimizer, capture: bool):
        self.model, self.cfg, self.optimizer, self.capture = model, cfg, optimizer, capture
        self.steps = 0
        self.inputs: list[torch.Tensor] | None = None  # the minibatch's tensors the graph reads
        self.values: torch.Tensor | None = None  # the metrics the graph writes
        self.graph = None
        self.lr: float | None = None  # the learning rate the graph holds
        self.failed = False

    def __call__(self, x, pi_t, z_t, aux) -> torch.Tensor:
        if self.failed:
            return _update(self.model, self.cfg, self.optimizer, x, pi_t, z_t, aux)
        self._load([x, pi_t, z_t, *(aux or ())])
        self.steps += 1
        if not self.capture:
            return self._update()
        if self.steps <= self.WARMUP:
            return self._on_side_stream()
        lr = self.optimizer.param_groups[0]["lr"]
        if (self.graph is None or lr != self.lr) and not self._capture(lr):
            return self._update()
        self.graph.replay()
        self.model.cuda_graph = True
        return self.values.clone()

    def _load(self, batch: list[torch.Tensor]) -> None:
        if self.inputs is None:
            self.inputs = [t.clone() for t in batch]  # clone keeps the channels-last layout
        else:
            for kept, t in zip(self.inputs, batch, strict=True):
                kept.copy_(t, non_blocking=True)

    def _update(self) -> torch.Tensor:
        x, pi_t, z_t, *aux = self.inputs
        return _update(self.model, self.cfg, self.optimizer, x, pi_t, z_t, tuple(aux) if aux else None)

    def _on_side_stream(self) -> torch.Tensor:
        device = self.model.device
        side = torch.cuda.Stream(device)
        side.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(side):
            values = self._update()
        torch.cuda.current_stream(device).wait_stream(side)
        return values

    def _capture(self, lr: float) -> bool:
        """The step captured with learning rate `lr`; False (and eager steps from here on) where it cannot be."""
        if self.graph is not None:
            self.graph.reset()
        self.graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(self.graph):
                self.values = self._update()
        except RuntimeError as e:
            log.warning("train.cuda_graph: a training step could not be captured as a CUDA graph (%s); the "
                        "training goes on without one", e)
            self.optimizer.zero_grad(set_to_none=True)
            self.graph, self.failed = None, True
            return False
        self.lr = lr
        return True


def _read(pending: list[_Pending], cfg, seconds: float) -> list[dict]:
    """The metrics of `pending` steps (METRIC_KEYS, and AUX_METRIC_KEYS with auxiliary targets), read from the
    device at once; each step's positions_per_s is the group's: its positions over the `seconds` it took."""
    rows = torch.stack([p.values for p in pending]).cpu().tolist()
    rate = len(pending) * cfg.batch_size / max(seconds, 1e-9)
    out = []
    for p, values in zip(pending, rows):
        found = dict(zip(p.names, values[:-3]))
        l2v, ent, gnorm = values[-3:]
        metrics = {
            "loss": found["policy_loss"] + found["value_loss"] + l2v,
            "policy_loss": found["policy_loss"],
            "value_loss": found["value_loss"],
            "l2": l2v,
            "entropy": ent,
            "grad_norm": gnorm,
            "lr": p.lr,
            "positions_per_s": rate,
        }
        if "ownership_loss" in found:
            metrics["loss"] += cfg.ownership_weight * found["ownership_loss"] + cfg.score_weight * found["score_loss"]
            metrics.update({k: found[k] for k in AUX_METRIC_KEYS})
        out.append(metrics)
    return out


def _final_metrics(model: _Model, data: TrainData, cfg, seed: int, history: list[dict], holdout: dict) -> dict:
    """Each metric averaged over the last ~10% of steps, the last held-out losses, and `value_std`: the
    value head's spread at the end, on the held-out positions or else on a sample of the window."""
    if holdout:
        spread = holdout["value_std"]
    else:
        sample = np.sort(np.random.default_rng(seed).permutation(len(data.window))[:VALUE_STD_POSITIONS])
        spread = evaluate(model.net, data.window, sample, cfg.batch_size, model.device, False, model.amp,
                          model.layout)["value_std"]
    tail = history[-max(1, len(history) // 10) :]
    keys = METRIC_KEYS + (AUX_METRIC_KEYS if data.use_aux else ())
    final = {k: float(np.mean([m[k] for m in tail])) for k in keys}
    final.update({HOLDOUT_PREFIX + k: v for k, v in holdout.items()})
    final["value_std"] = spread
    return final


def _write_checkpoint(model: _Model, data: TrainData, out_checkpoint: str | Path, final: dict, seed: int,
                      init_sha256: str, meta: dict | None) -> None:
    """The trained network in its plain layout, with what it was trained from (and `meta`), written atomically
    and checksummed: the same weights give the same bytes."""
    net = model.net.eval().to(memory_format=torch.contiguous_format)  # the checkpoint's bytes do not depend on it
    out_meta = {k: model.init_meta[k] for k in ("game",) if k in model.init_meta}
    out_meta.update(
        {
            "steps": data.steps,
            "seed": seed,
            "positions": len(data.window),
            "shards": [s["sha256"] for s in data.window.shards],
            "init_checkpoint_sha256": init_sha256,
            **({"grown_from": model.grown_from} if model.grown_from else {}),
            # no wall-clock figures: the same weights must give the same file bytes
            "final": {k: v for k, v in final.items() if k not in TIMING_KEYS},
        }
    )
    out_meta.update(meta or {})
    save_checkpoint(net, out_checkpoint, out_meta, checksum=True)


def _summary(model: _Model, data: TrainData, final: dict, holdout: dict, first: int, seconds: float) -> dict:
    """`train`'s returned figures (see its docstring)."""
    window = data.window
    summary = {
        "steps": data.steps,
        "positions": len(window),
        "shards": len(window.shards),
        "seconds": seconds,
        "final": final,
        "reuse": data.figures,
    }
    if len(data.held_index):
        held = data.held
        games = len({(int(k), int(g)) for k, g in zip(window.shard_number()[held], window.game_index[held])})
        summary["holdout"] = {"games": games, "positions": len(data.held_index), **holdout}
    if model.grown_from:
        summary["grown_from"] = model.grown_from
    if data.q_weight > 0:  # train.value_q_weight: how much of the window had a root value to mix in
        have = 0 if window.root_value is None else int((~np.isnan(window.root_value)).sum())
        summary["value_q"] = {"weight": data.q_weight, "positions_with_root_value": have}
    if first:
        summary["resumed_at_step"] = first
    if model.cuda_graph:
        summary["cuda_graph"] = True
    return summary
