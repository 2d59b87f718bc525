"""Who runs a flow run, whether that process is provably gone, and what to do about a run whose process is.

Prefect learns that a flow run crashed from the process that started it: the
serve process watches its flow processes. When both are gone at once (`kill -9`
of the process group, the OOM killer, a reboot) nobody reports, and the run
would stay Running (or Cancelling) forever. So each flow process records itself
in `$PREFECT_HOME/runs/<flow run id>.json` as (host, boot id, pid, process
start time), and `reap` marks a run whose recorded process is provably gone
Crashed (Cancelled if it was being cancelled), with its unfinished task runs.

"Provably gone" is decided on the recording host only: another boot of it, no
such pid, or a pid now held by a process that started at another time (a reused
pid). A process on another host is never declared dead from here.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil

# Flow runs in these states have a process that should be alive.
LIVE_STATES = ("PENDING", "RUNNING", "CANCELLING")


def _boot_id() -> str:
    """The machine's boot time in whole seconds (psutil, on every platform): another value is another boot."""
    try:
        return str(int(psutil.boot_time()))
    except (OSError, RuntimeError):
        return ""


def _start_ticks(pid: int) -> float | None:
    """The process's start time (seconds since the epoch, to the hundredth), None if no such pid."""
    try:
        return round(psutil.Process(pid).create_time(), 2)
    except (psutil.NoSuchProcess, psutil.AccessDenied, ProcessLookupError, ValueError):
        return None


@dataclass(frozen=True)
class ProcessId:
    """A process named so that a later reader can tell it from another that reuses its pid."""

    host: str
    boot_id: str
    pid: int
    start: float | None

    @classmethod
    def of(cls, pid: int | None = None) -> "ProcessId":
        pid = os.getpid() if pid is None else pid
        return cls(socket.gethostname(), _boot_id(), pid, _start_ticks(pid))

    @classmethod
    def from_dict(cls, d: dict) -> "ProcessId | None":
        try:
            return cls(str(d["host"]), str(d.get("boot_id", "")), int(d["pid"]), d.get("start"))
        except (KeyError, TypeError, ValueError):
            return None

    def gone(self) -> bool | None:
        """True if provably dead, False if alive, None if it cannot be told from this host."""
        if self.host != socket.gethostname():
            return None
        if self.boot_id and _rebooted(self.boot_id, _boot_id()):
            return True  # the machine rebooted since
        now = _start_ticks(self.pid)
        if now is None:
            return True
        if self.start is not None and abs(float(now) - float(self.start)) > 0.05:
            return True  # the pid belongs to another process now
        return _zombie(self.pid)

    def text(self) -> str:
        return f"pid {self.pid} on {self.host}"


def _rebooted(recorded: str, now: str) -> bool:
    """Boot times more than two seconds apart (a clock step may move the reading by one)."""
    try:
        return abs(float(recorded) - float(now)) > 2
    except ValueError:
        return recorded != now


def _zombie(pid: int) -> bool:
    """A killed child its parent has not reaped yet is dead, though its pid still exists."""
    try:
        return psutil.Process(pid).status() in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return True


# --- the record each flow process writes -----------------------------------------------------------


def runs_dir(home: str | Path | None = None) -> Path:
    return Path(home or os.environ.get("PREFECT_HOME") or Path.home() / ".prefect") / "runs"


def record_run(flow_run_id: str, home: str | Path | None = None) -> Path:
    """Record this process as the one running `flow_run_id` (a retry's process overwrites the record)."""
    from zero.fileio import atomic_write_text

    path = runs_dir(home) / f"{flow_run_id}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps({"flow_run_id": flow_run_id, **asdict(ProcessId.of())}) + "\n")
    return path


def forget_run(flow_run_id: str, home: str | Path | None = None) -> None:
    """Drop the record of a run that ended in this process (its final state is reported by Prefect)."""
    path = runs_dir(home) / f"{flow_run_id}.json"
    try:
        if ProcessId.from_dict(json.loads(path.read_text())) == ProcessId.of():
            path.unlink()
    except (OSError, ValueError):
        pass


