"""The team deployment's services on one machine: PostgreSQL behind Prefect and MLflow, a process work pool.

Starts its own PostgreSQL cluster in a temporary directory (as a non-root user
when the tests run as root: PostgreSQL refuses root), with the `prefect` and
`mlflow` databases of infra/docker-compose.yml; a Prefect server on the first
and an MLflow tracking server on the second, its artifacts in a temporary
folder; the work pool `zero`, the `cluster` deployment of infra/prefect.yaml
and a process worker. Then one smoke generation is triggered as a team member
would, and read back through Prefect's API, MlflowClient over http, and the
PostgreSQL tables themselves. Skipped where PostgreSQL's binaries are absent.
"""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from pipeline_support import BIN, LEAKY_ENV, REPO, SMOKE, TAG, make_workspace

pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.timeout(1200)]

# Ports away from a developer's own services (Prefect 4200, MLflow 5000, PostgreSQL 5432).
PREFECT_PORTS, MLFLOW_PORTS, POSTGRES_PORTS = range(4300, 4400), range(5300, 5400), range(5433, 5500)
DB_USER = "zero"


def postgres_bin() -> Path | None:
    """The bin directory of the newest installed PostgreSQL (Debian's /usr/lib/postgresql/N/bin), or initdb's."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name)
                   if p.parent.parent.name.isdigit() else 0)
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


PG_BIN = postgres_bin()
if PG_BIN is None:
    pytest.skip("PostgreSQL is not installed (no initdb; apt-get install postgresql-15)", allow_module_level=True)


def free_port(ports: range) -> int:
    for port in ports:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {ports.start}-{ports.stop - 1} on 127.0.0.1")


def postgres_account() -> dict:
    """Popen arguments that run PostgreSQL as a non-root user when the tests run as root."""
    if os.geteuid() != 0:
        return {}
    for name in ("postgres", "nobody"):
        try:
            pw = pwd.getpwnam(name)
        except KeyError:
            continue
        return {"user": pw.pw_uid, "group": pw.pw_gid, "extra_groups": []}
    pytest.skip("running as root and neither a postgres nor a nobody account exists for PostgreSQL")


def wait_for(what: str, ok, timeout: float, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if ok():
            return
        if proc.poll() is not None:
            raise AssertionError(f"{what} exited {proc.returncode}:\n{log.read_text()[-4000:]}")
        time.sleep(0.5)
    raise AssertionError(f"{what} not up after {timeout}s:\n{log.read_text()[-4000:]}")


def http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


class Team:
    """PostgreSQL, a Prefect server and an MLflow server, all on 127.0.0.1, all state in one temporary folder."""

    def __init__(self):
        # Under the system's temp folder, not pytest's (mode 0700, owned by root): PostgreSQL's user must enter it.
        self.dir = Path(tempfile.mkdtemp(prefix="zero-team-"))
        self.procs: list[tuple[subprocess.Popen, int]] = []  # (process, signal that stops it cleanly)
        self.pg_port, self.prefect_port, self.mlflow_port = (free_port(r) for r in
                                                             (POSTGRES_PORTS, PREFECT_PORTS, MLFLOW_PORTS))
        self.api = f"http://127.0.0.1:{self.prefect_port}/api"
        self.mlflow_uri = f"http://127.0.0.1:{self.mlflow_port}"
        self.artifacts = self.dir / "artifacts"
        self.env = {k: v for k, v in os.environ.items() if k not in LEAKY_ENV}
        self.env.update({
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "PYTHONPATH": str(REPO),  # the flows of this checkout, in the worker's flow-run processes too
            "PREFECT_HOME": str(self.dir / "prefect-home"),
            "PREFECT_API_URL": self.api,
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "MLFLOW_TRACKING_URI": self.mlflow_uri,
            "MLFLOW_DISABLE_TELEMETRY": "true",
            "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false",
            "DVC_NO_ANALYTICS": "1",
            "DO_NOT_TRACK": "1",
            "ZERO_WORKDIR": str(REPO),
        })

    def db_url(self, db: str, driver: str = "postgresql") -> str:
        return f"{driver}://{DB_USER}@127.0.0.1:{self.pg_port}/{db}"

    def spawn(self, name: str, cmd: list[str], stop=signal.SIGTERM, **kw) -> tuple[subprocess.Popen, Path]:
        log = self.dir / f"{name}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True, **kw)
        self.procs.append((proc, stop))
        return proc, log

    def start_postgres(self) -> None:
        account = postgres_account()
        data, sockets = self.dir / "pgdata", self.dir / "pgsocket"
        sockets.mkdir()
        if account:
            for path in (self.dir, sockets):
                os.chown(path, account["user"], account["group"])
        subprocess.run([str(PG_BIN / "initdb"), "-D", str(data), "-U", DB_USER, "--auth=trust", "-E", "UTF8",
                        "--locale=C", "--no-sync"], cwd=self.dir, check=True, capture_output=True, **account)
        proc, log = self.spawn("postgres", [str(PG_BIN / "postgres"), "-D", str(data), "-h", "127.0.0.1",
                                            "-p", str(self.pg_port), "-k", str(sockets), "-c", "fsync=off"],
                               stop=signal.SIGINT, cwd=self.dir, **account)  # SIGINT: PostgreSQL's fast shutdown
        wait_for("PostgreSQL", lambda: self._pg_ready(), 60, proc, log)
        with self.connect("postgres") as conn:
            conn.autocommit = True
            for db in ("prefect", "mlflow"):
                conn.execute(f"CREATE DATABASE {db}")

    def _pg_ready(self) -> bool:
        return subprocess.run([str(PG_BIN / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(self.pg_port)]).returncode == 0

    def connect(self, db: str):
        import psycopg

        return psycopg.connect(self.db_url(db))

    def query(self, db: str, sql: str, *args) -> list[tuple]:
        with self.connect(db) as conn:
            return conn.execute(sql, args).fetchall()

    def start_servers(self) -> None:
        prefect, prefect_log = self.spawn(
            "prefect-server", [str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1",
                               "--port", str(self.prefect_port)],
            env={**self.env, "PREFECT_API_DATABASE_CONNECTION_URL": self.db_url("prefect", "postgresql+asyncpg")})
        mlflow, mlflow_log = self.spawn(
            "mlflow-server", [str(BIN / "mlflow"), "server", "--backend-store-uri", self.db_url("mlflow"),
                              "--artifacts-destination", str(self.artifacts), "--host", "127.0.0.1",
                              "--port", str(self.mlflow_port), "--workers", "1"], env=self.env)
        wait_for("the Prefect server", lambda: http_ok(f"{self.api}/health"), 180, prefect, prefect_log)
        wait_for("the MLflow server", lambda: http_ok(f"{self.mlflow_uri}/health"), 240, mlflow, mlflow_log)

    def sh(self, *args: str, timeout: float = 300) -> str:
        proc = subprocess.run(list(args), cwd=REPO, env=self.env, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, f"{' '.join(args)} exited {proc.returncode}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
        return proc.stdout

    def stop(self) -> None:
        for proc, sig in reversed(self.procs):  # the worker and servers first, PostgreSQL last
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, sig)
                    proc.wait(timeout=30)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    proc.wait(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)


# About 75 s on a free core, up to 140 s on a core shared with the other test worker: a PostgreSQL cluster made
# by initdb, Prefect and MLflow servers migrating their schemas into it, a work pool and a process worker.
@pytest.fixture(scope="module")
def team():
    t = Team()
    try:
        t.start_postgres()
        t.start_servers()
        yield t
    finally:
        t.stop()


@pytest.fixture(scope="module")
def generation(team, tmp_path_factory):
    """One smoke generation of the `cluster` deployment, run by a process worker of the pool `zero`."""
    ws = make_workspace(tmp_path_factory.mktemp("team") / "ws")
    prefect = str(BIN / "prefect")
    team.sh(prefect, "work-pool", "create", "zero", "--type", "process")
    team.sh(prefect, "--no-prompt", "deploy", "--prefect-file", "infra/prefect.yaml", "--name", "cluster")
    team.spawn("worker", [prefect, "worker", "start", "--pool", "zero", "--type", "process", "--limit", "1",
                          "--install-policy", "never"], env=team.env, cwd=REPO)
    out = team.sh(prefect, "deployment", "run", "zero-generation/cluster", "--param", f"params_file={SMOKE}",
                  "--param", f"workdir={ws}", "--watch", "--watch-interval", "2", "--watch-timeout", "900",
                  timeout=960)
    match = re.search(r"UUID: ([0-9a-f-]{36})", out)
    assert match, out
    record = json.loads((ws / "gens" / TAG / "g0001" / "generation.json").read_text())
    return match.group(1), record


def test_the_flow_run_completed_in_the_prefect_server_on_postgresql(team, generation):
    flow_run_id, record = generation
    with urllib.request.urlopen(f"{team.api}/flow_runs/{flow_run_id}", timeout=10) as r:
        run = json.loads(r.read())
    assert run["state"]["type"] == "COMPLETED"
    assert record["flow_run_id"] == flow_run_id
    rows = team.query("prefect", "SELECT state_type FROM flow_run WHERE id = %s", flow_run_id)
    assert [str(s).split(".")[-1] for s, in rows] == ["COMPLETED"]
    tasks = team.query("prefect", "SELECT name, state_type FROM task_run WHERE flow_run_id = %s", flow_run_id)
    names = {name.rsplit("-", 1)[0] for name, _ in tasks}
    assert {"selfplay-shard", "train", "gate-part"} <= names, names
    assert all(str(s).endswith("COMPLETED") for _, s in tasks), tasks
    assert team.query("prefect", "SELECT count(*) FROM deployment WHERE name = 'cluster'") == [(1,)]


def test_the_mlflow_run_and_registry_are_in_the_tracking_server_on_postgresql(team, generation):
    from mlflow import MlflowClient

    _, record = generation
    client = MlflowClient(team.mlflow_uri, team.mlflow_uri)
    run = client.get_run(record["mlflow_run_id"])
    assert run.info.status == "FINISHED" and run.data.tags["zero.generation"] == "1"
    assert run.info.artifact_uri.startswith("mlflow-artifacts:")  # kept by the server, not by the worker
    assert len(client.get_metric_history(run.info.run_id, "loss")) == 20
    assert "gate_win_rate" in run.data.metrics
    versions = {v.version: v for v in client.search_model_versions(f"name = 'zero-{TAG}'")}
    assert set(versions) == {"1", "2"} and versions["2"].run_id == run.info.run_id
    champion = client.get_model_version_by_alias(f"zero-{TAG}", "champion")
    assert champion.version == record["champion_after"]["version"]

    # the rows themselves
    q = team.query
    assert q("mlflow", "SELECT status FROM runs WHERE run_uuid = %s", run.info.run_id) == [("FINISHED",)]
    assert q("mlflow", "SELECT count(*) FROM metrics WHERE run_uuid = %s AND key = 'loss'", run.info.run_id) == [(20,)]
    assert q("mlflow", "SELECT version FROM model_versions WHERE name = %s AND run_id = %s",
             f"zero-{TAG}", run.info.run_id) == [(2,)]
    assert q("mlflow", "SELECT count(*) FROM experiments WHERE name = %s AND artifact_location LIKE %s",
             f"zero-{TAG}", "mlflow-artifacts:%") == [(1,)]

    # the candidate's network, on the server's artifact store and downloaded through it
    stored = list(team.artifacts.rglob(f"{run.info.run_id}/artifacts/model/network.pt"))
    assert len(stored) == 1
    local = client.download_artifacts(run.info.run_id, "model/network.pt", str(team.dir))
    sha = hashlib.sha256(Path(local).read_bytes()).hexdigest()
    assert sha == hashlib.sha256(stored[0].read_bytes()).hexdigest() == versions["2"].tags["zero.checkpoint_sha256"]
