"""Self-play shards: many games in one compact, verifiable `.npz` file.

Per position: the input planes bit-packed, the search's visit distribution
and the game's result z from the side to move's view. Per game: the moves,
the seed, the result and how it ended. A JSON header carries the format
version, the game, the shapes and the config. Shards are written with fixed
zip timestamps so that the same content gives the same bytes, to a temp
name and then renamed, and read back with `allow_pickle=False`.

Go shards may also carry the auxiliary targets of `zero.targets` (KataGo's
ownership and score, Wu 2019): per position the final ownership of each point
and the final score from the side to move's view, and a mask saying which
positions have them (those of played-out games). The three arrays are written
together or not at all; a shard without them is written byte for byte as
before and trains without auxiliary targets.

With selfplay.root_values a shard also keeps `root_value`: per position the
self-play search's root value by the value head (side to move's view), the q
that train.value_q_weight mixes into the value target. A shard without it is
written as before.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from zero.fileio import atomic_write

SHARD_FORMAT = "zero-shard-v1"
_FIXED_TIME = (1980, 1, 1, 0, 0, 0)


class ShardError(ValueError):
    """A shard file that is missing, corrupt or inconsistent."""


@dataclass
class Shard:
    """The arrays of one shard. P positions, G games, A actions, planes [C, H, W]."""

    planes: np.ndarray  # [P, ceil(C*H*W/8)] uint8, bit-packed 0/1 input planes
    policy: np.ndarray  # [P, A] float16, visit distribution at the root (sums to 1)
    value: np.ndarray  # [P] int8, game result from the side to move's view
    game_index: np.ndarray  # [P] int32, which game of the shard the position is from
    moves: np.ndarray  # [G, max_moves] int16, actions played, -1 after the end
    length: np.ndarray  # [G] int32, moves in each game
    seed: np.ndarray  # [G] int64, per-game seed
    result: np.ndarray  # [G] int8, black's view: +1, -1, 0
    resigned: np.ndarray  # [G] bool, the game ended by resignation
    no_resign: np.ndarray  # [G] bool, played out with resignation off (calibration game)
    resign_value: np.ndarray  # [G, 2] float32, lowest resignation statistic of black, white over the game
    header: dict  # format, game tag, plane shape, num_actions, config, seed
    ownership: np.ndarray | None = None  # [P, H*W] int8, final owner of each point, side to move's view (+1/-1/0)
    score: np.ndarray | None = None  # [P] float32, final Tromp-Taylor score, side to move's view, komi included
    aux_mask: np.ndarray | None = None  # [P] bool, the position carries ownership and score targets
    root_value: np.ndarray | None = None  # [P] float32, the search's root value (value head), side to move's view
    decided_at: np.ndarray | None = None  # [G] int16, selfplay.decided_visits: the move at which the side to move
    #                                       would have resigned and the game was played out instead (-1: never)

    @property
    def has_aux(self) -> bool:
        return self.aux_mask is not None

    @property
    def plane_shape(self) -> tuple[int, int, int]:
        return tuple(self.header["plane_shape"])

    def unpacked_planes(self) -> np.ndarray:
        """[n, C, H, W] float32 planes of all the shard's positions."""
        c, h, w = self.plane_shape
        bits = np.unpackbits(self.planes, axis=1, count=c * h * w)
        return bits.reshape(-1, c, h, w).astype(np.float32)


_ARRAYS = {
    "planes": np.uint8,
    "policy": np.float16,
    "value": np.int8,
    "game_index": np.int32,
    "moves": np.int16,
    "length": np.int32,
    "seed": np.int64,
    "result": np.int8,
    "resigned": np.bool_,
    "no_resign": np.bool_,
    "resign_value": np.float32,
}
AUX_ARRAYS = {"ownership": np.int8, "score": np.float32, "aux_mask": np.bool_}  # optional, all or none
OPTIONAL_ARRAYS = {"root_value": np.float32, "decided_at": np.int16}  # optional, each on its own


def pack_planes(planes: np.ndarray) -> np.ndarray:
    """[n, C, H, W] 0/1 planes (uint8 or float) -> [n, ceil(C*H*W/8)] uint8."""
    flat = planes.reshape(planes.shape[0], -1).astype(np.uint8, copy=False)
    return np.packbits(flat, axis=1)


def padded_moves(games: list[list[int]]) -> np.ndarray:
    """Each game's actions as a shard's `moves`: [G, the longest game's moves] int16, -1 after a game's end."""
    moves = np.full((len(games), max([len(m) for m in games] + [1])), -1, np.int16)
    for g, actions in enumerate(games):
        moves[g, : len(actions)] = actions
    return moves


def _npy_bytes(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.ascontiguousarray(arr), allow_pickle=False)
    return buf.getvalue()


def write_shard(path: str | Path, shard: Shard) -> str:
    """Write `shard` to `path` atomically; return its sha256."""
    members = [("header.npy", _npy_bytes(np.frombuffer(json.dumps(shard.header, sort_keys=True).encode(), np.uint8)))]
    present = [name for name in AUX_ARRAYS if getattr(shard, name) is not None]
    if present and len(present) != len(AUX_ARRAYS):
        raise ShardError(f"{path}: auxiliary targets need all of {', '.join(AUX_ARRAYS)}, "
                         f"got only {', '.join(present)}")
    arrays = {**_ARRAYS, **(AUX_ARRAYS if present else {}),
              **{name: dtype for name, dtype in OPTIONAL_ARRAYS.items() if getattr(shard, name) is not None}}
    for name, dtype in arrays.items():
        members.append((f"{name}.npy", _npy_bytes(np.asarray(getattr(shard, name), dtype=dtype))))
    with atomic_write(path) as f:
        with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for name, data in members:
                info = zipfile.ZipInfo(name, date_time=_FIXED_TIME)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                zf.writestr(info, data, compresslevel=6)
    return file_sha256(path)


