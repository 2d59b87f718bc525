"""Shared set-up of the pipeline tests: a throwaway workspace (git + DVC repo) with the smoke params."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORKSPACE_FILES = ("dvc.yaml", "params-smoke.yaml", ".dvcignore")
SMOKE = "params-smoke.yaml"

# Settings a developer's shell or the Makefile may carry that must not reach a test's own services.
LEAKY_ENV = ("PREFECT_HOME", "PREFECT_API_URL", "PREFECT_PROFILE", "ZERO_PREFECT_PORT", "MLFLOW_TRACKING_URI",
             "MLFLOW_REGISTRY_URI", "ZERO_DVC_REMOTE")


def make_workspace(path: Path) -> Path:
    """A fresh workspace: the repository's dvc.yaml and smoke params, an empty generations list, git."""
    path.mkdir(parents=True, exist_ok=True)
    for name in WORKSPACE_FILES:
        shutil.copy(REPO / name, path / name)
    (path / "generations.yaml").write_text("generations: {}\nlines: {}\n")
    subprocess.run(["git", "init", "-q"], cwd=path, check=True)
    return path


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
