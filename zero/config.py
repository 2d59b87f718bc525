"""Run configuration: one `params.yaml`, one pydantic section per stage.

The file is read once at an entry point (the CLI or a flow) into `Params` and
passed down explicitly. Unknown keys and bad values are refused with the
field named.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator


class ConfigError(ValueError):
    """A params file or override that cannot be used; the message names the field."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GameConfig(_Section):
    """Which game and board. Go uses `size` and `komi`; Gomoku `height`, `width`, `k`."""

    name: Literal["go", "gomoku"] = "go"
    size: int = Field(9, ge=5, le=19)
    komi: float = 7.5
    height: int = Field(15, ge=3, le=25)
    width: int = Field(15, ge=3, le=25)
    k: int = Field(5, ge=3, le=9)

    @model_validator(mode="after")
    def _k_fits(self) -> "GameConfig":
        if self.name == "gomoku" and self.k > max(self.height, self.width):
            raise ValueError(f"k={self.k} does not fit a {self.height}x{self.width} board")
        return self

    @property
    def tag(self) -> str:
        """Short name used for the registry: `go-9`, `gomoku-6x6x4`."""
        if self.name == "go":
            return f"go-{self.size}"
        return f"gomoku-{self.height}x{self.width}x{self.k}"


_NET_NAME = re.compile(r"^b(\d+)c(\d+)$")


class NetworkConfig(_Section):
    """Residual trunk size by name, e.g. `b6c64` (6 blocks of 64 filters)."""

    size: str = "b6c64"
    value_hidden: int = Field(64, ge=1)

    @field_validator("size")
    @classmethod
    def _size_name(cls, v: str) -> str:
        m = _NET_NAME.match(v)
        if not m or int(m.group(1)) < 1 or int(m.group(2)) < 1:
            raise ValueError(f"network size {v!r} is not of the form b<blocks>c<filters>, e.g. b6c64")
        return v

    @property
    def blocks(self) -> int:
        return int(_NET_NAME.match(self.size).group(1))

    @property
    def filters(self) -> int:
        return int(_NET_NAME.match(self.size).group(2))


class MCTSConfig(_Section):
    """PUCT search. `dirichlet_alpha: null` scales it to the board: 0.03 * 361 / legal moves."""

    c_puct: float = Field(1.5, gt=0)
    fpu_reduction: float = Field(0.25, ge=0)
    dirichlet_alpha: float | None = Field(None, gt=0)
    dirichlet_weight: float = Field(0.25, ge=0, le=1)
    symmetries: bool = True


class SelfPlayConfig(_Section):
    games_per_shard: int = Field(64, ge=1)
    concurrent_games: int = Field(128, ge=1)
    visits: int = Field(100, ge=1)
    temperature_moves: int = Field(8, ge=0)
    resign_threshold: float = Field(-0.9, ge=-1, le=1)
    resign_playout_share: float = Field(0.1, ge=0, le=1)
    reuse_tree: bool = True
    device: str = "auto"
    threads: int = Field(0, ge=0)  # torch CPU threads; 0 = one per core


class TrainConfig(_Section):
    batch_size: int = Field(256, ge=1)
    steps: int = Field(1000, ge=1)
    learning_rate: float = Field(0.02, gt=0)
    lr_milestones: list[int] = Field(default_factory=lambda: [600, 900])
    lr_gamma: float = Field(0.1, gt=0, le=1)
    momentum: float = Field(0.9, ge=0, lt=1)
    weight_decay: float = Field(1e-4, ge=0)
    window_generations: int = Field(4, ge=1)
    max_window_positions: int = Field(500_000, ge=1)
    device: str = "auto"
    threads: int = Field(0, ge=0)  # torch CPU threads; 0 = one per core


class GateConfig(_Section):
    games: int = Field(400, ge=2)
    threshold: float = Field(0.55, gt=0, lt=1)
    visits: int = Field(100, ge=1)
    concurrent_games: int = Field(100, ge=1)
    opening_moves: int = Field(6, ge=0)
    sequential: bool = True
    device: str = "auto"
    threads: int = Field(0, ge=0)  # torch CPU threads; 0 = one per core


class PipelineConfig(_Section):
    seed: int = 0
    selfplay_shards: int = Field(4, ge=1)
    gate_shards: int = Field(4, ge=1)
    num_gpus: float = Field(0, ge=0)


class Params(_Section):
    """The whole params file."""

    game: GameConfig = GameConfig()
    network: NetworkConfig = NetworkConfig()
    mcts: MCTSConfig = MCTSConfig()
    selfplay: SelfPlayConfig = SelfPlayConfig()
    train: TrainConfig = TrainConfig()
    gate: GateConfig = GateConfig()
    pipeline: PipelineConfig = PipelineConfig()

    def digest(self) -> str:
        """sha256 of the canonical JSON of every value: the params hash."""
        text = json.dumps(self.model_dump(mode="json"), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()


def _describe(err: ValidationError, source: str) -> str:
    lines = [f"{source}: invalid parameters"]
    for e in err.errors():
        field = ".".join(str(p) for p in e["loc"]) or "(top level)"
        msg = "unknown key" if e["type"] == "extra_forbidden" else e["msg"]
        lines.append(f"  {field}: {msg}")
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
        value = yaml.safe_load(raw)
    except yaml.YAMLError as e:
        raise ConfigError(f"override {text!r}: value is not valid YAML ({e})") from None
    return path, value


def apply_overrides(data: dict, overrides: list[str]) -> dict:
    """Return a copy of the raw params dict with `section.key=value` overrides set."""
    data = json.loads(json.dumps(data))
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
        raise ConfigError(_describe(e, source)) from None


def load_params(path: str | Path | None = "params.yaml", overrides: list[str] | None = None) -> Params:
    """Read a params file (or the defaults when `path` is None) and apply overrides."""
    if path is None:
        return params_from_dict({}, overrides, "defaults")
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise ConfigError(f"{path}: cannot read params file ({e.strerror})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML ({e})") from None
    return params_from_dict(data, overrides, str(path))
