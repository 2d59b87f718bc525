"""The GPU's mean utilisation (nvidia-smi, twice a second) over each step of the two generations, the steps'
bounds read from the logs: flow.log (the flow's tasks) and standalone-log.txt (flows.standalone's progress).

    python busy.py > busy.txt
"""

import csv
import re
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).parent


def samples(name: str) -> list[tuple[str, int, int]]:
    """(HH:MM:SS, busy %, memory MiB) of an smi file."""
    out = []
    for row in list(csv.reader((HERE / name).open()))[1:]:
        try:
            t = datetime.strptime(row[0].strip(), "%Y/%m/%d %H:%M:%S.%f").strftime("%H:%M:%S")
            out.append((t, int(row[1].split()[0]), int(row[2].split()[0])))
        except (ValueError, IndexError):
            continue
    return out


def stamps(name: str, pattern: str) -> list[str]:
    """HH:MM:SS of the log lines matching pattern (flow.log's lines name only changed leading fields: the
    last full time before a line stands for it)."""
    out, last = [], None
    for line in (HERE / name).read_text().splitlines():
        m = re.match(r"(\d\d:\d\d:\d\d)", line)
        if m:
            last = m.group(1)
        if re.search(pattern, line) and last:
            out.append(last)
    return out


def mean(rows, start: str, end: str) -> str:
    inside = [r for r in rows if start <= r[0] <= end]
    return f"{sum(r[1] for r in inside) / len(inside):5.1f}% busy, {max(r[2] for r in inside):,} MiB at most"


flow, alone = samples("flow-smi.csv"), samples("standalone-smi.csv")
f_sp = stamps("flow.log", r"go-9-g0001 self-play shard \d: 2560 games to play")[0]
f_sp_end = stamps("flow.log", r"self-play: 8 shards")[0]
f_train = stamps("flow.log", r"go-9-g0001 train: 1000 steps to run")[0]
f_gate = stamps("flow.log", r"gate part 0: 100 games to play")[0]
f_gate_end = stamps("flow.log", r"gate: candidate")[0]
f_start = stamps("flow.log", r"Beginning subflow run")[0]
f_end = stamps("flow.log", r"g0001 done in")[0]
a_sp = stamps("standalone-log.txt", r"self-play shard 0: 2560 games to play")[0]
a_train = stamps("standalone-log.txt", r"train: 1000/1000")[0]
a_gate = stamps("standalone-log.txt", r"gate part 0: 100/100")[0]
a_sp_end = max(stamps("standalone-log.txt", r"self-play shard \d: 2560/2560"))
print(f"flow generation 1, {f_start}-{f_end}: {mean(flow, f_start, f_end)}")
print(f"  self-play {f_sp}-{f_sp_end}: {mean(flow, f_sp, f_sp_end)}")
print(f"  training {f_train}-{f_gate}: {mean(flow, f_train, f_gate)}")
print(f"  gate {f_gate}-{f_gate_end}: {mean(flow, f_gate, f_gate_end)}")
print(f"standalone generation 1, {a_sp}-{a_gate}: {mean(alone, a_sp, a_gate)}")
print(f"  self-play {a_sp}-{a_sp_end}: {mean(alone, a_sp, a_sp_end)}")
print(f"  training {a_sp_end}-{a_train}: {mean(alone, a_sp_end, a_train)}")
print(f"  gate {a_train}-{a_gate}: {mean(alone, a_train, a_gate)}")
