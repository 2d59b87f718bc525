"""`make mlflow-ui`'s server: MLflow's own app, whose page starts the browser in the model-training view.

MLflow 3.17's UI picks its view (*GenAI apps & agents* or *Model training*) from the URL's
`workflowType` or, failing that, from the browser's local storage (`mlflow.workflowType_v1`, GenAI
when unset); it does not read the experiment's `mlflow.experimentKind` tag. A link that carries
`workflowType=machine_learning` opens the runs in the training view, but the UI's own links (a run,
the experiment) do not carry it, so a click switched back to GenAI. Its "MLflow collects usage data"
notice shows until the browser holds `mlflow.telemetry.info.alert.dismissed_v1`, whatever the server's
telemetry setting.

This app is MLflow's (`mlflow.server.fastapi_app`, every route as is) with one change: the page
(index.html) sets those keys before the UI starts. The view is set only where the browser has none
(a person's own choice in the UI's switch stands); the notice is dismissed only when telemetry is off
(MLFLOW_DISABLE_TELEMETRY), where it would be untrue. The assistant's panel, which opened by itself
on a first visit over a third of the runs list, stays closed until its button is clicked. It is the
`mlflow.app` entry point `zero` (pyproject.toml): `mlflow server --app-name zero`.
"""

from __future__ import annotations

import json

WORKFLOW_KEY = "mlflow.workflowType_v1"  # the UI's useLocalStorage key `mlflow.workflowType`, version 1
TRAINING_VIEW = "machine_learning"
NOTICE_KEY = "mlflow.telemetry.info.alert.dismissed_v1"  # `mlflow.telemetry.info.alert.dismissed`, version 1
# Set, the assistant's panel is not opened by itself on the first visit (it took a third of the runs list)
ASSISTANT_KEY = "mlflow.assistant.fab.autoOpenedOnFirstLoad_v1"


def defaults_script(telemetry_off: bool) -> str:
    """The <script> that sets the browser's defaults for the UI (values JSON-encoded, as the UI stores them)."""
    unset = {WORKFLOW_KEY: json.dumps(TRAINING_VIEW), ASSISTANT_KEY: "true"}
    lines = [f"if (s.getItem({json.dumps(k)}) === null) s.setItem({json.dumps(k)}, {json.dumps(v)});"
             for k, v in unset.items()]
    if telemetry_off:
        lines.append(f"s.setItem({json.dumps(NOTICE_KEY)}, 'true');")
    body = " ".join(lines)
    return f"<script>(function () {{ try {{ var s = window.localStorage; {body} }} catch (e) {{}} }})();</script>"


def with_defaults(index_html: str, telemetry_off: bool) -> str:
    """index.html with the defaults script first in <head>, so it runs before the UI's own scripts."""
    if "<head>" not in index_html:
        raise ValueError("MLflow's index.html has no <head>: cannot add the UI's defaults")
    return index_html.replace("<head>", "<head>" + defaults_script(telemetry_off), 1)


def create_app():
    """MLflow's ASGI app with its page served with the defaults (uvicorn calls this: `--factory`)."""
    import os

    from flask import Response
    from mlflow.server import app as flask_app
    from mlflow.server.fastapi_app import app
    from mlflow.telemetry.utils import is_telemetry_disabled

    page = os.path.join(flask_app.static_folder, "index.html")
    with open(page, encoding="utf-8") as f:
        html = with_defaults(f.read(), is_telemetry_disabled())

    def serve():
        return Response(html, mimetype="text/html")

    flask_app.view_functions["serve"] = serve  # the route MLflow registers for its page, at "/" (or its prefix)
    return app  # MLflow's FastAPI app, which mounts that Flask app
