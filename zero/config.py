"""Run configuration: one `params.yaml`, one pydantic section per stage.

The file is read once at an entry point (the CLI or a flow) into `Params` and
passed down explicitly. Unknown keys and bad values are refused with the
field named. Types are strict (`true` is not an integer, `"3"` not a number;
an integer is a valid float), every count has an upper bound, and the network
and the search trees a file asks for must fit in memory.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (BaseModel, ConfigDict, Field, ValidationError, field_validator, model_serializer,
                      model_validator)

# Upper bounds: generous for real runs, small enough that a typo fails here, not in an allocation.
MAX_GAMES = 100_000  # games in a shard, a gate or a match
MAX_VISITS = 100_000  # search visits per move
MAX_CONCURRENT = 4096  # games played at once
MAX_MOVES = 10_000  # temperature / opening moves (a 19x19 game ends within 722)
MAX_THREADS = 1024
MAX_SHARDS = 10_000
MAX_STEPS = 100_000_000
MAX_BATCH = 65_536
MAX_SEED = 2**63 - 1
MAX_BLOCKS = 256
MAX_FILTERS = 4096
MAX_NETWORK_BYTES = 2**30  # float32 weights of the network (the paper's 40-block network: ~0.2 GiB on 19x19)
MAX_TREE_BYTES = 16 * 2**30  # preallocated search trees of a stage (all games, both players)
TREE_BYTES_PER_EDGE = 24  # N, W, W2, V, P, child: 4 bytes each per [game, node, action]


class ConfigError(ValueError):
    """A params file or override that cannot be used; the message names the field."""


class _YamlLoader(yaml.SafeLoader):
    """SafeLoader that also reads YAML 1.2 floats without a dot (`1e-4`, `1e20`) as numbers, not strings,
    and refuses a key given twice in one mapping (plain YAML keeps the last: a second `selfplay:` section
    would silently replace the first)."""

    def construct_mapping(self, node, deep=False):
        seen: dict = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key: the base class names it
                break
            if first is not None:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}: first on line {first + 1}, again on line "
                    f"{key_node.start_mark.line + 1}", key_node.start_mark)
            seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep=deep)


_YamlLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def usable_cores() -> int:
    """The cores this process may run on: its affinity where the platform has one (a process started under
    `taskset -c 1` has one core of two), else the machine's."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def read_yaml(text: str) -> Any:
    """Parse YAML text the way params files and overrides are read (yaml.YAMLError if it is not YAML)."""
    try:
        return yaml.load(text, Loader=_YamlLoader)
    except RecursionError:
        raise yaml.YAMLError("nested too deeply") from None


# A recipe switch (`switch=True`) is left out of a section's dump while it has its default (off)
# value, so adding one changes neither the params hash of existing params files nor a shard's bytes.
_SWITCH = {"switch": True}


def _int(default: int, ge: int, le: int, switch: bool = False):
    """A strict integer field (no bools, floats or strings) in [ge, le]."""
    return Field(default, strict=True, ge=ge, le=le, json_schema_extra=_SWITCH if switch else None)


def _float(default: float | None, switch: bool = False, **bounds):
    """A strict, finite float field (integers are accepted; bools and strings are not)."""
    return Field(default, strict=True, allow_inf_nan=False, json_schema_extra=_SWITCH if switch else None, **bounds)


def _bool(default: bool, switch: bool = False):
    return Field(default, strict=True, json_schema_extra=_SWITCH if switch else None)


_DEVICE = re.compile(r"^(auto|cpu|mps|cuda(:\d{1,3})?)$")


def _device(v: str) -> str:
    if not _DEVICE.match(v):
        raise ValueError(f"device {v!r} is not one of auto, cpu, cuda, cuda:<index>, mps")
    return v


def network_parameters(in_planes: int, height: int, width: int, num_actions: int, blocks: int, filters: int,
                       value_hidden: int = 64, pooling_every: int = 0, pooling_channels: int = 0,
                       aux_heads: bool = False) -> int:
    """The number of trainable parameters of network.ZeroNet for these sizes."""
    c, hw = filters, height * width
    stem = in_planes * c * 9 + 2 * c
    trunk = blocks * (2 * c * c * 9 + 4 * c)
    if pooling_every > 0:
        pooled_blocks = (blocks - 1) // pooling_every + 1
        trunk += pooled_blocks * (c * pooling_channels + 2 * pooling_channels + 3 * pooling_channels * c + c)
    policy = 2 * c + 2 * 2 + 2 * hw * num_actions + num_actions
    value = c + 2 + hw * value_hidden + value_hidden + value_hidden + 1
    aux = (c + 1 + value_hidden + 1) if aux_heads else 0
    return stem + trunk + policy + value + aux


def board_shape(game: "GameConfig") -> tuple[int, int, int]:
    """(input planes, board points, actions) of a game section, as zero.games builds it."""
    if game.name == "go":
        return 17 + (6 if game.liberty_planes else 0), game.size * game.size, game.size * game.size + 1
    return 4, game.height * game.width, game.height * game.width


def tree_bytes(game: "GameConfig", games_at_once: int, visits: int, players: int = 1) -> int:
    """Bytes of the search trees preallocated for `games_at_once` games at `visits` visits a move."""
    return players * games_at_once * (visits + 2) * board_shape(game)[2] * TREE_BYTES_PER_EDGE


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @model_serializer(mode="wrap")
    def _omit_switches_at_default(self, handler):
        data = handler(self)
        for name, f in type(self).model_fields.items():
            default = f.default_factory() if f.default_factory is not None else f.default
            if f.json_schema_extra == _SWITCH and name in data and getattr(self, name) == default:
                del data[name]
        return data


