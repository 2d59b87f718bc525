"""Shared set-up of the pipeline tests: a throwaway workspace (git + DVC repo) with the smoke params."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORKSPACE_FILES = ("dvc.yaml", "params-smoke.yaml", ".dvcignore")
SMOKE = "params-smoke.yaml"
TAG = "gomoku-6x6x4"  # the smoke params' line
BIN = Path(sys.executable).parent

# Settings a developer's shell or the Makefile may carry that must not reach a test's own services.
LEAKY_ENV = ("PREFECT_HOME", "PREFECT_API_URL", "PREFECT_PROFILE", "ZERO_PREFECT_PORT", "MLFLOW_TRACKING_URI",
             "MLFLOW_REGISTRY_URI", "ZERO_DVC_REMOTE")


def selfplay_sgf_games(games_dir: Path) -> int:
    """The games in a generation's self-play SGFs (`games/sgf/shard-00k/shard-00k.sgf.gz`, one collection a
    shard); fails on a one-game `.sgf` file there, the layout before the collections."""
    from zero.sgf import read_collection

    assert not list((games_dir / "sgf").rglob("*.sgf")), "one-game SGF files beside the shards' collections"
    return sum(len(read_collection(p)) for p in (games_dir / "sgf").rglob("shard-*.sgf.gz"))


def make_workspace(path: Path) -> Path:
    """A fresh workspace: the repository's dvc.yaml and smoke params, an empty generations list, git."""
    path.mkdir(parents=True, exist_ok=True)
    for name in WORKSPACE_FILES:
        shutil.copy(REPO / name, path / name)
    (path / "generations.yaml").write_text("generations: {}\nlines: {}\n")
    subprocess.run(["git", "init", "-q"], cwd=path, check=True)
    return path


def smoke_line(root: Path, overrides: list[str], generations: int = 2) -> tuple:
    """Generations 0..generations-1 of the smoke line in workspace `root` (params snapshots written, listed in
    generations.yaml, generation 0 initialised), the smoke params with `overrides`: (params, [gen0, gen1, ...])."""
    import yaml

    from flows import stages
    from flows.layout import Workspace
    from zero.config import load_params

    params = load_params(REPO / SMOKE, overrides)
    ws = Workspace(root)
    gens = [ws.generation(params.game.tag, g) for g in range(generations)]
    for gen in gens:
        gen.dir.mkdir(parents=True)
        gen.params_file.write_text(yaml.safe_dump(params.model_dump(mode="json")))
        ws.register(gen)
    stages.init(gens[0])
    return params, gens


def isolate_env(monkeypatch, root: Path) -> None:
    for name in LEAKY_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PREFECT_HOME", str(root / ".prefect"))
    monkeypatch.setenv("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    monkeypatch.setenv("DVC_NO_ANALYTICS", "1")
    monkeypatch.setenv("DO_NOT_TRACK", "1")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_env_for(root: Path, port: int | None = None) -> dict:
    """os.environ without leaky settings, plus the workspace's own (for subprocesses)."""
    from flows.servers import prefect_env

    env = {k: v for k, v in os.environ.items() if k not in LEAKY_ENV}
    saved = {k: os.environ.pop(k) for k in LEAKY_ENV if k in os.environ}
    try:
        env.update(prefect_env(root, port))
    finally:
        os.environ.update(saved)
    return env


class PrefectApi:
    """Reads of the Prefect server whose REST API is at `self.api`."""

    api: str

    def flow_run(self, run_id: str) -> dict:
        with urllib.request.urlopen(f"{self.api}/flow_runs/{run_id}", timeout=10) as r:
            return json.loads(r.read())

    def post(self, what: str, body: dict) -> list[dict]:
        req = urllib.request.Request(f"{self.api}/{what}", data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())

    def _filter(self, what: str, body: dict) -> list[dict]:
        return self.post(f"{what}/filter", body)

    def wait_state(self, run_id: str, types: set[str], timeout: float = 300) -> dict:
        deadline = time.time() + timeout
        while time.time() < deadline:
            run = self.flow_run(run_id)
            if run["state"] and run["state"]["type"] in types:
                return run
            time.sleep(1)
        raise AssertionError(f"flow run {run_id} not in {types} after {timeout}s: {self.flow_run(run_id)['state']}")


class Pipeline(PrefectApi):
    """The workspace's services and the commands a person would type."""

    def __init__(self, root: Path, port: int):
        self.root, self.port = root, port
        self.env = clean_env_for(root, port)
        self.env["PATH"] = f"{BIN}{os.pathsep}{self.env.get('PATH', '')}"  # the venv is active, as `make repro` has it
        self.api = self.env["PREFECT_API_URL"]

    def sh(self, *args, check=True, timeout=600) -> subprocess.CompletedProcess:
        proc = subprocess.run(list(args), cwd=self.root, env=self.env, capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)
        if check and proc.returncode != 0:
            raise AssertionError(f"{' '.join(args)} exited {proc.returncode}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
        return proc

    def serve(self, *args, **kw):
        return self.sh(str(BIN / "python"), "-m", "flows.serve", "--root", str(self.root), "--port", str(self.port),
                       *args, **kw)

    def deployment_run(self, *params: str, watch: bool = True, check=True) -> tuple[str, subprocess.CompletedProcess]:
        cmd = [str(BIN / "prefect"), "deployment", "run", "zero-generation/local"]
        for p in params:
            cmd += ["--param", p]
        if watch:
            cmd += ["--watch", "--watch-interval", "2", "--watch-timeout", "900"]
        proc = self.sh(*cmd, check=check, timeout=960)
        match = re.search(r"UUID: ([0-9a-f-]{36})", proc.stdout)
        assert match, proc.stdout
        return match.group(1), proc

    def task_runs(self, run_id: str) -> list[dict]:
        return self._filter("task_runs", {"flow_runs": {"id": {"any_": [run_id]}}})

    def artifacts(self, run_id: str) -> list[dict]:
        """The flow run's artifacts (its steps' progress artifacts among them)."""
        return self._filter("artifacts", {"artifacts": {"flow_run_id": {"any_": [run_id]}}})

    def tracker(self):
        from flows.tracking import Tracker

        saved = os.environ.pop("MLFLOW_TRACKING_URI", None)
        try:
            return Tracker(self.root, TAG)
        finally:
            if saved is not None:
                os.environ["MLFLOW_TRACKING_URI"] = saved
