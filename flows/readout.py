"""How well networks read the same positions: each network's losses on the positions of the shards given, and,
for Go networks with ownership heads, how many of the stones on the board that go on to die it sees dying.

Two lines from one champion (the campaign and an arm) are compared on positions neither trained on: a shard
played by their common ancestor, or by a third network, or a ladder's games against an outside engine made a shard
by `zero sgf shard` (zero.sgf_shard). Shards of played-out games (`selfplay.decided_visits`) carry ownership
targets for every position; resigned games carry none and count only in the losses.

    python -m flows.readout docs/recipes/go-9-decided/d8.npz --model z-683=/work/campaign/gens/go-9/g0030/candidate.pt \
        --model decided-683=/work/arm2/gens/go-9/g0003/candidate.pt --json readout.json

Per network (in eval mode, float32, no symmetries): the positions, the policy, value, ownership and score losses
(`zero.losses.evaluate`, the held-out losses of training) and the stones' reading (`zero.losses.positions_read`).
`--pair A:B` (repeatable) sets two of the networks side by side: the difference A - B in value loss and in the
share of dying stones read, each with a 95% interval from resampling the games (positions of one game are not
independent draws, so the games are the unit): a difference whose interval holds 0 is one the positions cannot
tell from none.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

from zero.losses import evaluate, positions_read, reading_shares
from zero.network import CheckpointError, load_checkpoint
from zero.shards import ShardError
from zero.train_data import WindowError, load_window

MAX_POSITIONS = 10_000_000
BATCH = 256
RESAMPLES = 2000  # bootstrap draws of the games for a pair's intervals


class ReadoutError(ValueError):
    """A model spec, checkpoint or shard that cannot be read, or a network that does not fit the shards."""


def readout(shards: list[Path], models: dict[str, Path], pairs: list[tuple[str, str]] = ()) -> dict:
    """Each model's losses and stone reading on every position of `shards` (oldest first), and for each pair of
    model names (a, b) the differences a - b with their intervals over the games (`paired`)."""
    for a, b in pairs:
        for name in (a, b):
            if name not in models:
                raise ReadoutError(f"--pair {a}:{b}: no --model named {name!r} (models: {', '.join(models)})")
    try:
        window = load_window(shards, MAX_POSITIONS)
    except (ShardError, WindowError) as e:
        raise ReadoutError(str(e)) from None
    index = np.arange(len(window))
    out = {"shards": [str(s) for s in shards], "positions": len(window),
           "positions_with_ownership": int(window.aux_mask.sum()) if window.aux_mask is not None else 0,
           "models": {}}
    device = torch.device("cpu")
    games = _games(window) if pairs else None
    per_game = {}
    for name, path in models.items():
        try:
            net, _ = load_checkpoint(path, device)
        except CheckpointError as e:
            raise ReadoutError(f"{name}: {e}") from None
        c = net.config
        if (c.in_planes, c.height, c.width) != window.plane_shape or c.num_actions != window.num_actions:
            raise ReadoutError(f"{name} ({path}): a network of {c.in_planes} planes on {c.height}x{c.width} does "
                               f"not read these shards' positions ({window.plane_shape[0]} planes on "
                               f"{window.plane_shape[1]}x{window.plane_shape[2]})")
        aux = bool(c.aux_heads and window.aux_mask is not None and window.aux_mask.any())
        result = {"checkpoint": str(path), **evaluate(net, window, index, BATCH, device, aux)}
        read = positions_read(net, window, index, BATCH, device, use_aux=aux)
        if aux:
            result.update(reading_shares(read))
        out["models"][name] = result
        if pairs:
            error = (window.value.astype(np.float64) - read["value"]) ** 2
            per_game[name] = {"value_se": np.bincount(games, error), "dead": np.bincount(games, read["dead"]),
                              "dead_read": np.bincount(games, read["dead_read"]), "aux": aux}
    if pairs:
        out["games"] = int(games.max()) + 1
        out["pairs"] = [paired(a, b, per_game[a], per_game[b], np.bincount(games)) for a, b in pairs]
    return out


def _games(window) -> np.ndarray:
    """[N] int: each position's game, numbered over the window (a shard's game_index within each shard)."""
    if window.game_index is None:
        raise ReadoutError("these shards do not say which game each position is from")
    key = window.shard_number().astype(np.int64) * (int(window.game_index.max()) + 1) + window.game_index
    return np.unique(key, return_inverse=True)[1].reshape(-1)


def paired(a: str, b: str, ga: dict, gb: dict, positions: np.ndarray, seed: int = 0) -> dict:
    """a - b in value loss and in the share of dying stones read, over every game and over RESAMPLES draws of
    the games with replacement (the 2.5th and 97.5th percentiles: the 95% interval)."""
    draws = np.random.default_rng(seed).integers(0, len(positions), (RESAMPLES, len(positions)))
    weights = np.stack([np.bincount(d, minlength=len(positions)) for d in draws]).astype(np.float64)

    def diff(num_a, num_b, den) -> dict:
        point = float((num_a - num_b).sum() / den.sum())
        spread = weights @ (num_a - num_b) / np.maximum(weights @ den, 1)
        low, high = np.percentile(spread, [2.5, 97.5])
        return {"difference": point, "low": float(low), "high": float(high)}

    row = {"a": a, "b": b, "value_loss": diff(ga["value_se"], gb["value_se"], positions.astype(np.float64))}
    if ga["aux"] and gb["aux"] and ga["dead"].sum():
        row["dead_read"] = diff(ga["dead_read"].astype(np.float64), gb["dead_read"].astype(np.float64),
                                ga["dead"].astype(np.float64))
    return row


def table(result: dict) -> str:
    """The readout as a markdown table, one row a network."""
    md = [f"{result['positions']:,} positions ({result['positions_with_ownership']:,} with ownership targets) of "
          f"{len(result['shards'])} shard(s)", "",
          "| network | policy loss | value loss | ownership loss | score loss | dead stones read | live stones read |",
          "|---|---|---|---|---|---|---|"]

    def share(r: dict, key: str, count: str) -> str:
        return f"{r[key]:.1%} of {r[count]:,}" if r.get(key) is not None else ""

    for name, r in result["models"].items():
        aux = [f"{r[k]:.4f}" if k in r else "" for k in ("ownership_loss", "score_loss")]
        md.append(f"| {name} | {r['policy_loss']:.4f} | {r['value_loss']:.4f} | {aux[0]} | {aux[1]} | "
                  f"{share(r, 'dead_read', 'dead_stones')} | {share(r, 'live_read', 'live_stones')} |")
    if result.get("pairs"):
        md += ["", f"Differences over the {result['games']:,} games (95% intervals from {RESAMPLES:,} draws of "
                   "them):", "",
               "| a - b | value loss | dead stones read |", "|---|---|---|"]
        for row in result["pairs"]:
            v, d = row["value_loss"], row.get("dead_read")
            dead = (f"{d['difference'] * 100:+.1f} points [{d['low'] * 100:+.1f}, {d['high'] * 100:+.1f}]"
                    if d else "")
            md.append(f"| {row['a']} - {row['b']} | {v['difference']:+.4f} [{v['low']:+.4f}, {v['high']:+.4f}] | "
                      f"{dead} |")
    return "\n".join(md) + "\n"


def parse_model(spec: str) -> tuple[str, Path]:
    name, sep, path = spec.partition("=")
    if not sep or not name or not path:
        raise ReadoutError(f"--model {spec!r}: expected NAME=CHECKPOINT")
    return name, Path(path)


def parse_pair(spec: str) -> tuple[str, str]:
    a, sep, b = spec.partition(":")
    if not sep or not a or not b:
        raise ReadoutError(f"--pair {spec!r}: expected A:B, two --model names")
    return a, b


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m flows.readout", description=__doc__.split("\n\n")[0])
    ap.add_argument("shards", nargs="+", type=Path, help="self-play shards (.npz), or shards of SGF games (`zero sgf "
                                                          "shard`), oldest first")
    ap.add_argument("--model", action="append", required=True, metavar="NAME=CHECKPOINT",
                    help="a network to read them with; repeatable")
    ap.add_argument("--pair", action="append", default=[], metavar="A:B",
                    help="two of the networks side by side: A - B with 95%% intervals over the games; repeatable")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args(argv)
    try:
        models = dict(parse_model(m) for m in args.model)
        result = readout(args.shards, models, [parse_pair(p) for p in args.pair])
    except ReadoutError as e:
        print(f"readout: {e}", file=sys.stderr)
        return 2
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    print(table(result), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