class GameConfig(_Section):
    """Which game and board. Go uses `size` and `komi`; Gomoku `height`, `width`, `k`.

    `liberty_planes` (a switch, Go only, off by default): the network also sees how many liberties each
    group has (1, 2, 3 or more; its stones and the opponent's: 6 planes after the paper's 17), KataGo's
    liberty features (Wu 2019), for the capturing races and life and death a small network misjudges. A
    line started from a champion without them widens its input (zero.network.widen_inputs: the same
    outputs, then more to learn).
    """

    name: Literal["go", "gomoku"] = "go"
    size: int = _int(9, ge=5, le=19)
    komi: float = _float(7.5, ge=-361, le=361)
    height: int = _int(15, ge=3, le=25)
    width: int = _int(15, ge=3, le=25)
    k: int = _int(5, ge=3, le=9)
    liberty_planes: bool = _bool(False, switch=True)

    @model_validator(mode="after")
    def _k_fits(self) -> "GameConfig":
        if self.name == "gomoku" and self.k > max(self.height, self.width):
            raise ValueError(f"k={self.k} does not fit a {self.height}x{self.width} board")
        if self.name != "go" and self.liberty_planes:
            raise ValueError("game.liberty_planes is a Go input: Gomoku has no liberties")
        return self

    @property
    def tag(self) -> str:
        """Short name used for the registry: `go-9`, `gomoku-6x6x4`."""
        if self.name == "go":
            return f"go-{self.size}"
        return f"gomoku-{self.height}x{self.width}x{self.k}"


_NET_NAME = re.compile(r"^b(\d+)c(\d+)$")
_Generation = Annotated[int, Field(strict=True, ge=0, le=1_000_000)]


def _scheduled(schedule: list, g: int):
    """The value of the last `[generation, value]` entry of `schedule` at or below generation g, else None."""
    values = [v for start, v in sorted(schedule) if start <= g]
    return values[-1] if values else None


def _trunk(name: str) -> tuple[int, int]:
    m = _NET_NAME.match(name)
    return int(m.group(1)), int(m.group(2))


def _net_size(v: str) -> str:
    """A network size name, b<blocks>c<filters>, checked."""
    m = _NET_NAME.match(v) if isinstance(v, str) else None
    if not m or int(m.group(1)) < 1 or int(m.group(2)) < 1:
        raise ValueError(f"network size {v!r} is not of the form b<blocks>c<filters>, e.g. b6c64")
    if int(m.group(1)) > MAX_BLOCKS or int(m.group(2)) > MAX_FILTERS:
        raise ValueError(f"network size {v!r}: at most {MAX_BLOCKS} blocks of {MAX_FILTERS} filters")
    return v