def run_process(flow_run_id: str, home: str | Path | None = None) -> ProcessId | None:
    try:
        return ProcessId.from_dict(json.loads((runs_dir(home) / f"{flow_run_id}.json").read_text()))
    except (OSError, ValueError):
        return None


# --- marking runs whose process is gone --------------------------------------------------------------


SERVE = "serve"  # the record of the serve process, under runs/serve.json


def process_gone(flow_run, home: str | Path | None = None) -> ProcessId | None:
    """The process of a live-state flow run if it is provably gone, else None.

    A served run (no work pool) killed before its process recorded itself is answered for by the serve
    process that started it: if that is gone, so is the run (Prefect ends a flow process whose runner died).
    """
    if not flow_run.state or flow_run.state.type.value not in LIVE_STATES:
        return None
    proc = run_process(str(flow_run.id), home)
    if proc is None and flow_run.work_pool_name is None and flow_run.state.type.value != "CANCELLING":
        proc = run_process(SERVE, home)
    return proc if proc is not None and proc.gone() else None


def mark_gone(client, flow_run, proc: ProcessId) -> str:
    """Set a run whose process is gone (and its unfinished task runs) to Crashed, or Cancelled if cancelling.

    Returns the new state's name.
    """
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId, TaskRunFilter, TaskRunFilterState
    from prefect.client.schemas.filters import TaskRunFilterStateType
    from prefect.states import Cancelled, Crashed

    cancelling = flow_run.state.type.value == "CANCELLING"
    why = f"its process ({proc.text()}) is gone"
    final = Cancelled if cancelling else Crashed
    client.set_flow_run_state(flow_run.id, final(message=f"Cancelled: {why}" if cancelling else f"Crashed: {why}"),
                              force=True)
    tasks = client.read_task_runs(
        flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run.id])),
        task_run_filter=TaskRunFilter(state=TaskRunFilterState(type=TaskRunFilterStateType(
            any_=["PENDING", "RUNNING", "CANCELLING"]))),
    )
    for t in tasks:
        client.set_task_run_state(t.id, Crashed(message=f"Crashed: the flow run's {why}"), force=True)
    return "Cancelled" if cancelling else "Crashed"


def reap(client, home: str | Path | None = None) -> list[tuple[str, str, str]]:
    """Mark every live-state flow run whose recorded process is provably gone; [(id, name, new state)]."""
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterState, FlowRunFilterStateType

    runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(
        state=FlowRunFilterState(type=FlowRunFilterStateType(any_=list(LIVE_STATES)))))
    done = []
    for run in runs:
        proc = process_gone(run, home)
        if proc is not None:
            done.append((str(run.id), run.name, mark_gone(client, run, proc)))
    return done


_watching: list[int] = []  # the serve process this flow process watches, once started


def exit_with_serve(interval: float = 1.0, home: str | Path | None = None) -> bool:
    """End this flow process (exit code 70) when the serve process that started it dies.

    A flow process left behind by a killed serve process can wait forever on a task pool that no
    longer delivers (seen after a `kill -9` of the serve process alone mid-self-play). Ended, it is
    provably gone: `reap` marks the run Crashed and a retry resumes it from what was published. Only a
    flow process whose parent is the recorded serve process watches; one run by hand never does.
    """
    serve = run_process(SERVE, home)
    if serve is None or serve.pid != os.getppid() or _watching:
        return bool(_watching)
    _watching.append(serve.pid)
    exit_with_parent(interval, "exit-with-serve")
    return True


def exit_with_parent(interval: float = 1.0, name: str = "exit-with-parent") -> None:
    """End this process (exit code 70) once the process that started it has died (it is re-parented)."""
    import threading
    import time

    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(interval)
            if os.getppid() != parent:
                os._exit(70)

    threading.Thread(target=watch, name=name, daemon=True).start()


class recorded:
    """`with recorded(flow_run_id):` the body of a flow, recorded as running in this process (which
    ends with the serve process that started it, see exit_with_serve)."""

    def __init__(self, flow_run_id: str):
        self.flow_run_id = flow_run_id

    def __enter__(self) -> "recorded":
        record_run(self.flow_run_id)
        exit_with_serve()
        return self

    def __exit__(self, *exc) -> None:
        forget_run(self.flow_run_id)
