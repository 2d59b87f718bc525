"""Where a generation's wall time goes: each step's seconds, in order, kept in its record as `timeline`.

The zero-generation flow and flows.standalone time the same steps (self-play, dataset, train, gate, promote),
so the flow's overhead over the same work is the difference of their timelines, step by step. The flow adds its
own: `start` (from the flow run's start to its first step: params, the line's lock, DVC's set-up), `champion`
(the registry's champion checked against the workspace), `record` and `publish` (the record written, the
outputs pushed to the DVC remote).

    python -m flows.timeline gens/go-9                      # the flow's generations, step by step
    python -m flows.timeline gens/go-9 ../copy/gens/go-9    # beside flows.standalone's: the flow's overhead
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from flows.layout import read_json

RECORD, STANDALONE = "generation.json", "standalone.json"
STEPS = ("start", "champion", "selfplay", "dataset", "train", "gate", "promote", "record", "publish")  # in order


class Timeline:
    """Wall seconds by step: `lap(step)` adds the seconds since the last lap (or since `since`) to `step`."""

    def __init__(self, since: float | None = None):
        self.steps: dict[str, float] = {}
        self._last = time.time() if since is None else min(since, time.time())

    def lap(self, step: str) -> None:
        now = time.time()
        self.steps[step] = round(self.steps.get(step, 0.0) + now - self._last, 2)
        self._last = now

    def total(self) -> float:
        return round(sum(self.steps.values()), 1)


def records(line_dir: Path, kind: str) -> dict[int, dict]:
    """{generation: record} of a line's folder (gens/<tag>), the flow's records or standalone's marks, for
    the generations whose record has a timeline."""
    name = RECORD if kind == "flow" else STANDALONE
    out = {}
    for f in sorted(Path(line_dir).glob(f"g[0-9]*/{name}")):
        record = read_json(f)
        if record.get("timeline"):
            out[int(record["generation"])] = record
    return out


def steps_of(found: dict[int, dict]) -> dict[int, dict[str, float]]:
    """{generation: timeline} of `records`' generations."""
    return {g: r["timeline"] for g, r in found.items()}


def timelines(line_dir: Path, kind: str) -> dict[int, dict[str, float]]:
    """{generation: timeline} of a line's folder (gens/<tag>), from the flow's records or standalone's marks."""
    return steps_of(records(line_dir, kind))


def counted(found: dict[int, dict], kind: str) -> dict[int, int]:
    """{generation: the network's evaluations in its self-play} of `records`' generations that count them."""
    out = {}
    for g, record in found.items():
        evals = record.get("nn_evals") if kind == "standalone" else record.get("selfplay", {}).get("nn_evals")
        if evals:
            out[g] = int(evals)
    return out


def evaluations(line_dir: Path, kind: str) -> dict[int, int]:
    """{generation: the network's evaluations in its self-play} of a line's folder, for the generations
    whose record counts them and has a timeline."""
    return counted(records(line_dir, kind), kind)


def evals_per_s(lines: dict[int, dict[str, float]], evals: dict[int, int] | None) -> float | None:
    """Evaluations a second over the whole of the generations that count them (None: none does)."""
    counted = [g for g in lines if evals and g in evals]
    seconds = sum(sum(lines[g].values()) for g in counted)
    return sum(evals[g] for g in counted) / seconds if counted and seconds > 0 else None


def in_order(steps: dict[str, float]) -> dict[str, float]:
    """The steps in the order a generation runs them (records keep their keys sorted), others after."""
    rank = {k: i for i, k in enumerate(STEPS)}
    return dict(sorted(steps.items(), key=lambda kv: rank.get(kv[0], len(STEPS))))


def mean_steps(lines: dict[int, dict[str, float]]) -> dict[str, float]:
    """Each step's mean seconds over the timelines, in the order a generation runs them."""
    steps: dict[str, list[float]] = {}
    for t in lines.values():
        for k, v in t.items():
            steps.setdefault(k, []).append(v)
    return in_order({k: sum(v) / len(lines) for k, v in steps.items()})


def overhead(flow: dict[int, dict[str, float]], alone: dict[int, dict[str, float]] | None = None,
             flow_evals: dict[int, int] | None = None, alone_evals: dict[int, int] | None = None) -> dict:
    """The flow's mean timeline, the standalone one beside it, and the flow's share of the standalone rate;
    with the generations' evaluations (`evaluations`), each side's evaluations a second over a generation."""
    if not flow:
        raise ValueError("no flow generation with a timeline")
    f = mean_steps(flow)
    out = {"flow_generations": sorted(flow), "flow": f, "flow_total": sum(f.values()),
           "flow_evals_per_s": evals_per_s(flow, flow_evals)}
    if alone:
        a = mean_steps(alone)
        out.update(standalone_generations=sorted(alone), standalone=a, standalone_total=sum(a.values()),
                   rate=sum(a.values()) / sum(f.values()), standalone_evals_per_s=evals_per_s(alone, alone_evals))
    return out


def table(result: dict) -> str:
    """The steps as a text table: flow seconds, standalone seconds and their difference where both ran."""
    alone = result.get("standalone") or {}
    steps = list(result["flow"]) + [k for k in alone if k not in result["flow"]]
    rows = [f"{'step':<10} {'flow s':>8}" + (f" {'standalone s':>13} {'overhead s':>11}" if alone else "")]
    for k in steps:  # a step only one side has counts 0 on the other
        f, a = result["flow"].get(k, 0.0), alone.get(k, 0.0)
        shown = f"{a:>13.1f}" if k in alone else f"{'-':>13}"
        rows.append(f"{k:<10} {f:>8.1f}" + (f" {shown} {f - a:>11.1f}" if alone else ""))
    rows.append(f"{'total':<10} {result['flow_total']:>8.1f}" + (
        f" {result['standalone_total']:>13.1f} {result['flow_total'] - result['standalone_total']:>11.1f}"
        if alone else ""))
    head = f"flow generations {', '.join(map(str, result['flow_generations']))}"
    if alone:
        head += (f"; standalone {', '.join(map(str, result['standalone_generations']))}: the flow makes "
                 f"{result['rate']:.0%} of the standalone generations an hour")
    rates = [f"{side} {result[f'{side}_evals_per_s']:,.0f}" for side in ("flow", "standalone")
             if result.get(f"{side}_evals_per_s")]
    if rates:
        rows.append(f"evaluations/s over a generation: {'; '.join(rates)}")
    return head + "\n" + "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m flows.timeline", description=__doc__.split("\n\n")[0])
    ap.add_argument("flow", type=Path, help="the flow's line folder (gens/<tag>)")
    ap.add_argument("standalone", type=Path, nargs="?", help="a line folder made by flows.standalone")
    args = ap.parse_args(argv)
    try:
        flow = records(args.flow, "flow")
        alone = records(args.standalone, "standalone") if args.standalone else {}
        result = overhead(steps_of(flow), steps_of(alone) or None,
                          counted(flow, "flow"), counted(alone, "standalone"))
    except ValueError as e:
        print(f"flows.timeline: {args.flow}: {e}", file=sys.stderr)
        return 2
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