class NetworkConfig(_Section):
    """Residual trunk size by name, e.g. `b6c64` (6 blocks of 64 filters).

    Switches of KataGo's recipe (Wu 2019, "Accelerating Self-Play Learning in Go"), off by default:
    `global_pooling` gives the last residual block and every `global_pooling_every`-th before it a
    global-pooling bias over `global_pooling_channels` channels (0: a quarter of the filters);
    `aux_heads` adds the ownership and score heads trained on Go's auxiliary targets.
    """

    size: str = Field("b6c64", strict=True, max_length=32)
    value_hidden: int = _int(64, ge=1, le=4096)
    global_pooling: bool = _bool(False, switch=True)
    global_pooling_every: int = _int(3, ge=1, le=MAX_BLOCKS, switch=True)
    global_pooling_channels: int = _int(0, ge=0, le=MAX_FILTERS, switch=True)
    aux_heads: bool = _bool(False, switch=True)
    # A network that grows with its line: [[generation, size], ...], the last entry at or below g applies
    # (`size` before the first). The generation whose size is larger than its champion's trains the
    # champion grown into it (zero.network.grow_network: the same outputs, then more to learn), so a line
    # can start small, where a small network learns fastest, and keep its strength as it grows.
    size_schedule: list[tuple[_Generation, str]] = Field(default_factory=list, max_length=100,
                                                          json_schema_extra=_SWITCH)

    @field_validator("size")
    @classmethod
    def _size_name(cls, v: str) -> str:
        return _net_size(v)

    @field_validator("size_schedule")
    @classmethod
    def _schedule_grows(cls, v: list) -> list:
        sizes = [(g, _net_size(name)) for g, name in sorted(v)]
        for (g0, a), (g1, b) in zip(sizes, sizes[1:]):
            (ba, ca), (bb, cb) = _trunk(a), _trunk(b)
            if g0 == g1 or bb < ba or cb < ca:
                raise ValueError(f"network.size_schedule: {a} at generation {g0} then {b} at generation {g1}; "
                                 "a network grows (blocks and filters never fewer), one size a generation")
        return v

    @model_validator(mode="after")
    def _schedule_from_size(self) -> "NetworkConfig":
        for g, name in self.size_schedule:
            (b, c), (b0, c0) = _trunk(name), _trunk(self.size)
            if b < b0 or c < c0:
                raise ValueError(f"network.size_schedule: {name} at generation {g} is smaller than network.size "
                                 f"{self.size}; a network grows, it does not shrink")
        return self

    def for_generation(self, g: int) -> "NetworkConfig":
        """This section with the size of `size_schedule` at generation g."""
        size = _scheduled(self.size_schedule, g)
        return self.model_copy(update={"size": size}) if size else self

    @property
    def blocks(self) -> int:
        return int(_NET_NAME.match(self.size).group(1))

    @property
    def filters(self) -> int:
        return int(_NET_NAME.match(self.size).group(2))

    @property
    def pooling_channels(self) -> int:
        """Channels pooled in a global-pooling block."""
        return self.global_pooling_channels or max(1, self.filters // 4)

    def parameter_sizes(self) -> dict:
        """The trunk's and heads' sizes as network_parameters takes them."""
        return {"blocks": self.blocks, "filters": self.filters, "value_hidden": self.value_hidden,
                "pooling_every": self.global_pooling_every if self.global_pooling else 0,
                "pooling_channels": self.pooling_channels if self.global_pooling else 0,
                "aux_heads": self.aux_heads}


@dataclass(frozen=True)
class SearchConfig:
    """What one search needs, built once at an entry point (`MCTSConfig.search`) and passed down.

    visits: root visits at which a search stops.
    c_puct, fpu_reduction: PUCT constants; unvisited edges take Q = V(node) - fpu_reduction.
    c_puct_stdev_scale, c_puct_stdev_prior, c_puct_stdev_prior_weight: above 0, each node's c_puct is scaled
        by the spread of the values backed up through it (KataGo's dynamic variance-scaled c_puct,
        zero.tree_walk.explore_factor); 0: the constant c_puct.
    fpu_value: a fixed Q for unvisited edges instead; 1.0 (a win) tries every legal edge
        once before any twice, as rules-only searches with equal priors want.
    dirichlet_weight, dirichlet_alpha: root noise, mixed in when a search is given noise
        generators (self-play); alpha None scales it to the board (0.03 * 361 / legal moves).
    root_policy_temperature: at those noisy roots, the priors are raised to 1/T and renormalised before
        the noise is mixed in (KataGo's root policy temperature); 1: the network's priors.
    forced_playouts_k: forced playouts at noisy roots and the pruning of their visits from the
        policy target (Wu 2019, KataGo; k = 2 there); 0 turns both off.
    root: "puct", or "gumbel" for the Gumbel root search of zero.gumbel (Danihelka et al. 2022).
    gumbel_considered: the m actions Gumbel search samples at the root and halves down.
    gumbel_c_visit, gumbel_c_scale: sigma(q) = (c_visit + max_b N(b)) * c_scale * q, q in [0, 1].
    leaf_batch: leaves each slot selects per round under virtual loss (zero.virtual_loss), for searches
        without root noise; 1: one leaf a round, the paper's search.
    leaf_batches_in_flight: with leaf_batch > 1, batches at the evaluator at once (Search._run_in_flight).
    fill_own_eyes: False leaves the side to move's own single-point eyes out of the moves searched (Go).
    early_passes: False searches a pass only as a reply to a pass or when no other move is searched (Go).
    lcb_stdevs, lcb_min_visit_share: the move played without sampling (zero.tree.Tree.best_actions): 0, the
        most visited; else the highest lower confidence bound of Q among the edges with that share of the
        most visited one's visits.
    subtree_bias_factor, subtree_bias_exponent: above 0, each new leaf's value is corrected by the mean error
        the search observed at the tree's other nodes of its local pattern (KataGo's subtree value bias
        correction, zero.subtree_bias); 0: the network's value as it is.
    """

    visits: int
    c_puct: float = 1.5
    c_puct_stdev_scale: float = 0.0
    c_puct_stdev_prior: float = 0.4
    c_puct_stdev_prior_weight: float = 2.0
    fpu_reduction: float = 0.25
    fpu_value: float | None = None
    dirichlet_weight: float = 0.25
    dirichlet_alpha: float | None = None
    root_policy_temperature: float = 1.0
    forced_playouts_k: float = 0.0
    root: str = "puct"
    gumbel_considered: int = 16
    gumbel_c_visit: float = 50.0
    gumbel_c_scale: float = 1.0
    leaf_batch: int = 1
    leaf_batches_in_flight: int = 1
    fill_own_eyes: bool = True
    early_passes: bool = True
    lcb_stdevs: float = 0.0
    lcb_min_visit_share: float = 0.1
    subtree_bias_factor: float = 0.0
    subtree_bias_exponent: float = 0.8

    @property
    def bias(self) -> tuple[float, float]:
        """(factor, exponent): the backup kernel's argument for the subtree value bias correction."""
        return (float(self.subtree_bias_factor), float(self.subtree_bias_exponent))

    @property
    def stdev(self) -> tuple[float, float, float]:
        """(scale, prior, prior weight): the tree kernels' argument for explore_factor."""
        return (float(self.c_puct_stdev_scale), float(self.c_puct_stdev_prior), float(self.c_puct_stdev_prior_weight))


class MCTSConfig(_Section):
    """PUCT search. `dirichlet_alpha: null` scales it to the board: 0.03 * 361 / legal moves.

    The fast recipe's switches, each off by default (see SearchConfig): `forced_playouts_k`
    (KataGo's forced playouts and policy target pruning, k = 2 there) and `root: gumbel`
    (Gumbel root search with `gumbel_considered` actions, `gumbel_c_visit`, `gumbel_c_scale`).
    """

    c_puct: float = _float(1.5, gt=0, le=100)
    # KataGo's dynamic variance-scaled c_puct: at each node c_puct is multiplied by 1 + scale * (sigma / prior - 1),
    # sigma the standard deviation of the values backed up through the node, shrunk toward the prior with
    # prior_weight values' worth of weight. The search explores more where deeper search keeps contradicting
    # the network (a tactic that works or fails) and less where they agree; in self-play, matches, the ladder
    # and GTP alike. 0: off (the paper's constant c_puct); KataGo: 0.85, 0.4, 2.
    c_puct_stdev_scale: float = _float(0.0, ge=0, le=1, switch=True)
    c_puct_stdev_prior: float = _float(0.4, gt=0, le=2, switch=True)
    c_puct_stdev_prior_weight: float = _float(2.0, ge=0, le=100, switch=True)
    fpu_reduction: float = _float(0.25, ge=0, le=2)  # values lie in [-1, 1]
    dirichlet_alpha: float | None = _float(None, gt=0, le=100)
    dirichlet_weight: float = _float(0.25, ge=0, le=1)
    symmetries: bool = _bool(True)
    forced_playouts_k: float = _float(0.0, ge=0, le=100, switch=True)
    # KataGo's root policy temperature: at the roots that get Dirichlet noise (self-play's full searches), the
    # network's priors raised to 1/T and renormalised before the noise, so a temperature above 1 spreads the
    # search over moves the policy underrates and the policy targets with it. 1: off (the paper's priors).
    root_policy_temperature: float = _float(1.0, ge=0.25, le=4, switch=True)
    root: Literal["puct", "gumbel"] = Field("puct", json_schema_extra=_SWITCH)
    gumbel_considered: int = _int(16, ge=1, le=4096, switch=True)
    gumbel_c_visit: float = _float(50.0, ge=0, le=1e6, switch=True)
    gumbel_c_scale: float = _float(1.0, gt=0, le=1e3, switch=True)
    # KataGo's score utility (Wu 2019): the search maximises (v + w * 2/pi * atan(s / scale)) / (1 + w), s the
    # score head's margin for the side to move, so a side that sees the game as won or lost still plays for
    # points (it neither gives up nor fills its own eyes). 0: off (the value alone); needs network.aux_heads.
    score_utility: float = _float(0.0, ge=0, le=10, switch=True)
    score_utility_scale: float = _float(10.0, gt=0, le=1000, switch=True)
    # Leaves a search selects per round under virtual loss (zero.virtual_loss) where it has no root noise
    # (matches, the ladder, zero gtp and zero play): more visits a second for one game, at some strength
    # per visit. 1: one leaf a round (the paper's search).
    leaf_batch: int = _int(1, ge=1, le=256, switch=True)
    # With leaf_batch > 1: leaf batches of one search at the network at once, each selected under the
    # virtual visits of the others; on the CPU each runs on its own core (torch's threads split between
    # them), so one game's search uses several cores. 1: one batch at a time.
    leaf_batches_in_flight: int = _int(1, ge=1, le=16, switch=True)
    # Go: false leaves the side to move's own single-point eyes (every neighbour its own stone, at most one
    # enemy diagonal, none on the edge) out of the moves zero searches, in self-play, matches and over GTP.
    # The rules are unchanged (an opponent's move there is legal); the rule of Pachi's and GNU Go's playouts,
    # against the endgame in which an untrained network fills its eyes until its groups die. true: off.
    fill_own_eyes: bool = _bool(True, switch=True)
    # Go: false searches a pass only as a reply to the opponent's pass or when no other move is left (with
    # fill_own_eyes false: when every empty point is illegal or one of the mover's own eyes), in self-play,
    # matches and over GTP. Under Tromp-Taylor a pass while stones are still to be captured or points to be
    # taken gives the opponent a free move; a network that sees no difference learns to pass early (white
    # passed before move 40 in 512 of 512 games of the 9x9 line's generation 19, and black won 89%). A
    # reply to a pass is still searched, and the search counts the game a second pass would end exactly.
    # true: off (AlphaGo Zero's search, where a pass is one more move).
    early_passes: bool = _bool(True, switch=True)
    # The move played where none is sampled (after the temperature moves, in matches, the ladder and over
    # GTP): 0, the most visited (the paper); else the edge with the highest lower confidence bound
    # Q - lcb_stdevs * sqrt(var / N) of the values backed up through it, among the edges with at least
    # lcb_min_visit_share of the most visited one's visits (Leela Zero's and KataGo's move choice). The
    # search and the policy targets are unchanged. PUCT roots only.
    lcb_stdevs: float = _float(0.0, ge=0, le=20, switch=True)
    lcb_min_visit_share: float = _float(0.1, gt=0, le=1, switch=True)
    # KataGo's subtree value bias correction (zero.subtree_bias): the search keeps, for each local pattern (in
    # Go the last two moves and the 5x5 window around the last), how far the network's value of the tree's
    # nodes of that pattern was from what deeper search found under them, weighted by visits ** exponent; a
    # new leaf of the pattern enters with its value less factor times that mean error. Where the network
    # keeps misjudging one tactic across the tree, the search stops being fooled by it each time anew; in
    # self-play, matches, the ladder and GTP alike. 0: off; KataGo: 0.35, 0.8.
    subtree_bias_factor: float = _float(0.0, ge=0, le=1, switch=True)
    subtree_bias_exponent: float = _float(0.8, gt=0, le=2, switch=True)

    @model_validator(mode="after")
    def _late_passes_keep_eyes(self) -> "MCTSConfig":
        if not self.early_passes and self.fill_own_eyes:
            raise ValueError("early_passes=false needs fill_own_eyes=false: a side whose only moves left are "
                             "its own eyes would have to fill them instead of passing")
        if self.lcb_stdevs > 0 and self.root == "gumbel":
            raise ValueError("lcb_stdevs needs root: puct (Gumbel search chooses its move by sequential halving)")
        if self.root_policy_temperature != 1.0 and self.root == "gumbel":
            raise ValueError("root_policy_temperature needs root: puct (Gumbel search has no Dirichlet noise to "
                             "temper the priors for)")
        return self

    def search(self, visits: int) -> SearchConfig:
        """The search these params describe, stopping at `visits` root visits."""
        return SearchConfig(visits=int(visits), c_puct=self.c_puct, c_puct_stdev_scale=self.c_puct_stdev_scale,
                            c_puct_stdev_prior=self.c_puct_stdev_prior,
                            c_puct_stdev_prior_weight=self.c_puct_stdev_prior_weight, fpu_reduction=self.fpu_reduction,
                            dirichlet_weight=self.dirichlet_weight, dirichlet_alpha=self.dirichlet_alpha,
                            root_policy_temperature=self.root_policy_temperature,
                            forced_playouts_k=self.forced_playouts_k, root=self.root,
                            gumbel_considered=self.gumbel_considered, gumbel_c_visit=self.gumbel_c_visit,
                            gumbel_c_scale=self.gumbel_c_scale, leaf_batch=self.leaf_batch,
                            leaf_batches_in_flight=self.leaf_batches_in_flight,
                            fill_own_eyes=self.fill_own_eyes, early_passes=self.early_passes,
                            lcb_stdevs=self.lcb_stdevs, lcb_min_visit_share=self.lcb_min_visit_share,
                            subtree_bias_factor=self.subtree_bias_factor,
                            subtree_bias_exponent=self.subtree_bias_exponent)


class _ComputeSection(_Section):
    """A stage that runs a network: where (`device`) and on how many torch CPU threads."""

    device: Annotated[str, Field(strict=True)] = "auto"
    threads: int = _int(0, ge=0, le=MAX_THREADS)  # torch CPU threads; 0 = one per core

    @field_validator("device")
    @classmethod
    def _known_device(cls, v: str) -> str:
        return _device(v)


def _bf16_needs_fast(section):
    """A section's cpu_bf16 runs through zero.inference: refused without its fast_inference."""
    if section.cpu_bf16 and not section.fast_inference:
        raise ValueError("cpu_bf16 needs fast_inference: true (the bfloat16 network is zero.inference's)")
    return section


_Visits = Annotated[int, Field(strict=True, ge=1, le=MAX_VISITS)]


class SelfPlayConfig(_ComputeSection):
    """Self-play. The switches below the line are the fast recipe's (docs/recipes.md); off by default."""

    games_per_shard: int = _int(64, ge=1, le=MAX_GAMES)
    concurrent_games: int = _int(128, ge=1, le=MAX_CONCURRENT)
    visits: int = _int(100, ge=1, le=MAX_VISITS)
    temperature_moves: int = _int(8, ge=0, le=MAX_MOVES)
    resign_threshold: float = _float(-0.9, ge=-1, le=1)
    resign_playout_share: float = _float(0.1, ge=0, le=1)
    reuse_tree: bool = _bool(True)
    # Playout cap randomization (Wu 2019): this share of moves gets `visits`, noise, and is recorded as
    # a training target; the rest get `fast_visits`, no noise, and are not recorded. 1: every move (off).
    full_search_share: float = _float(1.0, gt=0, le=1, switch=True)
    fast_visits: int = _int(0, ge=0, le=MAX_VISITS, switch=True)
    # Resignation calibrated by the pipeline: each generation's threshold is the highest whose
    # false-positive rate on the previous generation's played-out games stays under this (0: off).
    resign_calibration_rate: float = _float(0.0, ge=0, lt=1, switch=True)
    # The highest threshold the calibration may choose (0: any). On 9x9 Go from a random start, with
    # komi 7.5 and white winning most early games, an unbounded calibration chose -0.2: black resigned
    # within a few moves in 90% of games and the line stopped learning.
    resign_calibration_max: float = _float(0.0, ge=-1, le=0, switch=True)
    # No resignation before this move of a self-play or gate game (0: any move). The network of a young
    # line can see the empty board as lost for one colour and resign on move 1, leaving nothing to learn.
    resign_min_move: int = _int(0, ge=0, le=MAX_MOVES, switch=True)
    # Self-play sized by positions, not games: a shard whose games recorded fewer positions than this plays
    # more games (as many as its positions a game so far say are missing, at most games_per_shard a round)
    # until it has them, so resignation can never starve a generation of training positions (0: off).
    min_positions_per_shard: int = _int(0, ge=0, le=100_000_000, switch=True)
    # Random openings: this share of the games starts with `random_opening_moves` stones on random central
    # points (the ladder's openings: at least two lines from the edge), played before the search chooses and
    # not recorded as training positions. Self-play left to its own temperature moves plays a few openings
    # over and over (9x9, 100 visits: 485 of 512 games of one generation open with the same two moves up to
    # symmetry); these games start where it would never go (0: off).
    random_opening_moves: int = _int(0, ge=0, le=4, switch=True)
    random_opening_share: float = _float(1.0, gt=0, le=1, switch=True)
    # Visits that grow over generations: [[generation, visits], ...], the last entry at or below g applies.
    visits_schedule: list[tuple[_Generation, _Visits]] = Field(default_factory=list, max_length=1000,
                                                                json_schema_extra=_SWITCH)
    # The engine on a GPU (docs/performance.md). search_groups: the games searched in this many groups,
    # one group's network call in flight while the next group's tree work runs (1: one search).
    # half_precision: the network in bfloat16 on CUDA (no effect on the CPU).
    # fast_inference: batch norm folded, symmetries and softmax on the device, CUDA graphs on CUDA
    # (zero.inference; priors differ from the eager path by float rounding, hence a switch).
    # cpu_bf16: with fast_inference, the network in bfloat16 on the CPU too (weights and activations; the
    # softmax stays float32). CPUs with bfloat16 instructions (avx512_bf16, AMX) run it about twice as fast.
    search_groups: int = _int(1, ge=1, le=16, switch=True)
    half_precision: bool = _bool(False, switch=True)
    fast_inference: bool = _bool(False, switch=True)
    cpu_bf16: bool = _bool(False, switch=True)
    # step_rounds: 0: every game in progress searches to its visits, then all of them move together (the
    # lockstep of the batched search). N: the searches pause every N rounds, the games whose searches have
    # their visits move and start their next search, and the others search on: with playout cap
    # randomization a round's network call then holds nearly every game in progress, not only the few
    # still on a full search (the symmetries drawn and so the bytes of a shard differ, hence a switch).
    step_rounds: int = _int(0, ge=0, le=MAX_VISITS, switch=True)
    # root_values: each recorded position also keeps its search's root value, the mean of the value head's
    # values backed up through the root (side to move's view; without mcts.score_utility, the root's Q),
    # as the shard's `root_value`: the q that train.value_q_weight mixes into the value target.
    root_values: bool = _bool(False, switch=True)
    # decided_visits: a game whose mover would resign is played out instead (KataGo's self-play, which reduces
    # the visits of decided games rather than ending them): every move from there on is searched with this
    # many visits, no noise, and is not recorded. Every game then ends on a counted board, so each of its
    # positions gets ownership and score targets (network.aux_heads) and the outcome play reached, where a
    # resigned game gives neither (0: off, the game resigns; the calibration share plays out as before).
    decided_visits: int = _int(0, ge=0, le=MAX_VISITS, switch=True)

    @model_validator(mode="after")
    def _fast_visits_fit(self) -> "SelfPlayConfig":
        if self.full_search_share < 1 and not 1 <= self.fast_visits < self.visits:
            raise ValueError(f"fast_visits={self.fast_visits}: with full_search_share {self.full_search_share} "
                             f"it must be at least 1 and below visits={self.visits}")
        if self.decided_visits > self.visits:
            raise ValueError(f"decided_visits={self.decided_visits}: the searches of a decided game get at most "
                             f"visits={self.visits}")
        return _bf16_needs_fast(self)

    def for_generation(self, g: int) -> "SelfPlayConfig":
        """This section with the visits of `visits_schedule` at generation g."""
        visits = _scheduled(self.visits_schedule, g)
        return self.model_copy(update={"visits": visits}) if visits else self


class TrainConfig(_ComputeSection):
    """Training. The switches after max_window_positions are off by default (the paper's recipe):

    ownership_weight, score_weight: weights of the auxiliary losses (network.aux_heads; KataGo's 1.5 on
        the per-point ownership cross-entropy, and a Huber loss on the score in points).
    max_samples_per_position: cap on the expected number of times a position is drawn over its life
        in the window (samples per training / new positions per generation); fewer steps when above it.
    holdout_share: share of the newest generation's games held out of training, for a held-out loss.
    mixed_precision: bf16 autocast on CUDA; no effect on the CPU.
    cpu_bf16: bf16 autocast on the CPU (CPUs with bfloat16 instructions: about 1.7 times the positions a
        second for b6c64 9x9 on one core); no effect on CUDA.
    max_grad_norm: before each step the loss's gradient is scaled down to this norm when above it (0:
        never). Against the single step that killed generation 89's value head (its one-channel value
        convolution pushed below zero for every position); every step logs `grad_norm`.
    channels_last: the network and its batches in channels-last layout (oneDNN's NHWC convolutions on
        the CPU: 1.14-1.33 times the positions a second for b6c64 9x9 on one core; cuDNN's on CUDA); the
        same training up to float rounding, so a switch.
    cuda_graph: on CUDA, each step's work (forward, backward, clip, update) replayed from one CUDA graph
        instead of launched kernel by kernel from Python, where a small network's training spends most of
        its time; no effect on the CPU. The same steps up to the kernels the libraries choose, so a switch.
    value_q_weight: the value head's target is (1 - w) z + w q, z the game's outcome and q the self-play
        search's root value of the position (selfplay.root_values; positions of shards without it keep
        z): a target less noisy than one game's outcome (Lc0's q/z mix). Held-out losses stay against z.
    policy_surprise_weight, value_surprise_weight: KataGo's surprise weighting. Before the first step the
        starting network reads every training position once (no symmetry); a position is then drawn with
        probability proportional to (1 - a - b) + a·k/mean(k) + b·u/mean(u), a and b the two weights, k the
        KL divergence of its search policy from the network's prior (what the search found that the
        policy did not expect) and u that of its game's outcome from the value head's win probability
        (what the value head misjudged). 0 and 0: uniform draws, as the paper's.
    """

    batch_size: int = _int(256, ge=1, le=MAX_BATCH)
    steps: int = _int(1000, ge=1, le=MAX_STEPS)
    learning_rate: float = _float(0.02, gt=0, le=10)
    lr_milestones: list[Annotated[int, Field(strict=True, ge=0, le=MAX_STEPS)]] = Field(
        default_factory=lambda: [600, 900], strict=True, max_length=1000)
    lr_gamma: float = _float(0.1, gt=0, le=1)
    momentum: float = _float(0.9, ge=0, lt=1)
    weight_decay: float = _float(1e-4, ge=0, le=1)
    window_generations: int = _int(4, ge=1, le=100_000)
    max_window_positions: int = _int(500_000, ge=1, le=1_000_000_000)
    ownership_weight: float = _float(1.5, ge=0, le=100, switch=True)
    score_weight: float = _float(0.02, ge=0, le=100, switch=True)
    max_samples_per_position: float | None = _float(None, gt=0, le=1_000_000, switch=True)
    holdout_share: float = _float(0.0, ge=0, lt=1, switch=True)
    max_grad_norm: float = _float(0.0, ge=0, le=1e6, switch=True)
    mixed_precision: bool = _bool(False, switch=True)
    channels_last: bool = _bool(False, switch=True)
    cpu_bf16: bool = _bool(False, switch=True)
    cuda_graph: bool = _bool(False, switch=True)
    value_q_weight: float = _float(0.0, ge=0, le=1, switch=True)
    policy_surprise_weight: float = _float(0.0, ge=0, le=1, switch=True)
    value_surprise_weight: float = _float(0.0, ge=0, le=1, switch=True)

    @model_validator(mode="after")
    def _surprise_shares(self) -> "TrainConfig":
        if self.policy_surprise_weight + self.value_surprise_weight > 1:
            raise ValueError(f"policy_surprise_weight {self.policy_surprise_weight:g} + value_surprise_weight "
                             f"{self.value_surprise_weight:g}: shares of the draws, together at most 1")
        return self


class GateConfig(_ComputeSection):
    games: int = _int(400, ge=2, le=MAX_GAMES)
    threshold: float = _float(0.55, gt=0, lt=1)
    visits: int = _int(100, ge=1, le=MAX_VISITS)
    concurrent_games: int = _int(100, ge=1, le=MAX_CONCURRENT)
    opening_moves: int = _int(6, ge=0, le=MAX_MOVES)
    sequential: bool = _bool(True)  # stop once the outcome is certain, over all gate parts' games
    # "gate": the candidate replaces the champion only if it passes (the paper); "always": it always
    # does, the match still played and logged (AlphaZero's continuous update).
    promote: Literal["gate", "always"] = Field("gate", json_schema_extra=_SWITCH)
    # Guards on promotion, each off at 0: a candidate is kept out, whatever the rule, when it scored
    # less than `min_score` of the gate's points (a broken training under promote: always), or when
    # its value head's outputs spread less than `min_value_std` at the end of its training (a dead
    # value head says the same of every position; zero.losses.evaluate's value_std).
    min_score: float = _float(0.0, ge=0, lt=1, switch=True)
    min_value_std: float = _float(0.0, ge=0, lt=1, switch=True)
    # The match's networks (and an engine's: zero gtp, zero play) through zero.inference, as selfplay's,
    # and in bfloat16 on the CPU (cpu_bf16, as selfplay's).
    fast_inference: bool = _bool(False, switch=True)
    cpu_bf16: bool = _bool(False, switch=True)

    @model_validator(mode="after")
    def _bf16_fast(self) -> "GateConfig":
        return _bf16_needs_fast(self)


class PipelineConfig(_Section):
    seed: int = _int(0, ge=0, le=MAX_SEED)
    selfplay_shards: int = _int(4, ge=1, le=MAX_SHARDS)
    gate_shards: int = _int(4, ge=1, le=MAX_SHARDS)
    num_gpus: float = _float(0, ge=0, le=1024)
    # On a Ray cluster: self-play by this many long-lived actors, each holding `num_gpus` GPUs and one
    # CPU and loading the network once per generation; 0: a task (a fresh load) per shard.
    selfplay_actors: int = _int(0, ge=0, le=MAX_SHARDS, switch=True)
    # Generation 0 of a new line starts from this checkpoint (relative to the workspace, e.g. a shipped
    # champion models/go-9.pt) instead of a freshly initialised network; null: fresh.
    init_from: str | None = Field(None, strict=True, max_length=1000)
    # With init_from: the training window that champion was trained on, as flows.ship writes it beside the
    # shipped checkpoint (models/go-9.window/), carried into generation 0, so a resumed line's first
    # generations train on the last `train.window_generations` generations' games and not on their own
    # alone; null: an empty window (a switch).
    init_window: str | None = Field(None, strict=True, max_length=1000, json_schema_extra=_SWITCH)

    @model_validator(mode="after")
    def _window_needs_start(self) -> "PipelineConfig":
        if self.init_window and not self.init_from:
            raise ValueError("init_window: a carried window needs the champion it trained (set init_from too)")
        return self


class LadderConfig(_Section):
    """The ladder: the champion against fixed opponents after a generation (`zero-ladder`, `zero ladder`).

    Opponents are `gnugo:<level>` (GNU Go 3.8 over GTP), `pachi:<playouts>` (Pachi 12.90 over GTP),
    `mcts:<rollouts>`, `gen:<g>` (the network generation g of the same line made) or a checkpoint.
    Calibration plays each consecutive pair of the fixed opponents once per
    workspace, so the anchor reaches every opponent.

    `every` (a switch): zero-generation ladders the champion only after generations whose number it divides
    (3: after generations 3, 6, 9 ...; `zero-ladder` run by hand ladders any). The fit still places every
    generation through its gate.
    """

    enabled: bool = _bool(False)
    every: int = _int(1, ge=1, le=10_000, switch=True)
    opponents: list[str] = Field(default_factory=lambda: ["mcts:1000", "gnugo:1", "gnugo:5", "gnugo:10", "gen:0"],
                                 max_length=32)
    games: int = _int(20, ge=2, le=10_000)         # per opponent; whole colour-swapped pairs
    visits: int = _int(200, ge=1, le=100_000)       # the champion's visits a move
    concurrent_games: int = _int(10, ge=1, le=1024)
    opening_moves: int = _int(2, ge=0, le=20)       # Go: random central moves, the same for both games of a pair
    calibration_games: int = _int(20, ge=0, le=10_000)
    anchor: str = Field("gnugo:1=0", strict=True, max_length=200)  # zero.ratings.DEFAULT_ANCHOR
    gnugo: str = Field("gnugo", strict=True, max_length=1000)  # the GNU Go command (also looked for in /usr/games)
    threads: int = _int(0, ge=0, le=1024)

    @field_validator("games", "calibration_games")
    @classmethod
    def _pairs(cls, v: int) -> int:
        if v % 2:
            raise ValueError(f"{v} games is not whole colour-swapped pairs: use an even number")
        return v

    @field_validator("opponents")
    @classmethod
    def _known_opponents(cls, v: list[str]) -> list[str]:
        for spec in v:
            kind, _, arg = spec.partition(":")
            if kind in ("gnugo", "pachi", "mcts", "gen") and not arg.isdigit():
                raise ValueError(f"opponent {spec!r}: {kind}: takes a whole number")
            if kind not in ("gnugo", "pachi", "mcts", "gen", "random") and not spec.endswith(".pt"):
                raise ValueError(f"opponent {spec!r} is not gnugo:<level>, pachi:<playouts>, mcts:<rollouts>, "
                                 f"gen:<g>, random or a .pt file")
        return v


class Params(_Section):
    """The whole params file."""

    game: GameConfig = GameConfig()
    network: NetworkConfig = NetworkConfig()
    mcts: MCTSConfig = MCTSConfig()
    selfplay: SelfPlayConfig = SelfPlayConfig()
    train: TrainConfig = TrainConfig()
    gate: GateConfig = GateConfig()
    pipeline: PipelineConfig = PipelineConfig()
    ladder: LadderConfig = LadderConfig()

    @model_validator(mode="after")
    def _switches_agree(self) -> "Params":
        if self.mcts.root == "gumbel" and self.selfplay.full_search_share < 1:
            raise ValueError("mcts.root, selfplay.full_search_share: Gumbel search gives every move its own "
                             "budget; playout cap randomization (full_search_share < 1) needs mcts.root: puct")
        if self.mcts.root == "gumbel" and self.selfplay.decided_visits:
            raise ValueError("mcts.root, selfplay.decided_visits: Gumbel search gives every move its own budget; "
                             "decided games played out at fewer visits need mcts.root: puct")
        if self.train.value_q_weight > 0 and not self.selfplay.root_values:
            raise ValueError("train.value_q_weight needs selfplay.root_values: true (the self-play search's root "
                             "values are the q it mixes into the value target)")
        return self

    @model_validator(mode="after")
    def _fits_in_memory(self) -> "Params":
        planes, points, actions = board_shape(self.game)
        net = self.network
        size = 4 * network_parameters(planes, 1, points, actions, **net.parameter_sizes())
        if size > MAX_NETWORK_BYTES:
            raise ValueError(
                f"network.size: {net.size} on {self.game.tag} needs {size / 2**30:.1f} GiB of weights, "
                f"more than the {MAX_NETWORK_BYTES / 2**30:.0f} GiB limit"
            )
        sp, gate = self.selfplay, self.gate
        for section, at_once, visits, players in (
            ("selfplay", min(sp.concurrent_games, sp.games_per_shard), sp.visits, 1),
            ("gate", min(gate.concurrent_games, gate.games), gate.visits, 2),
        ):
            need = tree_bytes(self.game, at_once, visits, players)
            if need > MAX_TREE_BYTES:
                raise ValueError(
                    f"{section}.visits, {section}.concurrent_games: {at_once} games at once with {visits} visits "
                    f"on {self.game.tag} need {need / 2**30:.1f} GiB of search trees, more than the "
                    f"{MAX_TREE_BYTES / 2**30:.0f} GiB limit"
                )
        return self

    def digest(self) -> str:
        """sha256 of the canonical JSON of every value: the params hash.

        Recipe switches at their off value are not in the dump (_Section), so
        adding one keeps the hash of every earlier params file.
        """
        text = json.dumps(self.model_dump(mode="json"), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()


def describe_errors(err: ValidationError, source: str, what: str = "invalid parameters") -> str:
    """A pydantic validation error as `source: what` and one line per field: what was wrong where."""
    lines = [f"{source}: {what}"]
    for e in err.errors():
        field = ".".join(str(p) for p in e["loc"])
        msg = "unknown key" if e["type"] == "extra_forbidden" else e["msg"].removeprefix("Value error, ")
        lines.append(f"  {field}: {msg}" if field else f"  {msg}")
    return "\n".join(lines)


def parse_override(text: str) -> tuple[list[str], Any]:
    """Split `section.key=value` into a key path and a YAML-parsed value."""
    if "=" not in text:
        raise ConfigError(f"override {text!r} is not of the form section.key=value")
    key, raw = text.split("=", 1)
    path = [p for p in key.strip().split(".") if p]
    if not path:
        raise ConfigError(f"override {text!r} names no field")
    try:
        value = read_yaml(raw)
    except yaml.YAMLError as e:
        raise ConfigError(f"override {text!r}: value is not valid YAML ({e})") from None
    return path, value


def apply_overrides(data: dict, overrides: list[str]) -> dict:
    """Return a copy of the raw params dict with `section.key=value` overrides set."""
    data = copy.deepcopy(data)
    for text in overrides:
        path, value = parse_override(text)
        node = data
        for p in path[:-1]:
            child = node.setdefault(p, {})
            if not isinstance(child, dict):
                raise ConfigError(f"override {text!r}: {p} is not a section")
            node = child
        node[path[-1]] = value
    return data


def params_from_dict(data: dict | None, overrides: list[str] | None = None, source: str = "params") -> Params:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: top level must be a mapping of sections, got {type(data).__name__}")
    data = apply_overrides(data, overrides or [])
    try:
        return Params.model_validate(data)
    except ValidationError as e:
        raise ConfigError(describe_errors(e, source)) from None


def load_params(path: str | Path | None = "params.yaml", overrides: list[str] | None = None) -> Params:
    """Read a params file (or the defaults when `path` is None) and apply overrides."""
    if path is None:
        return params_from_dict({}, overrides, "defaults")
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"{path}: cannot read params file ({e.strerror})") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a params file (not UTF-8 text)") from None
    try:
        data = read_yaml(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML ({e})") from None
    return params_from_dict(data, overrides, str(path))


def load_params_here(path: str | Path | None, overrides: list[str] | None = None) -> Params:
    """load_params for a command's `--params`: `path`, else ./params.yaml where there is one, else the defaults."""
    if path is None and Path("params.yaml").is_file():
        path = "params.yaml"
    return load_params(path, overrides)
