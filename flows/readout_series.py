"""Readout pairs of many generations side by side. `python -m flows.readout ... --pair A:B` run once a generation
(an arm's network against the campaign's of the same generation) gives that generation's differences, with
intervals that resample the games but not the training: one generation of a line to the next moves the figures as
much. This sets the pairs of the readouts given in one table, a row per pair and band of stones on the board, with
the mean over the pairs and its 95% interval from resampling the pairs (the training's noise as the generations
show it; consecutive generations share their ancestry, so the interval is a floor, not a test), and how many pairs
lean each way:

    python -m flows.readout_series pair-681.json pair-682.json ... --out DIR    # DIR/series.json, .md, .png
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from flows.plots import agg_pyplot
from flows.readout import RESAMPLES, difference_text
from zero.fileio import atomic_savefig, atomic_write_text

METRICS = (("value_loss", "value loss", 1.0, ""), ("dead_read", "dead stones read", 100.0, " points"))


class SeriesError(ValueError):
    """A readout file that cannot be read, holds no pair, or splits the stones into other bands."""


def pair_rows(paths: list[Path]) -> tuple[list[str], list[dict]]:
    """(the bands of stones, every pair of the readouts in order: {name, source, all, <band>...}, each band
    {value_loss, dead_read} as the readout gives them)."""
    bands, rows = None, []
    for path in paths:
        try:
            result = json.loads(path.read_text())
            pairs, own_bands = result["pairs"], result["stone_bands"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise SeriesError(f"{path}: not a readout with pairs (`flows.readout --pair ... --json`): {e}") from None
        if bands is None:
            bands = own_bands
        elif own_bands != bands:
            raise SeriesError(f"{path}: its bands of stones ({', '.join(own_bands)}) are not the others' "
                              f"({', '.join(bands)}): run every readout with the same --stones")
        for pair in pairs:
            row = {"name": f"{pair['a']} - {pair['b']}", "source": str(path), "all": pair}
            row.update({band["stones"]: band for band in pair["by_stones"]})
            rows.append(row)
    if not rows:
        raise SeriesError("no pairs in " + ", ".join(map(str, paths)))
    return bands, rows


def over_pairs(values: list[float], seed: int = 0) -> dict:
    """The mean of the pairs' differences, its 95% interval from RESAMPLES draws of the pairs (None for one pair),
    and how many are above and below 0."""
    x = np.asarray(values, np.float64)
    out = {"pairs": len(x), "mean": float(x.mean()), "low": None, "high": None,
           "above": int((x > 0).sum()), "below": int((x < 0).sum())}
    if len(x) > 1:
        draws = np.random.default_rng(seed).integers(0, len(x), (RESAMPLES, len(x)))
        out["low"], out["high"] = (float(v) for v in np.percentile(x[draws].mean(axis=1), [2.5, 97.5]))
    return out


def series(paths: list[Path]) -> dict:
    bands, rows = pair_rows(paths)
    summary = {}
    for band in ["all", *bands]:
        for key, *_ in METRICS:
            values = [row[band][key]["difference"] for row in rows if row[band].get(key)]
            if values:
                summary.setdefault(band, {})[key] = over_pairs(values)
    return {"readouts": [str(p) for p in paths], "stone_bands": bands, "pairs": rows, "over_pairs": summary}


def markdown(result: dict) -> str:
    md = [f"{len(result['pairs'])} readout pairs (a - b; each with its 95% interval over the games), then their "
          f"mean over the pairs with its 95% interval from {RESAMPLES:,} draws of the pairs:", "",
          "| a - b | stones | positions | value loss | dead stones read |", "|---|---|---|---|---|"]
    for band in ["all", *result["stone_bands"]]:
        for row in result["pairs"]:
            b = row[band]
            md.append(f"| {row['name']} | {band} | {b['positions']:,} | "
                      f"{difference_text(b.get('value_loss'), '{:+.4f}')} | "
                      f"{difference_text(b.get('dead_read'), '{:+.1f}', 100, ' points')} |")
    md += ["", "| stones | value loss: mean of the pairs | pairs below 0 / above | dead stones read: mean of the pairs "
               "| pairs above 0 / below |", "|---|---|---|---|---|"]
    for band, figures in result["over_pairs"].items():
        cells = []
        for key, _, scale, unit in METRICS:
            s = figures.get(key)
            if s is None:
                cells += ["", ""]
                continue
            form = "{:+.1f}" if scale > 1 else "{:+.4f}"
            mean = (form.format(s["mean"] * scale) + unit if s["low"] is None else
                    difference_text({"difference": s["mean"], "low": s["low"], "high": s["high"]}, form, scale, unit))
            counts = (s["below"], s["above"]) if key == "value_loss" else (s["above"], s["below"])
            cells += [mean, f"{counts[0]} / {counts[1]} of {s['pairs']}"]
        md.append(f"| {band} | " + " | ".join(cells) + " |")
    return "\n".join(md) + "\n"


def plot(result: dict, out: Path) -> Path:
    """series.png: each pair's differences with their intervals over the games, a line per band of stones."""
    plt = agg_pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    x = np.arange(len(result["pairs"]))
    bands = ["all", *result["stone_bands"]]
    for ax, (key, label, scale, unit) in zip(axes, METRICS):
        for i, band in enumerate(bands):
            shift = (i - (len(bands) - 1) / 2) * 0.12
            points = [(j, row[band][key]) for j, row in enumerate(result["pairs"]) if row[band].get(key)]
            if not points:
                continue
            xs = np.array([j for j, _ in points]) + shift
            ys = np.array([d["difference"] for _, d in points]) * scale
            err = np.array([[d["difference"] - d["low"], d["high"] - d["difference"]] for _, d in points]).T * scale
            ax.errorbar(xs, ys, yerr=err, fmt="o" + ("-" if band == "all" else ""), capsize=2, color=f"C{i}",
                        label=f"stones {band}" if band != "all" else "all positions", alpha=1 if band == "all" else 0.6)
        ax.axhline(0, color="grey", lw=1, ls="--")
        ax.set_xticks(x, [row["name"].split(" - ")[0] for row in result["pairs"]], rotation=60, fontsize=7)
        ax.set_ylabel(f"a - b, {label}{unit}")
        ax.grid(alpha=0.3)
        ax.legend(loc="best", fontsize=7)
    axes[0].set_title("value loss (below 0: a judges the outcomes better)", fontsize=9)
    axes[1].set_title("dying stones read (above 0: a sees more of them dying)", fontsize=9)
    fig.tight_layout()
    return atomic_savefig(fig, out / "series.png", dpi=110)


def run(paths: list[Path], out: Path) -> dict:
    result = series(paths)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "series.json", json.dumps(result, indent=1) + "\n")
    atomic_write_text(out / "series.md", markdown(result))
    plot(result, out)
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m flows.readout_series", description=__doc__.split("\n\n")[0])
    ap.add_argument("readouts", nargs="+", type=Path, help="`flows.readout --pair ... --json` files, in order")
    ap.add_argument("--out", type=Path, required=True, help="the directory for series.json, .md and .png")
    args = ap.parse_args(argv)
    try:
        result = run(args.readouts, args.out)
    except SeriesError as e:
        print(f"flows.readout_series: {e}", file=sys.stderr)
        return 2
    print(markdown(result), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
