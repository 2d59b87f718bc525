"""`make mlflow-ui`: MLflow's app whose page opens in the model-training view, served by one process, and what a
browser shows of a line's runs (where Playwright and a Chromium are installed; skipped elsewhere)."""

import importlib.util
import json
import os
import urllib.request
from pathlib import Path

import pytest

from pipeline_support import LEAKY_ENV, REPO, TAG, free_port

SPEC = importlib.util.spec_from_file_location("mlflow_ui_check", REPO / "infra" / "mlflow_ui_check.py")
check = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(check)


def mlflow_page() -> str:
    from mlflow.server import app

    return (Path(app.static_folder) / "index.html").read_text()


def test_the_page_sets_the_defaults_before_the_ui_starts():
    from flows.mlflow_ui import NOTICE_KEY, WORKFLOW_KEY, defaults_script, with_defaults

    page = with_defaults(mlflow_page(), telemetry_off=True)
    ours = page.index(defaults_script(True))
    assert ours < page.index("<script defer")  # before MLflow's own bundle reads local storage
    assert page.replace(defaults_script(True), "") == mlflow_page()  # nothing else changed
    assert f'if (s.getItem("{WORKFLOW_KEY}") === null) s.setItem("{WORKFLOW_KEY}", "\\"machine_learning\\"")' in page
    assert NOTICE_KEY in defaults_script(True) and NOTICE_KEY not in defaults_script(False)
    with pytest.raises(ValueError, match="no <head>"):
        with_defaults("<html><body></body></html>", telemetry_off=True)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A line's experiment with three generations' runs (their metrics as a generation logs them), served by
    `make mlflow-ui` on a free port: (the UI's address, the workspace, the server's start)."""
    from flows.tracking import GENERATION_COLUMNS, Tracker

    root = tmp_path_factory.mktemp("ui")
    store = f"sqlite:///{root / 'mlflow.db'}"
    tracker = Tracker(root, TAG, uri=store)
    for g in range(1, 4):
        run_id, _ = tracker.generation_run(g, "h", {})
        tracker.log_metrics(run_id, {key: 0.5 + g for _, key in GENERATION_COLUMNS})
        tracker.finish(run_id)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in LEAKY_ENV}
    env["MLFLOW_DISABLE_TELEMETRY"] = "true"
    cmd = ["make", "--no-print-directory", "-o", "install", "mlflow-ui", f"MLFLOW_TRACKING_URI={store}",
           f"MLFLOW_PORT={port}"]
    started, proc = check.time_to_serve(cmd, f"http://127.0.0.1:{port}/", env, timeout=600)
    try:
        yield f"http://127.0.0.1:{port}", root, started
    finally:
        check.stop(proc)


@pytest.mark.slow
def test_make_mlflow_ui_serves_mlflows_api_and_its_page_from_one_worker(served):
    from flows.mlflow_ui import WORKFLOW_KEY

    ui, root, started = served
    # make, the mlflow command and its one uvicorn worker: no worker pool, no job runner and its huey consumers
    assert started["processes"] <= 3, started
    with urllib.request.urlopen(ui + "/", timeout=30) as r:
        assert WORKFLOW_KEY in r.read().decode()
    with urllib.request.urlopen(ui + "/ajax-api/2.0/mlflow/experiments/search?max_results=10", timeout=30) as r:
        names = [e["name"] for e in json.loads(r.read())["experiments"]]
    assert f"zero-{TAG}" in names


@pytest.mark.slow
@pytest.mark.skipif(check.chromium() is None or importlib.util.find_spec("playwright") is None,
                    reason="needs Playwright (pip install playwright) and a Chromium "
                           "(apt-get install chromium-headless-shell)")
def test_a_browser_sees_the_metrics_columns_the_training_view_and_no_usage_notice(served):
    from flows.tracking import GENERATION_COLUMNS, Tracker, runs_url

    ui, root, _ = served
    tracker = Tracker(root, TAG, uri=f"sqlite:///{root / 'mlflow.db'}")
    failed = check.browser_checks(ui, runs_url(ui, tracker.experiment_id), [k for _, k in GENERATION_COLUMNS], None)
    assert not failed
