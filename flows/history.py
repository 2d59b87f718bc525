"""A shipped line's history: each champion's Elo against the compute in its lineage, from the committed games.

A history file names the champions a line shipped (with the core-hours in their lineage when shipped), the
head-to-head matches between them (`zero match` JSON) and the ladder directories of their games against
fixed opponents (`zero ladder` pairings). One Bradley-Terry fit over all of those games (zero.ratings)
rates every champion against one anchor, so a generation that never met GNU Go is still placed through
the generations it met. Written beside the history file: `ratings.json` (the table) and `elo.png` (Elo
against core-hours, each fixed opponent a dashed line).

    python -m flows.history docs/strength/go-9-line/history.yaml

The history file (paths relative to it):

    anchor: gnugo-l1=0                  # a player and the rating it is held at
    rename: {fast-g11: g11}             # ladder names that denote a champion under another name
    champions:                          # in shipping order
      - {name: g11, core_hours: 3.46, shipped: 7dd2eb2}
      - {name: g12, core_hours: 3.90}   # no `shipped`: a candidate matched and laddered, not shipped
    matches:                            # a's wins and losses against b in `file`
      - {a: g13, b: g11, file: ../go-9-g13-vs-g11/match.json}
    ladders: [../go-9-g13-gnugo]        # every pairing between champions or fixed opponents is used
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from flows.layout import write_json
from flows.plots import agg_pyplot
from zero.fileio import atomic_savefig
from zero.ladder import is_fixed_opponent, parse_anchor
from zero.pairings import LadderError, read_pairings
from zero.ratings import Pairing, RatingError, fit_ratings


class HistoryError(ValueError):
    """A history file, or a file it names, that cannot be used; the message names which and why."""


class Champion(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    core_hours: float = Field(ge=0)
    gpu_hours: float = Field(default=0.0, ge=0)
    shipped: str = ""  # the commit that shipped it


class Match(BaseModel):
    model_config = ConfigDict(extra="forbid")
    a: str
    b: str
    file: str


class History(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str = ""
    anchor: str = "gnugo-l1=0"
    rename: dict[str, str] = {}
    champions: list[Champion] = Field(min_length=1)
    matches: list[Match] = []
    ladders: list[str] = []

    @field_validator("champions")
    @classmethod
    def _unique(cls, v: list[Champion]) -> list[Champion]:
        names = [c.name for c in v]
        if len(set(names)) != len(names):
            raise ValueError(f"a champion is named twice: {names}")
        return v


def load(path: str | Path) -> History:
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise HistoryError(f"{path}: cannot read the history file: {e}") from None
    try:
        return History.model_validate(raw if raw is not None else {})
    except ValidationError as e:
        raise HistoryError(f"{path}: {e}") from None


def _match_pairing(m: Match, base: Path, names: set[str]) -> Pairing:
    for who in (m.a, m.b):
        if who not in names:
            raise HistoryError(f"match {m.a} against {m.b}: {who!r} is not one of the champions")
    path = base / m.file
    try:
        record = json.loads(path.read_text())
        return Pairing(m.a, m.b, int(record["wins"]), int(record["losses"]), int(record.get("draws", 0)))
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise HistoryError(f"{path}: not a match result with wins and losses ({type(e).__name__}: {e})") from None


def pairings(history: History, base: Path) -> list[Pairing]:
    """Every game the history names, as pairings between champions and fixed opponents."""
    names = {c.name for c in history.champions}
    out = [_match_pairing(m, base, names) for m in history.matches]
    for ladder in history.ladders:
        try:
            records = read_pairings(base / ladder)
        except LadderError as e:
            raise HistoryError(str(e)) from None
        for r in records:
            a, b = history.rename.get(r["a"], r["a"]), history.rename.get(r["b"], r["b"])
            if all(p in names or is_fixed_opponent(p) for p in (a, b)):
                out.append(Pairing(a, b, int(r["wins"]), int(r["losses"]), int(r.get("draws", 0))))
    return out


def fit(history: History, base: Path) -> dict:
    """{"anchor", "champions": [...in shipping order, with elo/low/high/games/core_hours],
    "opponents": {name: rating}, "games"}."""
    games = pairings(history, base)
    try:
        anchor = parse_anchor(history.anchor)
    except LadderError as e:
        raise HistoryError(str(e)) from None
    try:
        ratings = fit_ratings(games, anchor=anchor)
    except RatingError as e:
        raise HistoryError(str(e)) from None
    if not ratings:
        raise HistoryError(f"the anchor {anchor[0]} played none of the games the history names")
    champions = [{"name": c.name, "core_hours": c.core_hours, "gpu_hours": c.gpu_hours, "shipped": c.shipped,
                  **(ratings[c.name].to_dict() if c.name in ratings else {"elo": None, "games": 0})}
                 for c in history.champions]
    names = {c.name for c in history.champions}
    opponents = {n: r.to_dict() for n, r in sorted(ratings.items()) if n not in names}
    return {"anchor": {"player": anchor[0], "elo": anchor[1]}, "champions": champions,
            "opponents": opponents, "games": sum(p.games for p in games)}


def plot(fitted: dict, out: Path, title: str = "") -> Path:
    """elo.png: each champion's Elo (95% interval) against its lineage's core-hours; opponents dashed."""
    plt = agg_pyplot()
    rated = [c for c in fitted["champions"] if c["elo"] is not None]
    fig, ax = plt.subplots(figsize=(8, 5))
    for kept, style, label in ((True, {"fmt": "o-"}, "shipped champion (95% interval)"),
                               (False, {"fmt": "o", "mfc": "white"}, "matched and laddered, not shipped")):
        some = [c for c in rated if bool(c["shipped"]) == kept]
        if some:
            ax.errorbar([c["core_hours"] for c in some], [c["elo"] for c in some], capsize=3, color="C0", label=label,
                        yerr=[[c["elo"] - c["elo_low"] for c in some], [c["elo_high"] - c["elo"] for c in some]],
                        **style)
    for j, (name, r) in enumerate(sorted(fitted["opponents"].items(), key=lambda kv: kv[1]["elo"])):
        ax.axhline(r["elo"], color=f"C{j + 1}", ls="--", lw=1, label=name)
    a = fitted["anchor"]
    ax.set_xlabel("compute in the champion's lineage (core-hours; GPU-hours named where they change)")
    ax.set_ylabel(f"Elo ({a['player']} = {a['elo']:g})")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    ax.set_title(title or f"{len(rated)} champions, {fitted['games']} games", fontsize=10)
    label_points(fig, ax, rated)
    return atomic_savefig(fig, out, dpi=100, bbox_inches="tight")


def label_points(fig, ax, rated: list[dict]) -> list[str]:
    """Name the champions whose labels fit: the newest shipped first, then the newest, then those whose GPU-hours
    differ from the champion's before (the label says so), then the shipped, then the rest, newest first. A
    label goes below right of its point, else above right, else below left; where each would overlap a label
    already drawn or another champion's point, it is left out. Returns the labels drawn."""
    renderer = fig.canvas.get_renderer()
    ax.get_xlim(), ax.get_ylim()  # settle the autoscaled limits before placing text by them
    points = [ax.transData.transform((c["core_hours"], c["elo"])) for c in rated]
    gpu_change = [c["gpu_hours"] != (rated[i - 1]["gpu_hours"] if i else 0.0) for i, c in enumerate(rated)]
    texts = [c["name"] + (f" (+{c['gpu_hours']:.2f} GPU-h from here)" if change else "")
             for c, change in zip(rated, gpu_change)]
    shipped = [i for i, c in enumerate(rated) if c["shipped"]]
    first = {shipped[-1] if shipped else len(rated) - 1, len(rated) - 1}
    order = sorted(range(len(rated)), key=lambda i: (i not in first, not gpu_change[i], not rated[i]["shipped"], -i))
    placed, drawn = [], []
    for i in order:
        for offset, align in (((4, -12), "left"), ((4, 6), "left"), ((-4, -12), "right")):
            note = ax.annotate(texts[i], (rated[i]["core_hours"], rated[i]["elo"]), textcoords="offset points",
                               xytext=offset, ha=align, fontsize=8)
            box = note.get_window_extent(renderer).expanded(1.05, 1.1)
            if not (any(box.contains(x, y) for j, (x, y) in enumerate(points) if j != i)
                    or any(box.overlaps(other) for other in placed)):
                placed.append(box)
                drawn.append(texts[i])
                break
            note.remove()
    return drawn


def table_md(fitted: dict) -> str:
    a = fitted["anchor"]
    lines = [f"| champion | core-hours | GPU-hours | Elo ({a['player']} = {a['elo']:g}) [95%] | games |",
             "| --- | --- | --- | --- | --- |"]
    for c in fitted["champions"]:
        elo = "not connected" if c["elo"] is None else f"{c['elo']:+.0f} [{c['elo_low']:+.0f}, {c['elo_high']:+.0f}]"
        name = c["name"] if c["shipped"] else f"{c['name']} (not shipped)"
        lines.append(f"| {name} | {c['core_hours']:.2f} | {c['gpu_hours']:.2f} | {elo} | {c['games']} |")
    return "\n".join(lines)


def run(path: str | Path) -> dict:
    path = Path(path)
    history = load(path)
    fitted = fit(history, path.parent)
    write_json(path.parent / "ratings.json", fitted)
    plot(fitted, path.parent / "elo.png", history.title)
    return fitted


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m flows.history", description=__doc__.split("\n\n")[0])
    ap.add_argument("history", help="the history file (YAML)")
    args = ap.parse_args(argv)
    try:
        fitted = run(args.history)
    except HistoryError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(table_md(fitted))
    return 0


if __name__ == "__main__":
    sys.exit(main())
