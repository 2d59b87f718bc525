"""How well networks read the same positions: each network's losses on the positions of the shards given, and,
for Go networks with ownership heads, how many of the stones on the board that go on to die it sees dying.

Two lines from one champion (the campaign and an arm) are compared on positions neither trained on: a shard
played by their common ancestor, or by a third network, or a ladder's games against an outside engine made a shard
by `zero sgf shard` (zero.sgf_shard). Shards of played-out games (`selfplay.decided_visits`) carry ownership
targets for every position; resigned games carry none and count only in the losses.

    python -m flows.readout docs/recipes/go-9-decided/positions-g680.npz \
        --model z-683=CAMPAIGN/gens/go-9/g0030/candidate.pt --model decided-683=ARM/gens/go-9/g0003/candidate.pt \
        --pair decided-683:z-683 --json readout.json

Per network, in one pass over the positions (eval mode, float32, no symmetries; `zero.losses.positions_read`): the
policy, value, ownership and score losses (as `zero.losses.evaluate` takes the held-out losses of training) and
the stones' reading, over all the positions and in bands of stones on the board (`--stones 20,40`, the default on
9x9: the opening, the middle game and the end, where a group's fate is open and where it is settled).
`--pair A:B` (repeatable) sets two of the networks side by side: the difference A - B in value loss and in the
share of dying stones read, over all positions and in each band, each with a 95% interval from resampling the
games (positions of one game are not independent draws, so the games are the unit): a difference whose interval
holds 0 is one the positions cannot tell from none. The pairs of many generations, side by side with their mean
over the pairs: `python -m flows.readout_series`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

from zero.cli_args import progress_for
from zero.losses import AUX_METRIC_KEYS, positions_read, reading_shares
from zero.network import CheckpointError, load_checkpoint
from zero.shards import ShardError
from zero.train_data import WindowError, load_window

MAX_POSITIONS = 10_000_000
BATCH = 256
RESAMPLES = 2000  # bootstrap draws of the games for a pair's intervals


class ReadoutError(ValueError):
    """A model spec, checkpoint or shard that cannot be read, or a network that does not fit the shards."""


def readout(shards: list[Path], models: dict[str, Path], pairs: list[tuple[str, str]] = (),
            cuts: list[int] | None = None) -> dict:
    """Each model's losses and stone reading on every position of `shards` (oldest first), over all of them and
    in bands of stones on the board split at `cuts` (default: a quarter and half the board's points), and for
    each pair of model names (a, b) the differences a - b with their intervals over the games (`paired`)."""
    for a, b in pairs:
        for name in (a, b):
            if name not in models:
                raise ReadoutError(f"--pair {a}:{b}: no --model named {name!r} (models: {', '.join(models)})")
    try:
        window = load_window(shards, MAX_POSITIONS)
    except (ShardError, WindowError) as e:
        raise ReadoutError(str(e)) from None
    _, height, width = window.plane_shape
    bands = stone_bands(height * width if cuts is None else None, cuts)
    index = np.arange(len(window))
    out = {"shards": [str(s) for s in shards], "positions": len(window),
           "positions_with_ownership": int(window.aux_mask.sum()) if window.aux_mask is not None else 0,
           "stone_bands": [label for label, _, _ in bands], "models": {}}
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
        report, tick = progress_for(-(-len(window) // BATCH), f"readout {name}", unit="batches")
        with report:
            read = positions_read(net, window, index, BATCH, device, use_aux=aux, progress=tick)
        result = {"checkpoint": str(path), **summary(read, aux)}
        result["by_stones"] = [{"stones": label, **summary(_masked(read, (read["stones"] >= low)
                                                                   & (read["stones"] < high)), aux)}
                               for label, low, high in bands]
        out["models"][name] = result
        if pairs:
            per_game[name] = [_per_game(read, games, (read["stones"] >= low) & (read["stones"] < high), aux)
                              for _, low, high in [("all", 0, np.inf), *bands]]
    if pairs:
        out["games"] = int(games.max()) + 1
        out["pairs"] = []
        for a, b in pairs:
            whole, *parts = [paired(a, b, ga, gb) for ga, gb in zip(per_game[a], per_game[b])]
            whole["by_stones"] = [{"stones": label, **{k: v for k, v in part.items() if k not in ("a", "b")}}
                                  for (label, _, _), part in zip(bands, parts)]
            out["pairs"].append(whole)
    return out


def stone_bands(points: int | None, cuts: list[int] | None = None) -> list[tuple[str, int, float]]:
    """(label, low, high) bands of stones on the board, split at `cuts` (ascending, positive), or by default at a
    quarter and half of the board's `points` (9x9: 0-19, 20-39, 40+): the opening, the middle game, the end."""
    if cuts is None:
        cuts = [points // 4, points // 2]
    if not cuts or any(c <= 0 for c in cuts) or sorted(set(cuts)) != list(cuts):
        raise ReadoutError(f"--stones {','.join(map(str, cuts))}: expected ascending positive stone counts")
    edges = [0, *cuts]
    return [(f"{lo}-{hi - 1}", lo, hi) for lo, hi in zip(edges, cuts)] + [(f"{cuts[-1]}+", cuts[-1], np.inf)]


def summary(read: dict, aux: bool) -> dict:
    """`positions_read`'s arrays as the held-out losses of training (`zero.losses.evaluate`: policy and value
    loss, the value head's spread, with `aux` the ownership and score losses over the positions that carry
    targets) and with `aux` the stones' reading (`reading_shares`)."""
    n = len(read["value"])
    result = {"positions": n}
    if not n:
        return result
    value = read["value"].astype(np.float64)
    result.update(policy_loss=float(read["policy_loss"].astype(np.float64).mean()),
                  value_loss=float(read["value_loss"].astype(np.float64).mean()), value_std=float(value.std()))
    if aux and read["aux"].any():
        counted = read["aux"]
        for key in AUX_METRIC_KEYS:
            result[key] = float(read[key][counted].astype(np.float64).mean())
        shares = reading_shares(read)
        result.update(dead_stones=shares["dead_stones"], live_stones=shares["live_stones"],
                      dead_read=shares["dead_read"], live_read=shares["live_read"])
    return result


def _masked(read: dict, mask: np.ndarray) -> dict:
    return {k: v[mask] for k, v in read.items()}


def _per_game(read: dict, games: np.ndarray, mask: np.ndarray, aux: bool) -> dict:
    """Per game, over its positions in `mask`: the positions, the value's squared errors, the dead stones and
    those read dead (the sums a pair's differences and their resamplings are taken from)."""
    count = int(games.max()) + 1

    def sums(x) -> np.ndarray:
        return np.bincount(games, np.where(mask, x, 0).astype(np.float64), minlength=count)

    return {"positions": sums(np.ones(len(games))), "value_se": sums(read["value_loss"]),
            "dead": sums(read["dead"]), "dead_read": sums(read["dead_read"]), "aux": aux}


def _games(window) -> np.ndarray:
    """[N] int: each position's game, numbered over the window (a shard's game_index within each shard)."""
    if window.game_index is None:
        raise ReadoutError("these shards do not say which game each position is from")
    key = window.shard_number().astype(np.int64) * (int(window.game_index.max()) + 1) + window.game_index
    return np.unique(key, return_inverse=True)[1].reshape(-1)


def paired(a: str, b: str, ga: dict, gb: dict, seed: int = 0) -> dict:
    """a - b in value loss and in the share of dying stones read, over every game and over RESAMPLES draws of
    the games with replacement (the 2.5th and 97.5th percentiles: the 95% interval). `ga` and `gb` are the two
    networks' per-game sums (`_per_game`) over the same positions."""
    games = len(ga["positions"])
    draws = np.random.default_rng(seed).integers(0, games, (RESAMPLES, games))
    weights = np.stack([np.bincount(d, minlength=games) for d in draws]).astype(np.float64)

    def diff(num_a, num_b, den) -> dict | None:
        if not den.sum():
            return None
        point = float((num_a - num_b).sum() / den.sum())
        spread = weights @ (num_a - num_b) / np.maximum(weights @ den, 1)
        low, high = np.percentile(spread, [2.5, 97.5])
        return {"difference": point, "low": float(low), "high": float(high)}

    row = {"a": a, "b": b, "positions": int(ga["positions"].sum()),
           "value_loss": diff(ga["value_se"], gb["value_se"], ga["positions"])}
    if ga["aux"] and gb["aux"] and ga["dead"].sum():
        row["dead_read"] = diff(ga["dead_read"], gb["dead_read"], ga["dead"])
    return row


def table(result: dict) -> str:
    """The readout as markdown tables: one row a network, then each network and pair by stones on the board."""
    md = [f"{result['positions']:,} positions ({result['positions_with_ownership']:,} with ownership targets) of "
          f"{len(result['shards'])} shard(s)", "",
          "| network | policy loss | value loss | ownership loss | score loss | dead stones read | live stones read |",
          "|---|---|---|---|---|---|---|"]

    def share(r: dict, key: str, count: str) -> str:
        return f"{r[key]:.1%} of {r[count]:,}" if r.get(key) is not None else ""

    def loss(r: dict, key: str) -> str:
        return f"{r[key]:.4f}" if key in r else ""

    for name, r in result["models"].items():
        md.append(f"| {name} | {loss(r, 'policy_loss')} | {loss(r, 'value_loss')} | {loss(r, 'ownership_loss')} | "
                  f"{loss(r, 'score_loss')} | {share(r, 'dead_read', 'dead_stones')} | "
                  f"{share(r, 'live_read', 'live_stones')} |")
    md += ["", "By stones on the board:", "",
           "| network | stones | positions | policy loss | value loss | dead stones read |",
           "|---|---|---|---|---|---|"]
    for name, r in result["models"].items():
        for band in r["by_stones"]:
            md.append(f"| {name} | {band['stones']} | {band['positions']:,} | {loss(band, 'policy_loss')} | "
                      f"{loss(band, 'value_loss')} | {share(band, 'dead_read', 'dead_stones')} |")
    if result.get("pairs"):
        md += ["", f"Differences over the {result['games']:,} games (95% intervals from {RESAMPLES:,} draws of "
                   "them):", "",
               "| a - b | stones | positions | value loss | dead stones read |", "|---|---|---|---|---|"]
        for row in result["pairs"]:
            for band in [{"stones": "all", **row}, *row["by_stones"]]:
                md.append(f"| {row['a']} - {row['b']} | {band['stones']} | {band['positions']:,} | "
                          f"{difference_text(band['value_loss'], '{:+.4f}')} | "
                          f"{difference_text(band.get('dead_read'), '{:+.1f}', 100, ' points')} |")
    return "\n".join(md) + "\n"


def difference_text(d: dict | None, form: str, scale: float = 1, unit: str = "") -> str:
    if not d:
        return ""
    low, high = (form.format(d[k] * scale) for k in ("low", "high"))
    return f"{form.format(d['difference'] * scale)}{unit} [{low}, {high}]"


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


def parse_cuts(spec: str | None) -> list[int] | None:
    if spec is None:
        return None
    try:
        return [int(c) for c in spec.split(",")]
    except ValueError:
        raise ReadoutError(f"--stones {spec!r}: expected stone counts such as 20,40") from None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m flows.readout", description=__doc__.split("\n\n")[0])
    ap.add_argument("shards", nargs="+", type=Path, help="self-play shards (.npz), or shards of SGF games (`zero sgf "
                                                          "shard`), oldest first")
    ap.add_argument("--model", action="append", required=True, metavar="NAME=CHECKPOINT",
                    help="a network to read them with; repeatable")
    ap.add_argument("--pair", action="append", default=[], metavar="A:B",
                    help="two of the networks side by side: A - B with 95%% intervals over the games; repeatable")
    ap.add_argument("--stones", metavar="N,N...", help="the bands of stones on the board are split at these counts "
                                                         "(default: a quarter and half the board's points)")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args(argv)
    try:
        models = dict(parse_model(m) for m in args.model)
        result = readout(args.shards, models, [parse_pair(p) for p in args.pair], parse_cuts(args.stones))
    except ReadoutError as e:
        print(f"readout: {e}", file=sys.stderr)
        return 2
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    print(table(result), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
