"""A user's first hour, in a fresh shell: every command printed for use by hand works as printed.

A workspace cloned to a temporary directory (the Makefile, infra/env.sh, dvc.yaml, the params files), with a
venv of its own that reaches this venv's packages, on free ports chosen with `make install PREFECT_PORT=...`.
Each command runs as a new user's would: `env -i HOME=... PATH=/usr/bin:/bin bash -c '. .venv/bin/activate
&& <line>'` (make lines without the activation), against the workspace's real Prefect server and serve
process (`make up`), MLflow database and DVC repository. Also: server-down errors name `make up`; a refused
run names the run to watch or cancel, arrives within seconds and ends Cancelled; Ctrl-C on `make run` cancels
the run; a second workspace on the same port is refused, naming the first.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
import urllib.request
from pathlib import Path

import pytest

from flows.serve import by_hand
from pipeline_support import BIN, REPO, SMOKE, TAG, PrefectApi, free_port, make_workspace

pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.timeout(1800)]

CLONED = ("Makefile", "pyproject.toml", "requirements.lock", "params.yaml", "infra/env.sh")
# A smoke generation that holds its line for minutes: the refused run and Ctrl-C meet it running.
# On a line of its own (7x7 Gomoku), so that it never meets a generation of the smoke line another test started.
SLOW = ["game.height=7", "game.width=7", "pipeline.selfplay_shards=4", "selfplay.games_per_shard=24",
        "selfplay.visits=48", "selfplay.concurrent_games=24"]
SLOW_TAG = "gomoku-7x7x4"
SLOW_PARAMS = "params-slow.yaml"  # the same as a params file, for `make run PARAMS=...`
# Ctrl-C's run on a line of its own too (7x7, five in a row): it starts a generation from nothing, never one the
# refused run's holder began, whatever order the tests run in.
CTRL_C_PARAMS = "params-slow-ctrl-c.yaml"
FINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}


def light_venv(root: Path) -> None:
    """root/.venv: a real venv whose site-packages reach this venv's (the project is installed there), with the
    console scripts the printed lines name, and make install's stamp (so make does not reinstall)."""
    venv = root / ".venv"
    subprocess.run([sys._base_executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python*/site-packages"))
    here = sysconfig.get_paths()["purelib"]  # this venv's site-packages, the project's editable install in it
    (site / "zero-parent.pth").write_text(f"import site; site.addsitedir({here!r})\n")
    for name in ("prefect", "dvc", "mlflow"):
        (venv / "bin" / name).symlink_to(BIN / name)
    (venv / ".zero-installed").touch()


class Clone(PrefectApi):
    """A workspace with its own venv and ports; `sh` runs a line in a fresh shell."""

    def __init__(self, root: Path, home: Path, prefect_port: int, mlflow_port: int):
        self.root, self.home = root, home
        self.prefect_port, self.mlflow_port = prefect_port, mlflow_port
        self.api = f"http://127.0.0.1:{prefect_port}/api"

    def argv(self, line: str, activate: bool = True) -> list[str]:
        setup = ". .venv/bin/activate && " if activate else ""
        return ["env", "-i", f"HOME={self.home}", "PATH=/usr/bin:/bin", "bash", "-c",
                f"cd {self.root} && {setup}{line}"]

    def sh(self, line: str, activate: bool = True, timeout: float = 600) -> subprocess.CompletedProcess:
        return subprocess.run(self.argv(line, activate), capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)

    def flow_run_ids(self) -> set[str]:
        return {r["id"] for r in self.post("flow_runs/filter", {})}

    def holder(self) -> dict:
        lock = self.root / "gens" / SLOW_TAG / ".lock"
        try:
            return json.loads(lock.read_text() or "{}")
        except (OSError, ValueError):
            return {}

    def start_holding(self) -> str:
        """A slow smoke generation started by hand; returns its id once it holds the line."""
        line = f"prefect deployment run zero-generation/local --param params_file={SLOW_PARAMS}"
        proc = self.sh(line)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        run_id = uuid_of(proc.stdout)
        deadline = time.time() + 300
        while time.time() < deadline and self.holder().get("owner") != run_id:
            time.sleep(0.5)
        assert self.holder().get("owner") == run_id, self.flow_run(run_id)["state"]
        return run_id

    def cancel(self, run_id: str) -> dict:
        """`prefect flow-run cancel <id>` as printed; the run once it is final."""
        proc = self.sh(f"prefect flow-run cancel {run_id}")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return self.wait_state(run_id, FINAL, timeout=180)


def uuid_of(text: str) -> str:
    match = re.search(r"UUID: ([0-9a-f-]{36})", text)
    assert match, text
    return match.group(1)


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    base = tmp_path_factory.mktemp("doors")
    root = make_workspace(base / "ws")
    for name in CLONED:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, root / name)
    light_venv(root)
    import yaml

    from zero.config import load_params

    for name, settings in ((SLOW_PARAMS, SLOW), (CTRL_C_PARAMS, [*SLOW, "game.k=5"])):
        (root / name).write_text(yaml.safe_dump(load_params(REPO / SMOKE, settings).model_dump(mode="json")))
    (base / "home").mkdir()
    c = Clone(root, base / "home", free_port(), free_port())
    proc = c.sh(f"make install PREFECT_PORT={c.prefect_port} MLFLOW_PORT={c.mlflow_port}", activate=False)
    assert proc.returncode == 0 and "one set-up line" in proc.stdout, proc.stdout + proc.stderr
    proc = c.sh("make up", activate=False)  # the workspace's ports, from make install, in a fresh shell
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"127.0.0.1:{c.prefect_port}" in proc.stdout
    try:
        yield c
    finally:
        c.sh("make down", activate=False, timeout=120)


def test_the_activated_shell_carries_the_workspace_settings_and_deactivate_takes_them_back(clone):
    proc = clone.sh('echo "$PREFECT_API_URL $PREFECT_HOME $MLFLOW_TRACKING_URI"; command -v prefect python dvc; '
                    'deactivate; echo "after:${PREFECT_API_URL-unset}:${MLFLOW_TRACKING_URI-unset}"; command -v prefect'
                    ' || echo "no prefect"')
    first, *rest = proc.stdout.splitlines()
    assert first == f"{clone.api} {clone.root}/.prefect sqlite:///{clone.root}/mlflow.db"
    assert rest[:3] == [str(clone.root / ".venv/bin" / n) for n in ("prefect", "python", "dvc")]
    assert rest[3:] == ["after:unset:unset", "no prefect"]


def test_every_line_make_where_prints_for_use_by_hand_works_in_a_fresh_shell(clone):
    proc = clone.sh(f"make where PARAMS={SMOKE}", activate=False)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    printed = out.split("`. .venv/bin/activate`", 1)[1].splitlines()[1:]
    printed = [line.strip() for line in printed if line.strip()]
    assert printed == by_hand(SMOKE, clone.mlflow_port), out
    assert f"http://127.0.0.1:{clone.prefect_port}" in out and f"http://127.0.0.1:{clone.mlflow_port}" in out
    deployment_run, cancel, retry, repro, mlflow_ui = printed

    # dvc repro as printed finds the pipeline (a dry run, before any generation: nothing to make)
    proc = clone.sh(f"{repro} --dry")
    assert proc.returncode == 0, proc.stdout + proc.stderr

    # mlflow ui as printed serves the workspace's database on its port (made here, before any run writes to it)
    ui = subprocess.Popen(clone.argv(f"exec {mlflow_ui}"), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          start_new_session=True)
    try:
        deadline, answered = time.time() + 240, False
        while time.time() < deadline and not answered and ui.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{clone.mlflow_port}/health", timeout=5) as r:
                    answered = r.status == 200
            except OSError:
                time.sleep(1)
        assert answered, ui.stderr.read().decode()[-3000:] if ui.poll() is not None else "no answer"
    finally:
        os.killpg(ui.pid, signal.SIGTERM)
        ui.wait(timeout=60)

    # the deployment as printed: its flow run names its params file and hash at its start; cancel as printed
    proc = clone.sh(deployment_run)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run_id = uuid_of(proc.stdout)
    assert f"'params_file': '{SMOKE}'" in proc.stdout
    deadline = time.time() + 300
    logs: list[str] = []
    while time.time() < deadline and not any(m.startswith(f"params: {SMOKE}") for m in logs):
        logs = [x["message"] for x in clone.post("logs/filter", {"logs": {"flow_run_id": {"any_": [run_id]}}})]
        time.sleep(1)
    from zero.config import load_params

    digest = load_params(REPO / SMOKE).digest()[:12]
    assert f"params: {SMOKE} ({TAG}, params hash {digest})" in logs, logs
    assert clone.cancel(run_id)["state"]["type"] == "CANCELLED"

    # retry as printed puts it back on the schedule; it is cancelled again as printed
    proc = clone.sh(retry.replace("<flow-run-id>", run_id))
    assert proc.returncode == 0 and "scheduled again" in proc.stdout, proc.stdout + proc.stderr
    clone.wait_state(run_id, {"PENDING", "RUNNING"} | FINAL, timeout=120)
    proc = clone.sh(cancel.replace("<flow-run-id>", run_id))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert clone.wait_state(run_id, FINAL, timeout=180)["state"]["type"] == "CANCELLED"


def test_the_bare_deployment_says_it_runs_params_yaml_before_it_starts(clone):
    proc = clone.sh("prefect deployment inspect zero-generation/local")
    assert proc.returncode == 0, proc.stderr
    assert "Without `--param params_file=...` it runs params.yaml" in proc.stdout
    assert "'params_file': 'params.yaml'" in proc.stdout  # the deployment's parameters, printed at every run


def test_a_refused_run_names_the_running_one_arrives_in_seconds_and_ends_cancelled(clone):
    holder = clone.start_holding()
    try:
        before = clone.flow_run_ids()
        started = time.time()
        proc = clone.sh(f"make run PARAMS={SLOW_PARAMS}", activate=False)
        seconds = time.time() - started
        print(f"make run refused in {seconds:.1f}s")
        assert proc.returncode != 0
        err = proc.stderr
        assert "refused, no run started" in err and f"prefect flow-run cancel {holder}" in err, err
        assert f"{clone.api[:-4]}/runs/flow-run/{holder}" in err
        assert clone.flow_run_ids() == before  # no second run was made, so none is left Failed
        assert "Traceback" not in proc.stdout + err

        # started by hand past the check, the flow itself refuses: Cancelled, with the same advice
        started = time.time()
        proc = clone.sh(f"prefect deployment run zero-generation/local --param params_file={SLOW_PARAMS}")
        second = uuid_of(proc.stdout)
        run = clone.wait_state(second, FINAL, timeout=300)
        print(f"the flow refused in {time.time() - started:.1f}s")
        assert run["state"]["type"] == "CANCELLED", run["state"]
        assert f"prefect flow-run cancel {holder}" in run["state"]["message"]
        assert "retry " + second not in run["state"]["message"]
        assert clone.flow_run(holder)["state"]["type"] == "RUNNING"  # the running one went on
    finally:
        assert clone.cancel(holder)["state"]["type"] == "CANCELLED"


def test_ctrl_c_on_make_run_cancels_the_run_and_says_how_to_resume_it(clone):
    # as from a terminal: SIGINT at its default, though this test may run where it is ignored (a background job)
    make = subprocess.Popen(clone.argv(f"make run PARAMS={CTRL_C_PARAMS}", activate=False), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    out = []
    try:
        deadline = time.time() + 300
        while time.time() < deadline:
            line = make.stdout.readline()
            out.append(line)
            if not line or ": Running" in line:
                break
        assert ": Running" in out[-1], "".join(out)
        run_id = re.search(r"\(([0-9a-f-]{36})\)", "".join(out)).group(1)
        os.killpg(make.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole foreground group
        rest, _ = make.communicate(timeout=180)
    finally:
        if make.poll() is None:
            os.killpg(make.pid, signal.SIGKILL)
    text = "".join(out) + rest
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text
    assert "Ctrl-C: cancelling flow run" in text and f"python -m flows.serve retry {run_id}" in text, text
    assert make.returncode != 0
    assert clone.wait_state(run_id, FINAL, timeout=60)["state"]["type"] == "CANCELLED"


@pytest.mark.parametrize("command", [["retry", "8d7e3c1e-0000-4000-8000-000000000000"],
                                     ["cancel", "8d7e3c1e-0000-4000-8000-000000000000"], ["reap"],
                                     ["run", SMOKE]])
def test_a_command_that_finds_no_server_says_make_up_in_one_line(tmp_path, command):
    root = make_workspace(tmp_path / "ws")
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([str(BIN / "python"), "-m", "flows.serve", "--root", str(root), "--port",
                           str(free_port()), *command], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "`make up`" in lines[0] and "no Prefect server answers" in lines[0], proc.stderr


def test_a_second_workspace_on_the_same_port_is_refused_naming_the_first(clone, tmp_path):
    other = make_workspace(tmp_path / "other")
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([str(BIN / "python"), "-m", "flows.serve", "--root", str(other), "--port",
                           str(clone.prefect_port), "up"], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    err = proc.stderr.strip()
    assert len(err.splitlines()) == 1 and "another workspace" in err, err
    assert f"{clone.root} (PREFECT_HOME={clone.root}/.prefect)" in err and "make down" in err, err
    suggested = int(re.search(r"PREFECT_PORT=(\d+)", err).group(1))
    assert suggested != clone.prefect_port
    assert not (other / ".prefect").exists() and not (other / ".dvc").exists()  # it started nothing there
    proc = clone.sh("python -m flows.serve up")  # the workspace's own server is still adopted
    assert proc.returncode == 0, proc.stdout + proc.stderr
