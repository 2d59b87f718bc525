"""The dual-head residual network and its checkpoints.

A trunk of B residual blocks of C filters (3x3 conv, batch norm, ReLU, skip),
a policy head giving logits over the game's actions and a value head (tanh).
Two switches of the config, both off in the paper's recipe, follow KataGo
(Wu, "Accelerating Self-Play Learning in Go", 2019): global-pooling biases in
some residual blocks, and auxiliary heads for the final ownership of each
point and the final score. A config with both off builds exactly the paper's
network, and its checkpoint config lists none of their fields.
The network's config travels inside every checkpoint; checkpoints are written
atomically (temp file, then rename) and read with `weights_only=True`, so a
checkpoint holds tensors and plain values only and can never run code.

Loading verifies a checkpoint before it is used: the zip's CRC of every
member, the config's sizes, finite weights, and, where the checkpoint records
one, `meta["content_sha256"]`, a sha256 over its config, weights and the rest
of its meta. Checkpoints written before that field existed load with the
other checks; they are never rewritten, since their file hashes are part of
recorded lineages.
"""

from __future__ import annotations

import hashlib
import json
import math
import zipfile
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from zero.config import MAX_NETWORK_BYTES, network_parameters
from zero.fileio import atomic_write

CHECKPOINT_FORMAT = "zero-checkpoint-v1"
SCORE_MULTIPLIER = 20.0  # the score head's output times this is the score in points (as KataGo's score mean)
CHECKSUM_KEY = "content_sha256"  # in a checkpoint's meta: sha256 of its config, weights and other meta


class CheckpointError(ValueError):
    """A checkpoint file that is missing, corrupt or not one of ours."""


@dataclass(frozen=True)
class NetConfig:
    """Everything needed to rebuild a network: stored in its checkpoint.

    pooling_every: 0 for no global pooling; k > 0 gives the last residual block
        and every k-th block before it a global-pooling bias (`pooling_blocks`).
    pooling_channels: channels pooled in each such block (0 when pooling is off).
    aux_heads: the ownership and score heads (Go's auxiliary targets).
    """

    in_planes: int
    height: int
    width: int
    num_actions: int
    blocks: int
    filters: int
    value_hidden: int = 64
    pooling_every: int = 0
    pooling_channels: int = 0
    aux_heads: bool = False

    @property
    def pooling_blocks(self) -> tuple[int, ...]:
        """Indices of the residual blocks with a global-pooling bias: the last, and every k-th before it."""
        if self.pooling_every <= 0:
            return ()
        return tuple(i for i in range(self.blocks) if (self.blocks - 1 - i) % self.pooling_every == 0)


# Fields added to NetConfig after checkpoints were first recorded, with the value that means "off". A
# checkpoint's config lists them only when they differ from it, so a network with the switches off is
# written byte for byte as before, and older checkpoints (without them) load as that network.
LATER_FIELDS = {"pooling_every": 0, "pooling_channels": 0, "aux_heads": False}


def config_dict(config: NetConfig) -> dict:
    """The config as stored in a checkpoint: LATER_FIELDS left out while they hold their off value."""
    return {k: v for k, v in asdict(config).items() if k not in LATER_FIELDS or v != LATER_FIELDS[k]}


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


def global_pool(g: torch.Tensor) -> torch.Tensor:
    """KataGo's global pooling of [B, C, H, W] features -> [B, 3C]: per channel the mean, the mean
    scaled by (sqrt(H*W) - 14) / 10 (so the network can tell board sizes apart), and the max.

    (Wu 2019, "Accelerating Self-Play Learning in Go", section 3.3.)
    """
    mean = g.mean(dim=(2, 3))
    scale = (math.sqrt(g.shape[2] * g.shape[3]) - 14.0) / 10.0
    return torch.cat([mean, mean * scale, g.amax(dim=(2, 3))], dim=1)


