"""Who runs a flow run, whether that process is provably gone, and what to do about a run whose process is.

Prefect learns that a flow run crashed from the process that started it: the
serve process watches its flow processes. When both are gone at once (`kill -9`
of the process group, the OOM killer, a reboot) nobody reports. Prefect's own
answer covers most of it: each flow process sends a heartbeat event every
`PREFECT_FLOWS_HEARTBEAT_FREQUENCY` seconds (30, flows.servers sets it), and
the automation `make up` creates (`ensure_zombie_automation`) has the server
mark a deployment's run Crashed once nothing came from it for `MISSED`
heartbeat intervals. What stays here is what that does not cover:

- An immediate verdict. Each flow process records itself in
  `$PREFECT_HOME/runs/<flow run id>.json` (host, pid, start time), and `make
  run`'s wait, `cancel`, `retry`, `reap` and `make up` mark a run whose recorded
  process is provably gone at once, not a minute and a half later.
- A run that was being cancelled ends Cancelled, as asked. The automation
  would mark it Crashed or, when the cancellation came after its last
  heartbeat (an event of the run, so the window is satisfied), leave it
  Cancelling until the server's cancellation timeout (300 s) marks it Cancelled.
- A Pending run killed before its flow started sends no heartbeat, so the
  automation never watches it: the serve process's record answers for it.
- The unfinished task runs: Prefect's automation changes the flow run's state
  only, so `reap` marks those of every Crashed flow run Crashed too.
- A flow process whose serve process was killed alone lives on and keeps
  sending heartbeats while it waits on a task pool that no longer delivers:
  `exit_with_serve` ends it.

"Provably gone" is decided on the recording host only: no such pid, or a pid
now held by a process that started at another time (a reused pid, or any pid
after a reboot). A process on another host is never declared dead from here;
its heartbeats are the server's to miss.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil

HEARTBEAT_S = 30  # seconds between a flow run's heartbeats (Prefect's least), in the workspace's settings

# Flow runs in these states have a process that should be alive.
LIVE_STATES = ("PENDING", "RUNNING", "CANCELLING")


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
    pid: int
    start: float | None

    @classmethod
    def of(cls, pid: int | None = None) -> "ProcessId":
        pid = os.getpid() if pid is None else pid
        return cls(socket.gethostname(), pid, _start_ticks(pid))

    @classmethod
    def from_dict(cls, d: dict) -> "ProcessId | None":
        try:
            return cls(str(d["host"]), int(d["pid"]), d.get("start"))
        except (KeyError, TypeError, ValueError):
            return None

    def gone(self) -> bool | None:
        """True if provably dead, False if alive, None if it cannot be told from this host."""
        if self.host != socket.gethostname():
            return None
        now = _start_ticks(self.pid)
        if now is None:
            return True
        if self.start is not None and abs(float(now) - float(self.start)) > 0.05:
            return True  # the pid belongs to another process now (or the machine rebooted)
        return _zombie(self.pid)

    def text(self) -> str:
        return f"pid {self.pid} on {self.host}"


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
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
    from prefect.states import Cancelled, Crashed

    cancelling = flow_run.state.type.value == "CANCELLING"
    why = f"its process ({proc.text()}) is gone"
    final = Cancelled if cancelling else Crashed
    client.set_flow_run_state(flow_run.id, final(message=f"Cancelled: {why}" if cancelling else f"Crashed: {why}"),
                              force=True)
    _crash_task_runs(client, FlowRunFilter(id=FlowRunFilterId(any_=[flow_run.id])), f"the flow run's {why}")
    return "Cancelled" if cancelling else "Crashed"


def _crash_task_runs(client, flow_runs, why: str) -> int:
    """Mark the unfinished task runs of the flow runs `flow_runs` (a FlowRunFilter) selects Crashed; how many."""
    from prefect.client.schemas.filters import TaskRunFilter, TaskRunFilterState, TaskRunFilterStateType
    from prefect.states import Crashed

    tasks = client.read_task_runs(flow_run_filter=flow_runs, task_run_filter=TaskRunFilter(
        state=TaskRunFilterState(type=TaskRunFilterStateType(any_=list(LIVE_STATES)))))
    for t in tasks:
        client.set_task_run_state(t.id, Crashed(message=f"Crashed: {why}"), force=True)
    return len(tasks)


def reap(client, home: str | Path | None = None) -> list[tuple[str, str, str]]:
    """Mark every live-state flow run whose recorded process is provably gone; [(id, name, new state)].

    The unfinished task runs of a flow run Prefect's automation crashed are marked Crashed too."""
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterState, FlowRunFilterStateType

    runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(
        state=FlowRunFilterState(type=FlowRunFilterStateType(any_=list(LIVE_STATES)))))
    done = []
    for run in runs:
        proc = process_gone(run, home)
        if proc is not None:
            done.append((str(run.id), run.name, mark_gone(client, run, proc)))
    _crash_task_runs(client, FlowRunFilter(state=FlowRunFilterState(type=FlowRunFilterStateType(any_=["CRASHED"]))),
                     "the flow run crashed")
    return done


