"""The network's losses on positions: one training step's (AlphaGo Zero's policy and value losses, KataGo's
auxiliary ones), a window's mean losses in eval mode (the held-out games, the value head's spread), and how much
each position surprises the network (KataGo's surprise weighting of the training draws). zero.train takes its
steps with them.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np
import torch
import torch.nn.functional as F

from zero.games.go_kernels import HISTORY_PLANES
from zero.train_data import Window

AUX_METRIC_KEYS = ("ownership_loss", "score_loss")  # with network.aux_heads
SCORE_HUBER_DELTA = 12.0  # points: the score loss is quadratic within it, linear beyond (as KataGo's)


def aux_losses(ownership: torch.Tensor, score: torch.Tensor, own_target: torch.Tensor, score_target: torch.Tensor,
               mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """KataGo's auxiliary losses, averaged over the positions that carry targets (Wu 2019, section 3.4).

    Ownership: the cross-entropy between (1 + target) / 2 and (1 + ownership) / 2
    at each point, averaged over the points. Score: a Huber loss in points
    (quadratic within SCORE_HUBER_DELTA). Positions with mask False contribute
    nothing; with none in the batch both losses are 0.

    Args:
        ownership: [B, H*W] predicted, in (-1, 1); score: [B] predicted, in points.
        own_target: [B, H*W] in {-1, 0, 1}; score_target: [B]; mask: [B] bool.
    """
    m = mask.to(ownership.dtype)
    count = m.sum().clamp(min=1)
    own_ce, huber = aux_losses_each(ownership, score, own_target, score_target)
    return (own_ce * m).sum() / count, (huber * m).sum() / count


def aux_losses_each(ownership: torch.Tensor, score: torch.Tensor, own_target: torch.Tensor,
                    score_target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """`aux_losses` of each position: ([B] ownership cross-entropy averaged over the points, [B] score Huber loss)."""
    p = ((1 + ownership) / 2).clamp(1e-6, 1 - 1e-6)
    t = (1 + own_target) / 2
    own_ce = -(t * torch.log(p) + (1 - t) * torch.log1p(-p)).mean(dim=1)
    return own_ce, F.huber_loss(score, score_target, reduction="none", delta=SCORE_HUBER_DELTA)


def bf16_autocast(device: torch.device, on: bool):
    """bf16 autocast on the device when `on` (no loss scaling is needed for bf16); nothing otherwise. Without
    autocast's cache of cast weights, which a CUDA graph cannot hold (a step casts each weight once anyway)."""
    if on and device.type in ("cuda", "cpu"):
        return torch.autocast(device.type, dtype=torch.bfloat16, cache_enabled=False)
    return contextlib.nullcontext()


def step_losses(net, x, pi, z, aux, device, amp: bool) -> dict:
    """The losses of one batch: policy, value, and with `aux` = (ownership, score, mask) the auxiliary ones.

    The network runs under autocast when `amp`; the losses are taken in float32.
    """
    with bf16_autocast(device, amp):
        out = net.forward_aux(x) if aux is not None else net(x)
    v = out[1].float()
    policy_loss, value_loss, log_p = policy_value_losses_each(out[0].float(), v, pi, z)
    losses = {
        "policy_loss": policy_loss.mean(),
        "value_loss": value_loss.mean(),
        "log_p": log_p,
        "value": v.detach(),
    }
    if aux is not None:
        own_loss, score_loss = aux_losses(out[2].float(), out[3].float(), *aux)
        losses.update(ownership_loss=own_loss, score_loss=score_loss)
    return losses


