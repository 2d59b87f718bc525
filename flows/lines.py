"""Lines of a recipe comparison, generation by generation, from their workspaces' generation records.

Two or more lines started from the same champion and window (the campaign and an arm run with OVERRIDES,
each in its own workspace) are compared here on what each generation's `gens/<line>/gNNNN/generation.json`
and `params.yaml` say: the logging gate, the held-out losses, the network, the training window, the games,
the wall time, the core-hours summed from the line's first generation, and the in-flow ladder's games against
outside engines (`ladder.every`), each generation's and pooled over the line's generations.

    python -m flows.lines OUT_DIR window-12=/work/campaign:13 window-24=/work/arm --line go-9

(`:13`: that line's generations up to 13 of its workspace, for a workspace that went on after the
comparison; `:28-29`: its generations 28 to 29, for an arm started from a generation the workspace passed.)
Writes OUT_DIR/lines.json and OUT_DIR/lines.md (one row a generation and line).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

from flows.layout import LineError, read_json
from flows.results import elo_interval_text
from zero.stats import MatchResult, combine


class LinesError(ValueError):
    """A line spec or a generation record that cannot be read."""


def generation_rows(workspace: Path, line: str = "go-9", last: int | None = None, first: int | None = None
                    ) -> list[dict]:
    """Each finished generation of `line` in `workspace` (those with a gate and a training) from `first` to `last`,
    oldest first; the core-hours are summed from the first."""
    gens = workspace / "gens" / line
    if not gens.is_dir():
        raise LinesError(f"{workspace}: no generations of {line} (no {gens})")
    rows, core_hours = [], 0.0
    for path in sorted(gens.glob("g*/generation.json")):
        d = read_json(path)  # LineError naming a torn record
        try:
            params = yaml.safe_load((path.parent / "params.yaml").read_text())
        except (OSError, yaml.YAMLError) as e:
            raise LinesError(f"{path.parent / 'params.yaml'}: cannot be read: {e}") from e
        if (not d.get("gate") or not d.get("train") or (last is not None and d["generation"] > last)
                or (first is not None and d["generation"] < first)):
            continue
        core_hours += d["compute"]["core_hours"]
        holdout = d["train"].get("holdout") or {}
        reuse = d["train"].get("reuse") or {}
        rows.append({
            "generation": d["generation"],
            "network": params["network"]["size"],
            "window_generations": params["train"]["window_generations"],
            "train_positions": reuse.get("train_positions"),
            "steps": d["train"].get("steps"),
            "gate": f"{d['gate']['wins']}-{d['gate']['losses']}-{d['gate']['draws']}",
            "holdout_value_loss": holdout.get("value_loss"),
            "holdout_policy_loss": holdout.get("policy_loss"),
            "selfplay_games": d["selfplay"]["games"],
            "selfplay_resigned": d["selfplay"].get("resigned"),
            "selfplay_decided": d["selfplay"].get("decided"),  # selfplay.decided_visits: played out, not resigned
            "selfplay_decided_reversed": d["selfplay"].get("decided_reversed"),
            "wall_s": d["compute"]["wall_s"],
            "core_hours": round(core_hours, 4),
            "candidate_sha256": d["gate"]["candidate_sha256"],
            "outside": outside_matches(d),
        })
    return rows


def outside_matches(record: dict) -> list[dict]:
    """The in-flow ladder's matches a generation played against outside engines (none where it ran no ladder)."""
    ladder = record.get("ladder") or {}
    return [{"opponent": m["b"], "wins": m["wins"], "losses": m["losses"], "draws": m["draws"],
             "visits": m.get("visits")} for m in ladder.get("matches") or []]


def pooled_outside(rows: list[dict]) -> dict[str, dict]:
    """Each outside opponent's games summed over the rows (`zero.stats.combine`): the generations that played it,
    the counts, the score and its Elo with a 95% interval (`MatchResult.to_dict`)."""
    by_opponent: dict[str, list[tuple[int, MatchResult]]] = {}
    for r in rows:
        for m in r["outside"]:
            by_opponent.setdefault(m["opponent"], []).append((r["generation"], MatchResult.from_dict(m)))
    return {opponent: {"generations": [g for g, _ in played], **combine(result for _, result in played).to_dict()}
            for opponent, played in by_opponent.items()}


