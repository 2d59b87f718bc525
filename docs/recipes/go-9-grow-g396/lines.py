"""The two lines of the growth probe, generation by generation, from their workspaces' generation records.

    python docs/recipes/go-9-grow-g396/lines.py OUT_DIR b6c64=/work/campaign:13 b10c96=/work/grow

(`:13`: that line's generations up to 13 of its workspace, for a workspace that went on after the probe.)

Writes OUT_DIR/lines.json (each generation's gate, held-out losses, network, self-play and compute, as its
gens/go-9/gNNNN/generation.json says) and OUT_DIR/lines.md (the same as a table, one row a generation and
line, with each line's compute summed from its first generation).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml


def generation_rows(workspace: Path, last: int | None = None) -> list[dict]:
    rows, core_hours = [], 0.0
    for path in sorted((workspace / "gens" / "go-9").glob("g*/generation.json")):
        d = json.loads(path.read_text())
        if not d.get("gate") or not d.get("train") or (last is not None and d["generation"] > last):
            continue
        core_hours += d["compute"]["core_hours"]
        holdout = d["train"].get("holdout") or {}
        rows.append({
            "generation": d["generation"],
            "network": yaml.safe_load((path.parent / "params.yaml").read_text())["network"]["size"],
            "gate": f"{d['gate']['wins']}-{d['gate']['losses']}-{d['gate']['draws']}",
            "holdout_value_loss": holdout.get("value_loss"),
            "holdout_policy_loss": holdout.get("policy_loss"),
            "selfplay_games": d["selfplay"]["games"],
            "wall_s": d["compute"]["wall_s"],
            "core_hours": round(core_hours, 4),
            "candidate_sha256": d["gate"]["candidate_sha256"],
        })
    return rows


def main(out: Path, lines: dict[str, str]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    table = {}
    for name, spec in lines.items():
        workspace, _, last = spec.partition(":")
        table[name] = generation_rows(Path(workspace), int(last) if last else None)
    (out / "lines.json").write_text(json.dumps(table, indent=1) + "\n")
    md = ["| line | generation | network | gate (logging, 20 games) | held-out value / policy loss | "
          "self-play games | seconds | core-hours from the start |", "|---|---|---|---|---|---|---|---|"]
    for name, rows in table.items():
        for r in rows:
            losses = (f"{r['holdout_value_loss']:.3f} / {r['holdout_policy_loss']:.3f}"
                      if r["holdout_value_loss"] is not None else "")
            md.append(f"| {name} | {r['generation']} | {r['network']} | {r['gate']} | {losses} | {r['selfplay_games']} | "
                      f"{r['wall_s']:.0f} | {r['core_hours']:.3f} |")
    (out / "lines.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(Path(sys.argv[1]), dict(a.split("=", 1) for a in sys.argv[2:]))
