"""How well networks read the same positions: each network's losses on the positions of the shards given, and,
for Go networks with ownership heads, how many of the stones on the board that go on to die it sees dying.

Two lines from one champion (the campaign and an arm) are compared on positions neither trained on: a shard
played by their common ancestor, or by a third network, or a ladder's games against an outside engine made a shard
by `zero sgf shard` (zero.sgf_shard). Shards of played-out games (`selfplay.decided_visits`) carry ownership
targets for every position; resigned games carry none and count only in the losses.

    python -m flows.readout docs/recipes/go-9-decided/d8.npz --model z-683=/work/campaign/gens/go-9/g0030/candidate.pt \
        --model decided-683=/work/arm2/gens/go-9/g0003/candidate.pt --json readout.json

Per network (in eval mode, float32, no symmetries): the positions, the policy, value, ownership and score losses
(`zero.losses.evaluate`, the held-out losses of training) and the stones' reading (`zero.losses.stone_reading`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

from zero.losses import evaluate, stone_reading
from zero.network import CheckpointError, load_checkpoint
from zero.shards import ShardError
from zero.train_data import WindowError, load_window

MAX_POSITIONS = 10_000_000
BATCH = 256


class ReadoutError(ValueError):
    """A model spec, checkpoint or shard that cannot be read, or a network that does not fit the shards."""


def readout(shards: list[Path], models: dict[str, Path]) -> dict:
    """Each model's losses and stone reading on every position of `shards` (oldest first)."""
    try:
        window = load_window(shards, MAX_POSITIONS)
    except (ShardError, WindowError) as e:
        raise ReadoutError(str(e)) from None
    index = np.arange(len(window))
    out = {"shards": [str(s) for s in shards], "positions": len(window),
           "positions_with_ownership": int(window.aux_mask.sum()) if window.aux_mask is not None else 0,
           "models": {}}
    device = torch.device("cpu")
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
        if aux:
            result.update(stone_reading(net, window, index, BATCH, device))
        out["models"][name] = result
    return out


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
    return "\n".join(md) + "\n"


def parse_model(spec: str) -> tuple[str, Path]:
    name, sep, path = spec.partition("=")
    if not sep or not name or not path:
        raise ReadoutError(f"--model {spec!r}: expected NAME=CHECKPOINT")
    return name, Path(path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m flows.readout", description=__doc__.split("\n\n")[0])
    ap.add_argument("shards", nargs="+", type=Path, help="self-play shards (.npz), oldest first")
    ap.add_argument("--model", action="append", required=True, metavar="NAME=CHECKPOINT",
                    help="a network to read them with; repeatable")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args(argv)
    try:
        models = dict(parse_model(m) for m in args.model)
        result = readout(args.shards, models)
    except ReadoutError as e:
        print(f"readout: {e}", file=sys.stderr)
        return 2
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    print(table(result), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