def policy_value_losses_each(logits: torch.Tensor, v: torch.Tensor, pi: torch.Tensor, z: torch.Tensor
                             ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The paper's losses of each position: ([B] the cross-entropy of the search policy pi against the network's,
    [B] the squared error of the value v against the outcome z, [B, A] the network's log-policy)."""
    log_p = F.log_softmax(logits, dim=1)
    return -(pi * log_p).sum(dim=1), (z - v) ** 2, log_p


def to_tensors(device, *arrays) -> list[torch.Tensor]:
    return [torch.from_numpy(np.ascontiguousarray(a)).to(device) for a in arrays]


@contextlib.contextmanager
def _evaluating(net):
    """The network in eval mode without gradients, its training mode restored afterwards."""
    was_training = net.training
    net.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        net.train(was_training)


def _batches_in_order(window: Window, index: np.ndarray, batch_size: int):
    """The window's positions `index` in batches of `batch_size`, in order and under no symmetry: for each,
    (its first offset in `index`, its positions, their identity inverses, window.batch's planes, pi and z)."""
    identity = np.arange(window.num_actions)
    for start in range(0, len(index), batch_size):
        part = index[start : start + batch_size]
        inverse = np.broadcast_to(identity, (len(part), len(identity)))
        yield start, part, inverse, window.batch(part, inverse)


def evaluate(net, window: Window, index: np.ndarray, batch_size: int, device: torch.device,
             use_aux: bool, amp: bool = False,
             layout: torch.memory_format = torch.contiguous_format) -> dict:
    """Mean losses of the network (eval mode, no symmetry) on the window's positions `index`, its
    batches in the network's memory `layout`.

    Returns {policy_loss, value_loss, value_std} and, with `use_aux`, {ownership_loss, score_loss}
    averaged over the positions that carry targets (left out when none does: a held-out set of resigned
    games only). `value_std` is the standard deviation of the
    value head's outputs over the positions: 0 for a dead value head, which says the same of every
    position (its one-channel convolution's ReLU never firing).
    """
    totals: dict[str, float] = {}
    v_sum = v_sq = 0.0
    aux_count = 0
    with _evaluating(net):
        for _, part, inverse, (planes, pi, z) in _batches_in_order(window, index, batch_size):
            aux = to_tensors(device, *window.aux_batch(part, inverse)) if use_aux else None
            x, pi_t, z_t = to_tensors(device, planes, pi, z)
            losses = step_losses(net, x.contiguous(memory_format=layout), pi_t, z_t, aux, device, amp)
            v = losses["value"].double()
            v_sum, v_sq = v_sum + float(v.sum()), v_sq + float((v * v).sum())
            for k in ("policy_loss", "value_loss"):
                totals[k] = totals.get(k, 0.0) + float(losses[k]) * len(part)
            if use_aux:
                n = int(aux[2].sum())
                aux_count += n
                for k in AUX_METRIC_KEYS:
                    totals[k] = totals.get(k, 0.0) + float(losses[k]) * n
    n = max(len(index), 1)
    result = {k: totals[k] / n for k in ("policy_loss", "value_loss")}
    result["value_std"] = math.sqrt(max(v_sq / n - (v_sum / n) ** 2, 0.0))
    if use_aux and aux_count:
        result.update({k: totals[k] / aux_count for k in AUX_METRIC_KEYS})
    return result


def surprise(net, window: Window, index: np.ndarray, batch_size: int, device: torch.device, amp: bool = False,
             layout: torch.memory_format = torch.contiguous_format) -> tuple[np.ndarray, np.ndarray]:
    """How much each of the window's positions `index` surprises the network (eval mode, no symmetry).

    Returns (policy [N], value [N]) float64, in nats: the KL divergence of the position's search policy
    from the network's prior, and that of its game's outcome (z as a win probability (1 + z) / 2) from
    the value head's win probability (1 + v) / 2.
    """
    policy, value = np.empty(len(index)), np.empty(len(index))
    with _evaluating(net):
        for start, part, _, (planes, pi, z) in _batches_in_order(window, index, batch_size):
            x, pi_t, z_t = to_tensors(device, planes, pi, z)
            with bf16_autocast(device, amp):
                out = net(x.contiguous(memory_format=layout))
            log_p = F.log_softmax(out[0].float(), dim=1)
            kl = (torch.xlogy(pi_t, pi_t) - pi_t * log_p).sum(dim=1)
            won = ((1 + out[1].float()) / 2).clamp(1e-6, 1 - 1e-6)
            t = (1 + z_t) / 2
            bce = torch.xlogy(t, t) + torch.xlogy(1 - t, 1 - t) - t * torch.log(won) - (1 - t) * torch.log1p(-won)
            policy[start : start + len(part)] = kl.clamp(min=0).double().cpu().numpy()
            value[start : start + len(part)] = bce.clamp(min=0).double().cpu().numpy()
    return policy, value


def surprise_weights(policy: np.ndarray, value: np.ndarray, a: float, b: float) -> np.ndarray:
    """Each position's draw weight (train.policy_surprise_weight a, value_surprise_weight b):
    (1 - a - b) + a·policy/mean(policy) + b·value/mean(value); a share whose surprises are all 0 is spread
    evenly instead."""
    def normalised(x: np.ndarray) -> np.ndarray:
        mean = float(x.mean()) if len(x) else 0.0
        return x / mean if mean > 0 else np.ones_like(x)

    return (1.0 - a - b) + a * normalised(policy) + b * normalised(value)


def positions_read(net, window: Window, index: np.ndarray, batch_size: int, device: torch.device,
                   use_aux: bool = True, progress=None) -> dict:
    """What a Go network reads of each of the window's positions `index` (eval mode, float32, no symmetry), in one
    pass: [len(index)] arrays `value` (the value head's output), `stones` (stones on the board), the losses
    `policy_loss` and `value_loss` (as `evaluate` takes them) and, where the position carries ownership targets
    (`aux`; zeros elsewhere, and everywhere without `use_aux`, for a network without the ownership head),
    `ownership_loss`, `score_loss`, and the fate of its stones: `dead`, `dead_read`, `live`, `live_read`.

    Each stone on the board (planes 0 and HISTORY_PLANES: the side to move's stones and the opponent's, now) is
    alive when the game's final owner of its point is its own colour, else dead (the other colour's, or
    neither's); the head read a dead stone right when it did not give the point to the stone's colour, a live
    one when it did: a network that does not see a group die says it lives. `progress()` is called after each
    batch.
    """
    n = len(index)
    out = {"aux": np.zeros(n, np.bool_), "stones": np.zeros(n, np.int32),
           **{k: np.zeros(n, np.float32) for k in ("value", "policy_loss", "value_loss", *AUX_METRIC_KEYS)},
           **{k: np.zeros(n, np.int32) for k in ("dead", "dead_read", "live", "live_read")}}
    has_aux = use_aux and window.aux_mask is not None
    with _evaluating(net):
        for start, part, inverse, (planes, pi, z) in _batches_in_order(window, index, batch_size):
            at = slice(start, start + len(part))
            x, pi_t, z_t = to_tensors(device, planes, pi, z)
            heads = net.forward_aux(x) if has_aux else net(x)
            value = heads[1].float().reshape(-1)
            policy_loss, value_loss, _ = policy_value_losses_each(heads[0].float(), value, pi_t, z_t)
            out["value"][at] = value.cpu().numpy()
            out["value_loss"][at] = value_loss.cpu().numpy()
            out["policy_loss"][at] = policy_loss.cpu().numpy()
            mine = planes[:, 0].reshape(len(part), -1) > 0.5
            theirs = planes[:, _opponent_plane(planes.shape[1])].reshape(len(part), -1) > 0.5
            out["stones"][at] = (mine | theirs).sum(axis=1)
            if has_aux:
                _read_stones(out, at, window, part, inverse, heads, mine, theirs, device)
            if progress is not None:
                progress()
    return out


def _read_stones(out: dict, at: slice, window: Window, part: np.ndarray, inverse: np.ndarray, heads,
                 mine: np.ndarray, theirs: np.ndarray, device: torch.device) -> None:
    """`positions_read`'s ownership and score losses and stone counts of one batch (its positions `part`, the
    network's `heads`, the stones `mine` and `theirs` [B, H*W]), into `out` at `at`."""
    target, score_target, mask = window.aux_batch(part, inverse)
    ownership = heads[2].float()
    own_loss, score_loss = aux_losses_each(ownership, heads[3].float(), *to_tensors(device, target, score_target))
    out["ownership_loss"][at] = np.where(mask, own_loss.cpu().numpy(), 0)
    out["score_loss"][at] = np.where(mask, score_loss.cpu().numpy(), 0)
    own = ownership.cpu().numpy()
    stone_colour = np.where(mine, 1.0, np.where(theirs, -1.0, 0.0))
    stones = stone_colour != 0
    live = stones & (target == stone_colour) & mask[:, None]
    dead = stones & ~live & mask[:, None]
    says_live = own * stone_colour > 0
    out["aux"][at] = mask
    for key, count in (("dead", dead), ("dead_read", dead & ~says_live), ("live", live),
                       ("live_read", live & says_live)):
        out[key][at] = count.sum(axis=1)


def _opponent_plane(planes: int) -> int:
    """The input plane of the opponent's stones now: Go's after the side to move's history (17 planes or more),
    Gomoku's second (4 planes)."""
    return HISTORY_PLANES if planes > 2 * HISTORY_PLANES else 1


def reading_shares(read: dict) -> dict:
    """`positions_read`'s arrays summed: positions with ownership targets, dead and live stones, and the share
    of each read right (None where there are none)."""
    dead, live = int(read["dead"].sum()), int(read["live"].sum())
    return {"positions": int(read["aux"].sum()), "dead_stones": dead, "live_stones": live,
            "dead_read": int(read["dead_read"].sum()) / dead if dead else None,
            "live_read": int(read["live_read"].sum()) / live if live else None}