def pooled_elo_text(p: dict) -> str:
    """The Elo of pooled games (`MatchResult.to_dict`) with its 95% interval, `+42 [-6, +92]`; a shut-out has
    no finite Elo and says so."""
    if p["elo"] is None or p["elo_low"] is None or p["elo_high"] is None:
        return "(a shut-out: no finite Elo)"
    return elo_interval_text((p["elo"], p["elo_low"], p["elo_high"]))


def games_text(r: dict) -> str:
    """A generation's self-play games, with how many resigned and how many were decided and played out (and won
    by the side that would have resigned) where its record says: `512 (470 resigned)`."""
    parts = [f"{r['selfplay_resigned']} resigned"] if r.get("selfplay_resigned") else []
    if r.get("selfplay_decided") is not None:
        parts.append(f"{r['selfplay_decided']} decided, {r['selfplay_decided_reversed']} reversed")
    return f"{r['selfplay_games']}" + (f" ({'; '.join(parts)})" if parts else "")


def markdown(table: dict[str, list[dict]]) -> str:
    """The rows as one markdown table, the lines one after the other."""
    md = ["| line | generation | network | window (generations, positions) | training steps | "
          "gate (logging) | held-out value / policy loss | self-play games (resigned; decided, reversed) | seconds | "
          "core-hours from the start | in-flow ladder (W-L-D) |",
          "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, rows in table.items():
        for r in rows:
            losses = (f"{r['holdout_value_loss']:.3f} / {r['holdout_policy_loss']:.3f}"
                      if r["holdout_value_loss"] is not None else "")
            positions = f"{r['train_positions']:,}" if r["train_positions"] is not None else "?"
            outside = ", ".join(f"{m['opponent']} {m['wins']}-{m['losses']}-{m['draws']}"
                                for m in r["outside"])
            md.append(f"| {name} | {r['generation']} | {r['network']} | {r['window_generations']}, {positions} | "
                      f"{r['steps']} | {r['gate']} | {losses} | {games_text(r)} | {r['wall_s']:.0f} | "
                      f"{r['core_hours']:.3f} | {outside} |")
    pooled = {name: pooled_outside(rows) for name, rows in table.items()}
    if any(pooled.values()):
        md += ["", "Pooled over each line's generations (the in-flow ladder's games, each generation's own network; "
               "Elo with a 95% interval):", "",
               "| line | opponent | generations | games | W-L-D | score | Elo [95%] |", "|---|---|---|---|---|---|---|"]
        for name, by_opponent in pooled.items():
            for opponent, p in by_opponent.items():
                md.append(f"| {name} | {opponent} | {', '.join(map(str, p['generations']))} | {p['games']} | "
                          f"{p['wins']}-{p['losses']}-{p['draws']} | {p['win_rate']:.1%} | {pooled_elo_text(p)} |")
    return "\n".join(md) + "\n"


def parse_line(spec: str) -> tuple[str, Path, int | None, int | None]:
    """`name=workspace[:[first-]last]` -> (name, workspace, first generation or None, last generation or None)."""
    name, sep, rest = spec.partition("=")
    if not sep or not name or not rest:
        raise LinesError(f"{spec!r}: a line is NAME=WORKSPACE, NAME=WORKSPACE:LAST or NAME=WORKSPACE:FIRST-LAST")
    workspace, colon, span = rest.partition(":")
    if not colon:
        return name, Path(workspace), None, None
    first, dash, last = span.rpartition("-")
    if not last.isdigit() or (dash and not first.isdigit()):
        raise LinesError(f"{spec!r}: the generations after ':' must be LAST or FIRST-LAST, numbers, not {span!r}")
    if dash and int(first) > int(last):
        raise LinesError(f"{spec!r}: the first generation {first} comes after the last {last}")
    return name, Path(workspace), int(first) if dash else None, int(last)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m flows.lines", description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="the record directory: lines.json and lines.md go there")
    ap.add_argument("lines", nargs="+", help="NAME=WORKSPACE[:[FIRST-]LAST], one per line compared")
    ap.add_argument("--line", default="go-9", help="the params file's line name under gens/ (default go-9)")
    args = ap.parse_args(argv)
    try:
        table = {}
        for spec in args.lines:
            name, workspace, first, last = parse_line(spec)
            table[name] = generation_rows(workspace, args.line, last, first)
    except (LinesError, LineError) as e:
        ap.exit(2, f"flows.lines: {e}\n")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "lines.json").write_text(json.dumps(table, indent=1) + "\n")
    md = markdown(table)
    (args.out / "lines.md").write_text(md)
    print(md, end="")


if __name__ == "__main__":
    main()