def file_sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_shard(path: str | Path) -> Shard:
    """Load and check a shard; ShardError naming the file and what is wrong."""
    path = Path(path)
    if not path.is_file():
        raise ShardError(f"{path}: no such shard file")
    try:
        with np.load(path, allow_pickle=False) as z:
            names = set(z.files)
            missing = {"header", *_ARRAYS} - names
            if missing:
                raise ShardError(f"{path}: not a zero shard (missing {', '.join(sorted(missing))})")
            header = json.loads(bytes(z["header"]).decode())
            aux = [name for name in AUX_ARRAYS if name in names]
            if aux and len(aux) != len(AUX_ARRAYS):
                raise ShardError(f"{path}: inconsistent shard: auxiliary targets {', '.join(aux)} without "
                                 f"{', '.join(sorted(set(AUX_ARRAYS) - set(aux)))}")
            arrays = {name: z[name] for name in [*_ARRAYS, *aux, *(set(OPTIONAL_ARRAYS) & names)]}
    except ShardError:
        raise
    except Exception as e:  # bad zip, truncated member, bad JSON
        raise ShardError(f"{path}: corrupt shard ({type(e).__name__}: {str(e)[:200]})") from None
    if header.get("format") != SHARD_FORMAT:
        raise ShardError(f"{path}: unknown shard format {header.get('format')!r}, expected {SHARD_FORMAT!r}")
    shard = Shard(header=header, **arrays)
    _check(path, shard)
    return shard


def _check(path: Path, s: Shard) -> None:
    p, g = len(s.value), len(s.length)
    c, h, w = s.plane_shape
    a = s.header["num_actions"]
    problems = []
    if s.planes.shape != (p, (c * h * w + 7) // 8):
        problems.append(f"planes shape {s.planes.shape}")
    if s.policy.shape != (p, a):
        problems.append(f"policy shape {s.policy.shape}")
    if s.game_index.shape != (p,) or (p and (s.game_index.min() < 0 or s.game_index.max() >= g)):
        problems.append("game_index out of range")
    if s.resign_value.shape != (g, 2):
        problems.append(f"resign_value shape {s.resign_value.shape}")
    for name in ("seed", "result", "resigned", "no_resign"):
        if getattr(s, name).shape != (g,):
            problems.append(f"{name} shape {getattr(s, name).shape}")
    if s.moves.ndim != 2 or s.moves.shape[0] != g:
        problems.append(f"moves shape {s.moves.shape}")
    if p and not np.allclose(s.policy.astype(np.float32).sum(axis=1), 1.0, atol=1e-2):
        problems.append("policy rows do not sum to 1")
    if s.has_aux:
        for name, dtype in AUX_ARRAYS.items():
            if getattr(s, name).dtype != dtype:
                problems.append(f"{name} dtype {getattr(s, name).dtype}")
        if s.ownership.shape != (p, h * w):
            problems.append(f"ownership shape {s.ownership.shape}")
        elif p and np.abs(s.ownership.astype(np.int16)).max() > 1:
            problems.append("ownership values outside -1, 0, 1")
        if s.score.shape != (p,):
            problems.append(f"score shape {s.score.shape}")
        elif not np.isfinite(s.score).all():
            problems.append("score holds NaN or infinite values")
        if s.aux_mask.shape != (p,):
            problems.append(f"aux_mask shape {s.aux_mask.shape}")
    if s.root_value is not None:
        if s.root_value.dtype != np.float32 or s.root_value.shape != (p,):
            problems.append(f"root_value {s.root_value.dtype} shape {s.root_value.shape}")
        elif p and not (np.abs(s.root_value) <= 1.0).all():
            problems.append("root_value outside [-1, 1] (or NaN)")
    if s.decided_at is not None:
        if s.decided_at.dtype != np.int16 or s.decided_at.shape != (g,):
            problems.append(f"decided_at {s.decided_at.dtype} shape {s.decided_at.shape}")
        elif g and ((s.decided_at < -1).any() or (s.decided_at >= s.length).any()):
            problems.append("decided_at outside -1 .. a game's length - 1")
    if problems:
        raise ShardError(f"{path}: inconsistent shard: {'; '.join(problems)}")


def shard_summary(shard: Shard) -> dict:
    """Counts that describe a shard's games: a pure function of its content."""
    return {
        "games": int(len(shard.length)),
        "positions": int(len(shard.value)),
        "resigned": int(shard.resigned.sum()),
        "calibration_games": int(shard.no_resign.sum()),
        "black_wins": int((shard.result > 0).sum()),
        "white_wins": int((shard.result < 0).sum()),
        "draws": int((shard.result == 0).sum()),
        "moves": int(shard.length.sum()),
        **({"aux_positions": int(shard.aux_mask.sum())} if shard.has_aux else {}),
        **(decided_summary(shard) if shard.decided_at is not None else {}),
    }


def decided_summary(shard: Shard) -> dict:
    """Decided games (selfplay.decided_visits) and how many of them the side that would have resigned went on
    to win (moves alternate, so the mover at move n is black for even n): resignations' false positives."""
    decided = shard.decided_at >= 0
    would_resign = np.where(shard.decided_at % 2 == 0, 1, -1)
    return {"decided": int(decided.sum()), "decided_reversed": int((decided & (shard.result == would_resign)).sum())}


def verify_shard(path: str | Path) -> bool:
    """True if `path` is a complete, readable shard."""
    try:
        read_shard(path)
    except ShardError:
        return False
    return True
