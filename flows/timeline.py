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
import statistics
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


PACE_WINDOW = 10  # the generations before it that a generation's self-play rate is set beside
PACE_MIN = 3  # fewer comparable generations than this: the rate is recorded, not judged
PACE_FLOOR = 0.75  # below this share of their median rate, the generation ran slow and says why it may have


def selfplay_pace(record: dict) -> dict | None:
    """A flow generation's self-play pace from its record: the network's evaluations a second of self-play's
    wall time, the share of that wall time x the cores that its processes spent on a CPU, and what it ran on
    (CPU model, number formats, cores, GPU). None where the record cannot say: no timeline or evaluations,
    shards reused from an earlier attempt, or made by flows.standalone."""
    seconds = (record.get("timeline") or {}).get("selfplay")
    selfplay, compute = record.get("selfplay") or {}, record.get("compute") or {}
    evals, cpu_s = selfplay.get("nn_evals"), (compute.get("cpu_s_by_stage") or {}).get("selfplay")
    if not (seconds and evals) or selfplay.get("shards_reused") or record.get("standalone"):
        return None
    arithmetic = record.get("arithmetic") or {}
    cores = compute.get("cores") or 1
    return {"evals_per_s": round(evals / seconds, 1),
            "cpu_share": round(cpu_s / (seconds * cores), 3) if cpu_s is not None else None,
            "machine": [arithmetic.get("cpu"), arithmetic.get("selfplay"), cores, compute.get("gpu_name")]}


def pace(record: dict, earlier: dict[int, dict]) -> dict | None:
    """The self-play pace of generation `record` beside the median of the last PACE_WINDOW generations before
    it in `earlier` ({generation: record}, `records(line_dir, "flow")`) that ran on the same machine class:
    `ratio` to that median, `slow` below PACE_FLOOR. Fewer than PACE_MIN such generations: the pace alone,
    unjudged. None where the record cannot say (selfplay_pace)."""
    mine = selfplay_pace(record)
    if mine is None:
        return None
    before = [p for g, r in sorted(earlier.items()) if g < record["generation"]
              if (p := _readable_pace(r)) is not None and p["machine"] == mine["machine"]][-PACE_WINDOW:]
    out = {**mine, "generations_before": len(before)}
    if len(before) >= PACE_MIN:
        median = statistics.median(p["evals_per_s"] for p in before)
        shares = [p["cpu_share"] for p in before if p["cpu_share"] is not None]
        out.update(median_before=round(median, 1), ratio=round(mine["evals_per_s"] / median, 3),
                   cpu_share_before=round(statistics.median(shares), 3) if shares else None)
        out["slow"] = out["ratio"] < PACE_FLOOR
    return out


def _readable_pace(record: dict) -> dict | None:
    """selfplay_pace of an earlier record, None where its fields are not the numbers a flow writes."""
    try:
        return selfplay_pace(record)
    except (TypeError, ValueError, ZeroDivisionError, AttributeError):
        return None


def pace_text(p: dict) -> str:
    """What a judged pace says: the rate against the median, and whether the processes lost the CPU to others
    (their share of it fell) or the CPU itself computed slower (the share held)."""
    text = (f"self-play ran at {p['evals_per_s']:,.0f} evaluations/s, {p['ratio']:.0%} of the median "
            f"{p['median_before']:,.0f} of the {p['generations_before']} generations before it on this machine "
            f"({p['machine'][0]}, self-play in {p['machine'][1]}, {p['machine'][2]} core(s))")
    if p.get("cpu_share") is None or p.get("cpu_share_before") is None:
        return text
    if p["cpu_share"] < PACE_FLOOR * p["cpu_share_before"]:
        return (text + f": its processes were on a CPU {p['cpu_share']:.0%} of the time against "
                       f"{p['cpu_share_before']:.0%} before, so other work took its cores")
    return (text + f": its processes were on a CPU {p['cpu_share']:.0%} of the time, as before "
                   f"({p['cpu_share_before']:.0%}), so the cores themselves computed slower (their clock, or a "
                   f"neighbour on the host)")


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
