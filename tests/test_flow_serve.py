"""The command line of the pipeline: params checks and the flow's parameter model."""

import pytest
from pydantic import ValidationError

from flows.request import GenerationRequest
from flows.serve import main
from pipeline_support import REPO, SMOKE


def test_check_accepts_the_shipped_params_files(capsys):
    for name in ("params.yaml", SMOKE):
        assert main(["--root", str(REPO), "check", name]) == 0
    out = capsys.readouterr().out
    assert "params.yaml: ok (go-9" in out and f"{SMOKE}: ok (gomoku-6x6x4" in out


@pytest.mark.parametrize("text,field", [
    ("selfplay:\n  visitz: 3\n", "selfplay.visitz: unknown key"),
    ("train:\n  steps: 0\n", "train.steps"),
    ("pipeline:\n  selfplay_shards: many\n", "pipeline.selfplay_shards"),
    ("gamez: {}\n", "gamez: unknown key"),
])
def test_check_names_the_bad_field(tmp_path, capsys, text, field):
    (tmp_path / "bad.yaml").write_text(text)
    assert main(["--root", str(tmp_path), "check", "bad.yaml"]) == 2
    assert field in capsys.readouterr().err


def test_an_override_is_checked_like_the_file(capsys):
    assert main(["--root", str(REPO), "check", SMOKE, "--set", "gate.threshold=2"]) == 2
    assert "gate.threshold" in capsys.readouterr().err


def test_the_flow_parameters_are_validated(tmp_path):
    with pytest.raises(ValidationError, match="generation"):
        GenerationRequest(generation=0)
    with pytest.raises(ValidationError, match="extra"):
        GenerationRequest(params="x.yaml")
    req = GenerationRequest(params_file=SMOKE, overrides=["train.steps=3"], workdir=str(REPO))
    assert req.load().train.steps == 3 and req.root() == REPO


def make_where(root, params=SMOKE, **env):
    """`make where` in a workspace, with this venv's python and without reinstalling it."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from pipeline_support import clean_env_for

    run_env = clean_env_for(root)
    for name in ("PREFECT_HOME", "PREFECT_API_URL", "ZERO_PREFECT_PORT", "MLFLOW_TRACKING_URI", "MLFLOW_PORT"):
        run_env.pop(name, None)  # the Makefile sets them for the workspace
    run_env.update(env)
    proc = subprocess.run(
        ["make", "-s", "-f", str(REPO / "Makefile"), "-o", ".venv/.zero-installed", "where", f"PARAMS={params}",
         f"BIN={Path(sys.executable).parent}"],
        cwd=root, env={**run_env, "PATH": os.environ["PATH"]}, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_make_where_only_reads_and_prints_the_mlflow_port(tmp_path, monkeypatch):
    import shutil

    from pipeline_support import isolate_env

    isolate_env(monkeypatch, tmp_path)
    shutil.copy(REPO / SMOKE, tmp_path / SMOKE)
    from flows.tracking import Tracker

    Tracker(tmp_path, "go-9")  # a tracking database with another line's experiment
    out = make_where(tmp_path, MLFLOW_PORT="5123")
    assert "http://127.0.0.1:5123" in out and ":5000" not in out
    assert "no runs yet" in out
    client = Tracker(tmp_path, "go-9").client
    assert client.get_experiment_by_name("zero-gomoku-6x6x4") is None  # where created nothing

    experiment = Tracker(tmp_path, "gomoku-6x6x4").experiment_id
    out = make_where(tmp_path)
    assert f"http://127.0.0.1:5000/#/experiments/{experiment}/runs?workflowType=machine_learning" in out


def test_make_where_names_the_workspace_s_other_lines_when_its_own_has_none(tmp_path, monkeypatch):
    """After the smoke run (a Gomoku line), `make where` with the default 9x9 params says where the runs are."""
    import shutil

    from flows.layout import Workspace
    from pipeline_support import isolate_env

    isolate_env(monkeypatch, tmp_path)
    shutil.copy(REPO / SMOKE, tmp_path / SMOKE)
    (tmp_path / "params.yaml").write_text("game:\n  name: go\n  size: 9\n")
    Workspace(tmp_path).register(Workspace(tmp_path).generation("gomoku-6x6x4", 0))
    out = make_where(tmp_path, params="params.yaml")
    assert "no generation of go-9 yet; this workspace has gomoku-6x6x4" in out
