"""Who runs a flow run (flows/liveness.py): records, provably gone processes, and a flow process
that ends with the serve process that started it."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil

from flows.liveness import SERVE, ProcessId, exit_with_serve, forget_run, record_run, run_process

REPO = Path(__file__).resolve().parents[1]


def test_a_record_names_this_process_and_is_forgotten_only_by_it(tmp_path):
    record_run("run-1", tmp_path)
    me = run_process("run-1", tmp_path)
    assert me == ProcessId.of() and me.gone() is False
    other = ProcessId(me.host, me.pid, (me.start or 0) + 1)  # the same pid, started at another time
    assert other.gone() is True
    forget_run("run-1", tmp_path)
    assert run_process("run-1", tmp_path) is None


def test_a_record_of_before_a_reboot_is_read_and_told_by_its_start_time():
    me = ProcessId.of()
    # an earlier record (it carried the boot time too): this pid, started before the machine last booted
    before = ProcessId.from_dict({"host": me.host, "boot_id": "1", "pid": me.pid, "start": psutil.boot_time() - 60})
    assert before == ProcessId(me.host, me.pid, psutil.boot_time() - 60)
    assert before.gone() is True


def test_a_dead_process_and_another_host_are_told_apart():
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = ProcessId.of()
    dead = ProcessId(dead.host, int(done.stdout), dead.start)
    assert dead.gone() is True
    assert ProcessId("another-host", 1, None).gone() is None  # never declared dead from here


def test_a_flow_process_ends_when_its_serve_process_is_killed(tmp_path):
    # "serve": records itself as the serve process, starts a "flow" child that watches it, prints its pid
    flow = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(REPO)!r})
        from flows.liveness import exit_with_serve
        print(exit_with_serve(interval=0.05, home={str(tmp_path)!r}), flush=True)
        time.sleep(60)
    """)
    serve = textwrap.dedent(f"""
        import subprocess, sys, time
        sys.path.insert(0, {str(REPO)!r})
        from flows.liveness import SERVE, record_run
        record_run(SERVE, {str(tmp_path)!r})
        child = subprocess.Popen([sys.executable, "-c", {flow!r}], stdout=subprocess.PIPE, text=True)
        print(child.pid, child.stdout.readline().strip(), flush=True)
        time.sleep(60)
    """)
    parent = subprocess.Popen([sys.executable, "-c", serve], stdout=subprocess.PIPE, text=True)
    try:
        pid, watching = parent.stdout.readline().split()
        assert watching == "True"
        child = ProcessId.of(int(pid))
        assert child.gone() is False
        time.sleep(0.3)
        assert child.gone() is False  # it does not end while the serve process lives
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        deadline = time.time() + 10
        while child.gone() is False and time.time() < deadline:
            time.sleep(0.05)
        assert child.gone() is True
    finally:
        parent.kill()
        parent.wait()


def test_a_flow_run_by_hand_does_not_watch(tmp_path):
    record_run(SERVE, tmp_path)  # the serve record names this process, which is not our parent
    assert exit_with_serve(home=tmp_path) is False