# --- Prefect's heartbeats: the server marks a run whose heartbeats stopped ---------------------------

ZOMBIES = "zero: flow runs whose heartbeats stopped are Crashed"
MISSED = 3  # heartbeats a run may miss before the server marks it Crashed (Prefect's documented example)


def zombie_automation(within_s: float):
    """The automation that marks a deployment's flow run Crashed when, `within_s` seconds after a heartbeat,
    neither another heartbeat nor any other event of the run (a final state) has come.

    Runs not started from a deployment (a flow called by hand, a subflow) are left alone: they may send
    heartbeats at Prefect's default interval (180 s), longer than the window."""
    from datetime import timedelta

    from prefect.automations import Automation
    from prefect.client.schemas.objects import StateType
    from prefect.events.actions import ChangeFlowRunState
    from prefect.events.schemas.automations import EventTrigger, Posture
    from prefect.events.schemas.events import ResourceSpecification

    return Automation(
        name=ZOMBIES,
        description=f"A served flow run with no heartbeat for {within_s:.0f} s has lost its process: Crashed.",
        trigger=EventTrigger(
            after={"prefect.flow-run.heartbeat"},
            expect={"prefect.flow-run.*"},
            match=ResourceSpecification({"prefect.resource.id": "prefect.flow-run.*"}),
            match_related=ResourceSpecification({"prefect.resource.role": "deployment"}),
            for_each={"prefect.resource.id"},
            posture=Posture.Proactive,
            threshold=1,
            within=timedelta(seconds=within_s),
        ),
        actions=[ChangeFlowRunState(state=StateType.CRASHED,
                                    message=f"Crashed: no heartbeat from its process for {within_s:.0f} s")],
    )


def zombie_window_s() -> float:
    """MISSED heartbeat intervals of the workspace's (PREFECT_FLOWS_HEARTBEAT_FREQUENCY, flows.servers sets it)."""
    return MISSED * float(os.environ.get("PREFECT_FLOWS_HEARTBEAT_FREQUENCY") or HEARTBEAT_S)


def ensure_zombie_automation(within_s: float | None = None) -> str:
    """Have the server at PREFECT_API_URL hold the zombie automation with this window: 'created', 'updated' or
    'kept' (one already the same)."""
    from prefect.automations import Automation

    want = zombie_automation(within_s or zombie_window_s())
    try:
        have = Automation.read(name=ZOMBIES)
    except ValueError:  # none of that name
        want.create()
        return "created"
    if _same(have, want):
        return "kept"
    want.id = have.id
    want.update()
    return "updated"


def _same(a, b) -> bool:
    """The automations do the same (trigger and actions; ids aside)."""
    def rule(x) -> dict:
        return {"enabled": x.enabled, "description": x.description,
                "trigger": x.trigger.model_dump(mode="json", exclude={"id"}),
                "actions": [action.model_dump(mode="json") for action in x.actions]}

    return rule(a) == rule(b)


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


def exit_with(pid: int, interval: float = 1.0, name: str = "exit-with-pool") -> None:
    """End this process (exit code 70) once process `pid` has ended, whether or not it is this one's parent:
    a worker forked by a fork server, which outlives the process that made the worker's pool. Linux tells at
    once (a pidfd); elsewhere `pid` is looked at every `interval` seconds."""
    import threading
    import time

    try:
        fd = os.pidfd_open(pid) if hasattr(os, "pidfd_open") else None
    except ProcessLookupError:
        os._exit(70)
    except OSError:  # a kernel without pidfds
        fd = None

    def watch() -> None:
        if fd is not None:
            import select

            select.select([fd], [], [])
            os._exit(70)
        while True:
            time.sleep(interval)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                os._exit(70)
            except PermissionError:
                pass  # alive, another user's

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
