"""The dual-head residual network and its checkpoints.

A trunk of B residual blocks of C filters (3x3 conv, batch norm, ReLU, skip),
a policy head giving logits over the game's actions and a value head (tanh).
The network's config travels inside every checkpoint; checkpoints are written
atomically (temp file, then rename) and read with `weights_only=True`, so a
checkpoint holds tensors and plain values only and can never run code.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from zero.fileio import atomic_write

CHECKPOINT_FORMAT = "zero-checkpoint-v1"


class CheckpointError(ValueError):
    """A checkpoint file that is missing, corrupt or not one of ours."""


@dataclass(frozen=True)
class NetConfig:
    """Everything needed to rebuild a network: stored in its checkpoint."""

    in_planes: int
    height: int
    width: int
    num_actions: int
    blocks: int
    filters: int
    value_hidden: int = 64


class ResidualBlock(nn.Module):
    def __init__(self, filters: int):
        super().__init__()
        self.conv1 = nn.Conv2d(filters, filters, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(filters)
        self.conv2 = nn.Conv2d(filters, filters, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(filters)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(x + y)


class ZeroNet(nn.Module):
    """AlphaGo Zero's two-headed ResNet.

    forward(x: [B, in_planes, H, W] float32) -> (logits [B, A], value [B] in (-1, 1)),
    the value from the point of view of the side to move.
    """

    def __init__(self, config: NetConfig):
        super().__init__()
        self.config = config
        c, hw = config.filters, config.height * config.width
        self.stem = nn.Sequential(
            nn.Conv2d(config.in_planes, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU()
        )
        self.trunk = nn.Sequential(*[ResidualBlock(c) for _ in range(config.blocks)])
        self.policy_conv = nn.Sequential(nn.Conv2d(c, 2, 1, bias=False), nn.BatchNorm2d(2), nn.ReLU())
        self.policy_fc = nn.Linear(2 * hw, config.num_actions)
        self.value_conv = nn.Sequential(nn.Conv2d(c, 1, 1, bias=False), nn.BatchNorm2d(1), nn.ReLU())
        self.value_fc = nn.Sequential(
            nn.Linear(hw, config.value_hidden), nn.ReLU(), nn.Linear(config.value_hidden, 1)
        )

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.trunk(self.stem(x))
        logits = self.policy_fc(self.policy_conv(h).flatten(1))
        value = torch.tanh(self.value_fc(self.value_conv(h).flatten(1))).squeeze(1)
        return logits, value


def net_config_for(params, game) -> NetConfig:
    """The NetConfig a params file asks for, shaped to a game."""
    return NetConfig(
        in_planes=game.num_planes,
        height=game.height,
        width=game.width,
        num_actions=game.num_actions,
        blocks=params.network.blocks,
        filters=params.network.filters,
        value_hidden=params.network.value_hidden,
    )


def pick_device(name: str = "auto") -> torch.device:
    """`auto` takes the GPU where there is one, else the CPU."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def set_threads(threads: int) -> None:
    """Use `threads` CPU threads for torch (0 leaves torch's default: one per core).

    Several processes sharing a machine should split its cores: OpenMP threads
    of oversubscribed processes spin against each other and can run a hundred
    times slower.
    """
    if threads > 0:
        torch.set_num_threads(threads)


def save_checkpoint(net: ZeroNet, path: str | Path, meta: dict | None = None) -> None:
    """Write state_dict + config + meta to `path` atomically."""
    blob = {
        "format": CHECKPOINT_FORMAT,
        "config": asdict(net.config),
        "state_dict": {k: v.detach().cpu().clone() for k, v in net.state_dict().items()},
        "meta": dict(meta or {}),
    }
    with atomic_write(path) as f:
        torch.save(blob, f)


def net_from_parts(config: dict, state_dict: dict) -> ZeroNet:
    """Rebuild a network from its config dict and state_dict; CheckpointError if they disagree."""
    try:
        net = ZeroNet(NetConfig(**config))
        net.load_state_dict(state_dict)
    except (TypeError, RuntimeError, KeyError) as e:
        raise CheckpointError(f"network config and weights do not match: {e}") from None
    net.eval()
    return net


def load_checkpoint(path: str | Path, device: str | torch.device = "cpu") -> tuple[ZeroNet, dict]:
    """Read a checkpoint written by save_checkpoint: (network in eval mode, meta)."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: no such checkpoint file")
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # corrupt zip, truncated file, or a pickle that is more than tensors
        raise CheckpointError(f"{path}: not a readable checkpoint ({type(e).__name__}: {str(e)[:200]})") from None
    if not isinstance(blob, dict) or blob.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(f"{path}: not a zero checkpoint (no {CHECKPOINT_FORMAT!r} format tag)")
    try:
        net = net_from_parts(blob["config"], blob["state_dict"])
    except CheckpointError as e:
        raise CheckpointError(f"{path}: {e}") from None
    return net.to(device), dict(blob.get("meta", {}))


def init_network(params, game, seed: int) -> ZeroNet:
    """A freshly initialised network, deterministic for a seed."""
    gen = torch.random.fork_rng(devices=[])
    with gen:
        torch.manual_seed(seed)
        net = ZeroNet(net_config_for(params, game))
    net.eval()
    return net


def init_checkpoint(params, path: str | Path, seed: int) -> None:
    """Write a freshly initialised network for the params' game to `path`."""
    from zero.games import make_game

    game = make_game(params.game)
    net = init_network(params, game, seed)
    save_checkpoint(net, path, {"seed": seed, "game": params.game.tag, "generation": 0})
