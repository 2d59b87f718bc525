"""Prefect's heartbeats and the zombie automation (flows/liveness.py) on a real Prefect server.

A served flow run whose serve process and flow process are killed together
(`kill -9` of the process group: nobody is left to report it) is marked
Crashed by the server itself, with no command of ours running, once no
heartbeat came within the automation's window; `reap` then marks its task run,
which the automation leaves Running, Crashed. Heartbeats are sent every 30 s
(Prefect's least) and the window here is 40 s: about a minute and a half on
one core, the server's start included.
"""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from pipeline_support import LEAKY_ENV, free_port

pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.timeout(600)]

WINDOW_S = 40  # more than one heartbeat interval (30 s), so that a live run is never marked

# A deployment whose one task runs until it is killed, served as `python -m flows.serve serve` serves ours.
PROBE = textwrap.dedent("""
    import time
    from prefect import flow, serve, task

    @task
    def work():
        time.sleep(600)

    @flow(name="heartbeat-probe")
    def probe():
        work()

    if __name__ == "__main__":  # the flow process imports this file too
        serve(probe.to_deployment(name="probe"))
""")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A workspace's own Prefect server, with the workspace's settings (flows.servers.prefect_env) in os.environ.

    Prefect's clients in this process are pointed at it too: a session's test harness (tests/conftest.py) holds
    a settings context of its own, which would otherwise win over the environment."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from flows.servers import Services, prefect_env

    root = tmp_path_factory.mktemp("heartbeats") / "ws"
    root.mkdir()
    port = free_port()
    with pytest.MonkeyPatch.context() as env:
        for name in LEAKY_ENV:
            env.delenv(name, raising=False)
        for name, value in prefect_env(root, port).items():
            env.setenv(name, value)
        services = Services(root, port)
        services.start_server()
        try:
            with temporary_settings(updates={PREFECT_API_URL: f"http://127.0.0.1:{port}/api"}):
                yield services
        finally:
            services.down()


def wait_for(what: str, get, timeout: float, interval: float = 1.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = get()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"{what}: not within {timeout:.0f} s")


def test_the_zombie_automation_is_made_once_and_follows_its_window(server):
    from prefect.automations import Automation
    from prefect.client.orchestration import get_client

    from flows.liveness import ZOMBIES, ensure_zombie_automation, zombie_window_s

    assert os.environ["PREFECT_FLOWS_HEARTBEAT_FREQUENCY"] == "30"  # the workspace's setting, as served flows get it
    assert zombie_window_s() == 90
    assert ensure_zombie_automation() == "created"
    assert ensure_zombie_automation() == "kept"
    assert Automation.read(name=ZOMBIES).trigger.within.total_seconds() == 90
    assert ensure_zombie_automation(WINDOW_S) == "updated"
    assert Automation.read(name=ZOMBIES).trigger.within.total_seconds() == WINDOW_S
    with get_client(sync_client=True) as client:  # the update did not add a second
        assert len(client.read_automations_by_name(ZOMBIES)) == 1


def test_a_served_run_killed_with_its_serve_process_is_crashed_by_the_server(server):
    from prefect.client.orchestration import get_client
    from prefect.deployments import run_deployment
    from prefect.events.filters import EventFilter, EventNameFilter, EventResourceFilter

    from flows.liveness import ensure_zombie_automation, reap

    ensure_zombie_automation(WINDOW_S)
    (server.root / "probe.py").write_text(PROBE)  # Prefect serves flows from files only
    log = open(server.home / "probe.log", "ab")
    serve = subprocess.Popen([sys.executable, "probe.py"], cwd=server.root, env=dict(os.environ), stdout=log,
                             stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        def deployed():
            if serve.poll() is not None:
                pytest.fail("the probe's serve process exited:\n" + (server.home / "probe.log").read_text()[-3000:])
            return server.deployment("heartbeat-probe/probe")

        wait_for("the probe deployment", deployed, 120)
        run = run_deployment("heartbeat-probe/probe", timeout=0)
        with get_client(sync_client=True) as client:
            def beats() -> list:  # a filter's period ends when it is made
                return client.read_events(limit=50, filter=EventFilter(
                    event=EventNameFilter(name=["prefect.flow-run.heartbeat"]),
                    resource=EventResourceFilter(id=[f"prefect.flow-run.{run.id}"]))).events

            wait_for("a heartbeat of the run", beats, 120)
            task = wait_for("the task run", lambda: [t for t in client.read_task_runs()
                                                     if t.flow_run_id == run.id and t.state.is_running()], 60)[0]
            os.killpg(serve.pid, signal.SIGKILL)  # the serve process and its flow process: nobody reports
            serve.wait()
            killed = time.time()
            assert client.read_flow_run(run.id).state.is_running()

            # nobody but the server: the run is Crashed once no heartbeat came for WINDOW_S seconds
            crashed = wait_for("Crashed by the automation", lambda: client.read_flow_run(run.id).state.is_crashed(),
                               WINDOW_S + 60)
            took = time.time() - killed
            last = max(e.occurred for e in beats())
            state = client.read_flow_run(run.id).state
            silent = (state.timestamp - last).total_seconds()
            print(f"Crashed {took:.0f} s after the kill, {silent:.0f} s after the last heartbeat")
            assert crashed and "no heartbeat" in state.message
            assert silent >= WINDOW_S  # not before the window ended

            # the automation changes the flow run only; reap marks its unfinished task run
            assert client.read_task_run(task.id).state.is_running()
            assert reap(client, server.home) == []  # no flow run left to mark
            assert client.read_task_run(task.id).state.is_crashed()
    finally:
        if serve.poll() is None:
            os.killpg(serve.pid, signal.SIGKILL)
            serve.wait()
        log.close()
