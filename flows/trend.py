"""How far a line is against the outside engines: its in-flow ladders pooled span by span, from its lineage.

    python -m flows.trend campaigns/state/go-9.json --span 15 --out docs/strength/go-9-line/trend

A campaign whose params set `ladder.every` plays its champion against the outside engines every few
generations, a few games each time (20 games against Pachi at 5,000 playouts every third generation of the
9x9 line), and its lineage keeps each generation's ladder. One such ladder says little; pooled over spans of
generations they say whether the line still gains against players that are not its own past, which its gates
(each candidate against the champion before it) cannot. Writes OUT/trend.json, OUT/trend.md (one row a
span, opponent and visits: the generations that played, the core- and GPU-hours of the line at the span's end,
the games, the score and the Elo difference with its 95% interval) and OUT/trend.png (that Elo against the
line's generation, one series an opponent).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from flows.layout import LineError, read_json
from flows.lines import outside_matches, pooled_elo_text
from flows.plots import agg_pyplot
from flows.results import compute_text, cpu_gpu_hours
from zero.fileio import atomic_savefig, atomic_write_text
from zero.stats import MatchResult, combine


class TrendError(ValueError):
    """A lineage that cannot be read as one, or a span that is not a positive number; the message says which."""


def ladder_rows(lineage: dict, path: Path) -> tuple[list[dict], int]:
    """Each generation of the lineage (numbered along the line, its runs one after the other) that played an
    in-flow ladder: its outside matches and the line's CPU core-hours and GPU-hours up to it; and the number
    of the line's last generation."""
    try:
        generations = [g for run in lineage["runs"] for g in run["generations"]]
    except (KeyError, TypeError) as e:
        raise TrendError(f"{path}: not a lineage (runs of generations: {type(e).__name__} {e})") from None
    rows, core, gpu = [], 0.0, 0.0
    for n, g in enumerate(generations, start=1):
        c, d = cpu_gpu_hours([g])
        core, gpu = core + c, gpu + d
        try:
            played = outside_matches(g)
        except (KeyError, TypeError) as e:
            raise TrendError(f"{path}: generation {n}'s ladder is torn ({type(e).__name__} {e})") from None
        if played:
            rows.append({"generation": n, "core_hours": core, "gpu_hours": gpu, "outside": played})
    return rows, len(generations)


def spans(rows: list[dict], span: int, final: int | None = None) -> list[dict]:
    """The rows' matches pooled by span of `span` generations (1-span, span+1-2·span, ..., the last cut at the
    line's `final` generation), opponent and visits (`zero.stats.combine`), in the order of the spans, each
    opponent in the order it first played."""
    if span < 1:
        raise TrendError(f"a span is a number of generations, 1 or more, not {span}")
    pooled: dict[tuple[int, str, int | None], dict] = {}
    for r in rows:
        first = (r["generation"] - 1) // span * span + 1
        last = first + span - 1 if final is None else min(first + span - 1, final)
        for m in r["outside"]:
            key = (first, m["opponent"], m["visits"])
            p = pooled.setdefault(key, {"first": first, "last": last, "opponent": m["opponent"],
                                        "visits": m["visits"], "generations": [], "results": []})
            p["generations"].append(r["generation"])
            p["results"].append(MatchResult.from_dict(m))
            p["core_hours"], p["gpu_hours"] = r["core_hours"], r["gpu_hours"]
    out = []
    for p in pooled.values():
        results = p.pop("results")
        out.append({**p, **combine(results).to_dict()})
    return out


def markdown(pooled: list[dict], lineage_path: Path, span: int) -> str:
    md = [f"The in-flow ladders of `{lineage_path.as_posix()}`, pooled over spans of {span} generations "
          "(each ladder plays the champion of its generation; Elo difference against the opponent, 95% interval):",
          "", "| generations | opponent | visits | ladders at | the line's compute at the last | games | W-L-D "
          "| score | Elo difference [95%] |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for p in pooled:
        md.append(f"| {p['first']}-{p['last']} | {p['opponent']} | {p['visits'] or ''} "
                  f"| {', '.join(map(str, p['generations']))} | {compute_text(p['core_hours'], p['gpu_hours'])} "
                  f"| {p['games']} | {p['wins']}-{p['losses']}-{p['draws']} | {p['win_rate']:.1%} | {pooled_elo_text(p)} |")
    return "\n".join(md) + "\n"


def plot(pooled: list[dict], out: Path, title: str) -> Path:
    """trend.png: each span's Elo difference against each opponent, at the span's middle generation."""
    fig, ax = agg_pyplot().subplots(figsize=(8, 4.5))
    series: dict[str, list[dict]] = {}
    for p in pooled:
        if p["elo"] is not None and p["elo_low"] is not None and p["elo_high"] is not None:
            series.setdefault(f"{p['opponent']} ({p['visits']} visits)", []).append(p)
    for i, (name, points) in enumerate(series.items()):
        x = [(p["first"] + p["last"]) / 2 for p in points]
        y = [p["elo"] for p in points]
        err = [[p["elo"] - p["elo_low"] for p in points], [p["elo_high"] - p["elo"] for p in points]]
        ax.errorbar(x, y, yerr=err, fmt="o-", capsize=3, color=f"C{i}", label=f"against {name}, 95% interval")
    ax.axhline(0, color="grey", lw=1, ls="--")
    ax.set_xlabel("generation of the line (the middle of each span)")
    ax.set_ylabel("Elo difference against the opponent")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return atomic_savefig(fig, out / "trend.png", dpi=110)


def run(lineage_path: Path, span: int, out: Path) -> list[dict]:
    """Read the lineage, pool its ladders and write trend.json, trend.md and trend.png into `out`."""
    try:
        lineage = read_json(lineage_path)
    except (LineError, OSError) as e:
        raise TrendError(str(e)) from None
    rows, final = ladder_rows(lineage, lineage_path)
    pooled = spans(rows, span, final)
    if not pooled:
        raise TrendError(f"{lineage_path}: no generation of it played an in-flow ladder (`ladder.every`)")
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "trend.json", json.dumps(
        {"lineage": lineage_path.as_posix(), "span": span, "spans": pooled}, indent=1) + "\n")
    atomic_write_text(out / "trend.md", markdown(pooled, lineage_path, span))
    plot(pooled, out, f"{lineage.get('line', lineage_path.stem)}: the in-flow ladders, {span} generations a point")
    return pooled


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m flows.trend", description=__doc__.split("\n\n")[0])
    ap.add_argument("lineage", type=Path, help="a lineage (campaigns/state/<line>.json or models/<line>.json)")
    ap.add_argument("--span", type=int, default=15, help="generations pooled into one row (default 15)")
    ap.add_argument("--out", type=Path, required=True, help="the directory for trend.json, .md and .png")
    args = ap.parse_args(argv)
    try:
        pooled = run(args.lineage, args.span, args.out)
    except TrendError as e:
        print(f"flows.trend: {e}", file=sys.stderr)
        return 2
    print(markdown(pooled, args.lineage, args.span), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