class GlobalPoolingBlock(ResidualBlock):
    """A residual block whose inner features get a per-channel bias computed from the whole board.

    A 1x1 conv (batch norm, ReLU) gives `pooled` channels from the block's input;
    their global pool (`global_pool`) goes through a linear layer to one bias per
    filter, added after the block's first conv. Global context such as the
    number of ko threats or which side is ahead reaches every point in one block
    (Wu 2019, section 3.3; KataGo adds the bias inside its residual blocks the same way).
    """

    def __init__(self, filters: int, pooled: int):
        super().__init__(filters)
        self.pool_conv = nn.Conv2d(filters, pooled, 1, bias=False)
        self.pool_bn = nn.BatchNorm2d(pooled)
        self.pool_fc = nn.Linear(3 * pooled, filters)

    def pooled_bias(self, x: torch.Tensor) -> torch.Tensor:
        """[B, C, H, W] block input -> [B, filters] bias."""
        return self.pool_fc(global_pool(F.relu(self.pool_bn(self.pool_conv(x)))))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        y = y + self.pooled_bias(x)[:, :, None, None]
        y = self.bn2(self.conv2(y))
        return F.relu(x + y)


class ZeroNet(nn.Module):
    """AlphaGo Zero's two-headed ResNet.

    forward(x: [B, in_planes, H, W] float32) -> (logits [B, A], value [B] in (-1, 1)),
    the value from the point of view of the side to move. With `aux_heads`,
    `forward_aux` also gives the ownership and score heads.
    """

    def __init__(self, config: NetConfig):
        super().__init__()
        self.config = config
        c, hw = config.filters, config.height * config.width
        self.stem = nn.Sequential(
            nn.Conv2d(config.in_planes, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU()
        )
        pooled = set(config.pooling_blocks)
        self.trunk = nn.Sequential(*[
            GlobalPoolingBlock(c, config.pooling_channels) if i in pooled else ResidualBlock(c)
            for i in range(config.blocks)
        ])
        self.policy_conv = nn.Sequential(nn.Conv2d(c, 2, 1, bias=False), nn.BatchNorm2d(2), nn.ReLU())
        self.policy_fc = nn.Linear(2 * hw, config.num_actions)
        self.value_conv = nn.Sequential(nn.Conv2d(c, 1, 1, bias=False), nn.BatchNorm2d(1), nn.ReLU())
        self.value_fc = nn.Sequential(
            nn.Linear(hw, config.value_hidden), nn.ReLU(), nn.Linear(config.value_hidden, 1)
        )

        if config.aux_heads:
            # KataGo's ownership head (tanh per point) and a score head beside the value's hidden layer.
            self.ownership_conv = nn.Conv2d(c, 1, 1)
            self.score_fc = nn.Linear(config.value_hidden, 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.trunk(self.stem(x))
        logits = self.policy_fc(self.policy_conv(h).flatten(1))
        value = torch.tanh(self.value_fc(self.value_conv(h).flatten(1))).squeeze(1)
        return logits, value

    def forward_aux(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """(logits [B, A], value [B], ownership [B, H*W] in (-1, 1), score [B] in points), all from
        the side to move's view; needs `aux_heads`."""
        if not self.config.aux_heads:
            raise ValueError("this network has no auxiliary heads (network.aux_heads is off)")
        h = self.trunk(self.stem(x))
        logits = self.policy_fc(self.policy_conv(h).flatten(1))
        hidden = self.value_fc[1](self.value_fc[0](self.value_conv(h).flatten(1)))  # value_fc[:2], [B, hidden]
        value = torch.tanh(self.value_fc[2](hidden)).squeeze(1)
        ownership = torch.tanh(self.ownership_conv(h).flatten(1))
        score = self.score_fc(hidden).squeeze(1) * SCORE_MULTIPLIER
        return logits, value, ownership, score


class ScoreUtilityNet(nn.Module):
    """A ZeroNet whose value is the search's utility: (v + w * 2/pi * atan(s / scale)) / (1 + w).

    v is the value head, s the score head's margin in points (both the side to move's), w the weight
    (mcts.score_utility). The utility stays in [-1, 1], so the search's constants, its first-play urgency
    and the resign statistic keep their ranges. Same call as ZeroNet: (logits [B, A], utility [B]); with
    `head_value`, (logits, [B, 2] the utility and v), so that the search backs up the value head's
    values beside the utility (zero.mcts.split_values; the q of a q/z value target).
    """

    def __init__(self, net: ZeroNet, weight: float, scale: float, head_value: bool = False):
        super().__init__()
        if not net.config.aux_heads:
            raise ValueError("mcts.score_utility needs a network with the score head (network.aux_heads)")
        self.net, self.weight, self.scale = net, float(weight), float(scale)
        self.config = net.config
        self.head_value = bool(head_value)
        self.value_width = 2 if self.head_value else 1

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits, value, _, score = self.net.forward_aux(x)
        score_term = torch.atan(score.float() / self.scale) * (2.0 / math.pi)
        utility = (value.float() + self.weight * score_term) / (1.0 + self.weight)
        if self.head_value:
            return logits, torch.stack([utility, value.float()], dim=1)
        return logits, utility


def search_network(net: ZeroNet, score_utility: float = 0.0, scale: float = 10.0,
                   head_value: bool = False) -> nn.Module:
    """The network as the search evaluates it: `net` itself, or its ScoreUtilityNet with a weight above 0
    (with `head_value`, returning the value head's value beside the utility). Without a score utility the
    search's values are the value head's, and `head_value` changes nothing."""
    return ScoreUtilityNet(net, score_utility, scale, head_value) if score_utility > 0 else net


def net_config_for(params, game) -> NetConfig:
    """The NetConfig a params file asks for, shaped to a game."""
    net = params.network
    return NetConfig(
        in_planes=game.num_planes,
        height=game.height,
        width=game.width,
        num_actions=game.num_actions,
        blocks=net.blocks,
        filters=net.filters,
        value_hidden=net.value_hidden,
        pooling_every=net.global_pooling_every if net.global_pooling else 0,
        pooling_channels=net.pooling_channels if net.global_pooling else 0,
        aux_heads=net.aux_heads,
    )


def pick_device(name: str = "auto") -> torch.device:
    """`auto` takes the GPU where there is one, else the CPU."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def set_threads(threads: int) -> None:
    """Use `threads` CPU threads for torch and for the search's numba kernels (0 leaves the defaults:
    one per core; numba is capped by NUMBA_NUM_THREADS).

    Several processes sharing a machine should split its cores: OpenMP threads
    of oversubscribed processes spin against each other and can run a hundred
    times slower.
    """
    if threads > 0:
        import numba

        torch.set_num_threads(threads)
        numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))


def content_sha256(config: dict, state_dict: dict, meta: dict) -> str:
    """sha256 of a checkpoint's content: config, every tensor (name, dtype, shape, bytes) and meta.

    `meta`'s own CHECKSUM_KEY is left out. Config and meta enter as canonical
    JSON, so a checkpoint rebuilt from JSON copies of them hashes the same.
    """
    h = hashlib.sha256(b"zero-checkpoint-content-v1\n")
    h.update(json.dumps(config, sort_keys=True).encode() + b"\n")
    rest = {k: v for k, v in meta.items() if k != CHECKSUM_KEY}
    h.update(json.dumps(rest, sort_keys=True).encode() + b"\n")
    for name in sorted(state_dict):
        t = state_dict[name].detach().cpu().contiguous()
        h.update(json.dumps([name, str(t.dtype), list(t.shape)]).encode() + b"\n")
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def save_checkpoint(net: ZeroNet, path: str | Path, meta: dict | None = None, checksum: bool = False) -> None:
    """Write state_dict + config + meta to `path` atomically; the same content gives the same bytes.

    With `checksum`, meta records CHECKSUM_KEY, the content hash that loading
    verifies (init_checkpoint and train write checkpoints this way). A meta
    that already carries one (a checkpoint rebuilt from its parts, e.g. from
    the model registry) must match the network and keeps it; a meta without
    one gets none unless `checksum` is set, so rebuilding a checkpoint of
    either kind gives back the same bytes.
    """
    meta = dict(meta or {})
    config = config_dict(net.config)
    state_dict = {k: v.detach().cpu().clone() for k, v in net.state_dict().items()}
    if checksum or CHECKSUM_KEY in meta:
        try:
            digest = content_sha256(config, state_dict, meta)
        except TypeError as e:
            raise CheckpointError(f"{path}: checkpoint meta must hold JSON values only ({e})") from None
        recorded = meta.get(CHECKSUM_KEY)
        if recorded is not None and recorded != digest:
            raise CheckpointError(
                f"{path}: meta records {CHECKSUM_KEY} {str(recorded)[:16]}..., but this network and meta "
                f"hash to {digest[:16]}...: they are not the ones the checksum was made for"
            )
        meta[CHECKSUM_KEY] = digest
    blob = {"format": CHECKPOINT_FORMAT, "config": config, "state_dict": state_dict, "meta": meta}
    with atomic_write(path) as f:
        torch.save(blob, f)


def _check_config(config) -> None:
    """Refuse a config that is not NetConfig's fields (sizes as positive ints), or too large to build."""
    if not isinstance(config, dict):
        raise CheckpointError(f"network config is a {type(config).__name__}, not a mapping")
    names = {f.name for f in fields(NetConfig)}
    required = names - {"value_hidden", *LATER_FIELDS}
    unknown, missing = set(config) - names, required - set(config)
    if unknown or missing:
        raise CheckpointError(f"network config has unknown fields {sorted(map(str, unknown))} "
                              f"or lacks {sorted(missing)}")
    for k, v in config.items():
        if k == "aux_heads":
            if type(v) is not bool:
                raise CheckpointError(f"network config {k}={v!r} is not a boolean")
        elif k in LATER_FIELDS:
            if type(v) is not int or v < 0:
                raise CheckpointError(f"network config {k}={v!r} is not a non-negative integer")
        elif type(v) is not int or v < 1:
            raise CheckpointError(f"network config {k}={v!r} is not a positive integer")
    if (config.get("pooling_every", 0) > 0) != (config.get("pooling_channels", 0) > 0):
        raise CheckpointError(f"network config pooling_every={config.get('pooling_every', 0)} and "
                              f"pooling_channels={config.get('pooling_channels', 0)}: both or neither must be set")
    size = 4 * network_parameters(**{k: config[k] for k in names if k in config})
    if size > MAX_NETWORK_BYTES:
        raise CheckpointError(f"network config asks for {size / 2**30:.1f} GiB of weights, "
                              f"more than the {MAX_NETWORK_BYTES / 2**30:.0f} GiB limit")


def net_from_parts(config: dict, state_dict: dict) -> ZeroNet:
    """Rebuild a network from its config dict and state_dict; CheckpointError if they disagree."""
    _check_config(config)
    if not isinstance(state_dict, dict) or not all(isinstance(v, torch.Tensor) for v in state_dict.values()):
        raise CheckpointError("state_dict is not a mapping of names to tensors")
    try:
        net = ZeroNet(NetConfig(**config))
        net.load_state_dict(state_dict)
    except (TypeError, RuntimeError, KeyError) as e:
        raise CheckpointError(f"network config and weights do not match: {e}") from None
    net.eval()
    return net


def _check_zip(path: Path) -> None:
    """The CRC of every member of a torch zip file: catches flipped bits anywhere in the data."""
    try:
        with zipfile.ZipFile(path) as z:
            bad = z.testzip()
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as e:
        raise CheckpointError(f"{path}: not a readable checkpoint (corrupt zip: {str(e)[:200]})") from None
    if bad is not None:
        raise CheckpointError(f"{path}: corrupt checkpoint: {bad} fails its CRC check")


def load_checkpoint(path: str | Path, device: str | torch.device = "cpu") -> tuple[ZeroNet, dict]:
    """Read and verify a checkpoint written by save_checkpoint: (network in eval mode, meta).

    CheckpointError names the file and what failed: unreadable or not ours,
    a zip CRC, the recorded content hash, a non-finite weight, or a config
    that does not fit its weights. The returned meta leaves out CHECKSUM_KEY.
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"{path}: no such checkpoint file")
    if zipfile.is_zipfile(path):
        _check_zip(path)
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # corrupt zip, truncated file, or a pickle that is more than tensors
        raise CheckpointError(f"{path}: not a readable checkpoint ({type(e).__name__}: {str(e)[:200]})") from None
    if not isinstance(blob, dict) or blob.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(f"{path}: not a zero checkpoint (no {CHECKPOINT_FORMAT!r} format tag)")
    config, state_dict, meta = blob.get("config"), blob.get("state_dict"), blob.get("meta", {})
    if not isinstance(meta, dict):
        raise CheckpointError(f"{path}: checkpoint meta is a {type(meta).__name__}, not a mapping")
    try:
        net = net_from_parts(config, state_dict)
    except CheckpointError as e:
        raise CheckpointError(f"{path}: {e}") from None
    if CHECKSUM_KEY in meta:
        try:
            digest = content_sha256(config, state_dict, meta)
        except TypeError:
            digest = None
        if digest != meta[CHECKSUM_KEY]:
            raise CheckpointError(
                f"{path}: checksum mismatch: the checkpoint records {CHECKSUM_KEY} {str(meta[CHECKSUM_KEY])[:16]}..., "
                f"but its content hashes to {str(digest)[:16]}...: the file is corrupt or was altered"
            )
    for name, t in state_dict.items():
        if t.is_floating_point() and not bool(torch.isfinite(t).all()):
            raise CheckpointError(f"{path}: weight {name} holds NaN or infinite values")
    return net.to(device), {k: v for k, v in meta.items() if k != CHECKSUM_KEY}


def check_network_fits(net: ZeroNet, game, path, params_tag: str, checkpoint_game: str | None = None,
                       widens: bool = False) -> None:
    """CheckpointError naming the checkpoint, its board and the params' board when `net` cannot play `game`.

    widens: the network will play widened (zero.match.make_player), so one without the liberty planes fits a
    game that makes them."""
    c = net.config
    if (c.in_planes, c.height, c.width, c.num_actions) == (game.num_planes, game.height, game.width,
                                                           game.num_actions):
        return
    if widens and getattr(game, "liberty_planes", False) and (c.height, c.width, c.num_actions) == (
            game.height, game.width, game.num_actions):
        from zero.games.go_kernels import LIBERTY_PLANES

        if c.in_planes + LIBERTY_PLANES == game.num_planes:
            return
    kind = f"{checkpoint_game}, " if checkpoint_game else ""
    if (c.height, c.width, c.num_actions) == (game.height, game.width, game.num_actions) and game.name == "go":
        from zero.games.go_kernels import LIBERTY_PLANES

        switch = {game.num_planes + LIBERTY_PLANES: "true", game.num_planes - LIBERTY_PLANES: "false"}.get(c.in_planes)
        if switch is not None and getattr(game, "liberty_planes", False) != (switch == "true"):
            raise CheckpointError(
                f"{path}: the checkpoint's network takes {c.in_planes} input planes, the params' game gives "
                f"{game.num_planes}: it was trained with game.liberty_planes: {switch} "
                f"(--set game.liberty_planes={switch})")
    raise CheckpointError(
        f"{path}: the checkpoint's network is for {kind}a {c.height}x{c.width} board with {c.in_planes} input "
        f"planes and {c.num_actions} actions, but the params are for {params_tag}, a {game.height}x{game.width} "
        f"board with {game.num_planes} input planes and {game.num_actions} actions"
    )


def init_network(params, game, seed: int) -> ZeroNet:
    """A freshly initialised network, deterministic for a seed."""
    gen = torch.random.fork_rng(devices=[])
    with gen:
        torch.manual_seed(seed)
        net = ZeroNet(net_config_for(params, game))
    net.eval()
    return net


def grow_network(net: ZeroNet, blocks: int, filters: int, pooling_channels: int, seed: int) -> ZeroNet:
    """`net` with a trunk of `blocks` blocks of `filters` filters that computes what `net` computes.

    A line that starts small and grows (a small network learns fast early, a larger one goes further)
    keeps the strength it has: every weight of `net` keeps its place, the new channels get random
    weights on their inputs and zero weights into the old channels and the heads, and the new blocks
    are identities (their second batch norm zero on the old channels), so the grown network's outputs
    equal `net`'s up to float rounding and training moves on from there (Net2Net, Chen et al. 2016,
    with zero-initialised residual branches, Goyal et al. 2017). The new blocks come first: a block's
    kind (plain or global pooling) is set by its distance from the last, so the old blocks, kept in
    order at the end of the trunk, keep their kinds. ValueError if the new trunk is smaller in any size.
    """
    old = net.config
    if blocks < old.blocks or filters < old.filters or pooling_channels < old.pooling_channels:
        raise ValueError(f"a network grows, it does not shrink: b{old.blocks}c{old.filters} (pooling "
                         f"{old.pooling_channels}) to b{blocks}c{filters} (pooling {pooling_channels})")
    new_cfg = NetConfig(**{**asdict(old), "blocks": blocks, "filters": filters,
                           "pooling_channels": pooling_channels if old.pooling_every else 0})
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        grown = ZeroNet(new_cfg)
    places = [blocks - old.blocks + i for i in range(old.blocks)]  # right-aligned: each keeps its kind
    c, pc = old.filters, old.pooling_channels
    src = {k: v.detach().float() for k, v in net.state_dict().items()}
    out = grown.state_dict()

    def keep(name: str, new_name: str | None = None, old_in: int | None = c, pooled_in: bool = False) -> None:
        """Copy tensor `name` into the leading corner of `new_name`; zero what new inputs give old outputs."""
        w, target = src[name], out[new_name or name]
        if w.dim() == 0:
            target.copy_(w)
            return
        if pooled_in:  # the input is [mean, scaled mean, max] of the pooled channels: three blocks of pc
            wide = target.shape[1] // 3
            target[: w.shape[0]] = 0.0
            for part in range(3):
                target[: w.shape[0], part * wide: part * wide + pc] = w[:, part * pc: (part + 1) * pc]
            return
        target[tuple(slice(0, n) for n in w.shape)] = w
        if w.dim() >= 2 and old_in is not None and target.shape[1] > w.shape[1]:
            target[: w.shape[0], w.shape[1]:] = 0.0

    for name in src:
        if name.startswith("trunk."):
            i, rest = name.split(".", 2)[1:]
            keep(name, f"trunk.{places[int(i)]}.{rest}", pooled_in=rest == "pool_fc.weight")
        elif name.startswith("stem.0"):
            keep(name, old_in=None)  # the input planes do not grow
        else:
            keep(name)
    for i in sorted(set(range(blocks)) - set(places)):  # a new block: its residual branch adds nothing
        out[f"trunk.{i}.bn2.weight"][:c] = 0.0
        out[f"trunk.{i}.bn2.bias"][:c] = 0.0
    grown.load_state_dict(out)
    grown.eval()
    return grown


def widen_inputs(net: ZeroNet, in_planes: int) -> ZeroNet:
    """`net` taking `in_planes` input planes, the new ones after its own, that computes what `net` computes.

    The stem's weights on the new planes are zero, so the outputs are `net`'s exactly, whatever the new
    planes hold; training then learns what they are worth (a line gaining game.liberty_planes from a
    champion without them). ValueError if `in_planes` is fewer than the network has.
    """
    old = net.config
    if in_planes < old.in_planes:
        raise ValueError(f"a network's input widens, it does not narrow: {old.in_planes} planes to {in_planes}")
    wide = ZeroNet(NetConfig(**{**asdict(old), "in_planes": in_planes}))
    state = {k: v.detach().cpu().clone() for k, v in net.state_dict().items()}
    w = state["stem.0.weight"]
    state["stem.0.weight"] = torch.cat([w, w.new_zeros(w.shape[0], in_planes - w.shape[1], *w.shape[2:])], dim=1)
    wide.load_state_dict(state)
    wide.eval()
    return wide


def init_checkpoint(params, path: str | Path, seed: int) -> None:
    """Write a freshly initialised network for the params' game to `path`."""
    from zero.games import make_game

    game = make_game(params.game)
    net = init_network(params, game, seed)
    save_checkpoint(net, path, {"seed": seed, "game": params.game.tag, "generation": 0}, checksum=True)
