"""MLflow at the pipeline's edge: one run per generation, networks as files, the registry.

Tracking and registry share one SQLite database (`sqlite:///mlflow.db` at the
workspace root); artifacts go to `mlartifacts/` beside it. A network is logged
as `model/state_dict.pt` (plain tensors, read back with `weights_only=True`),
`model/config.json` (the NetConfig) and `model/meta.json`, never as a pickled
module or a pt2 export; `fetch_network` rebuilds the very same checkpoint file
from them, given a registry URI such as `models:/zero-go-9@champion`.

Every generation's candidate becomes a version of the registered model
`zero-<game tag>`; `promote` is the one function that moves the `champion` alias.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("DO_NOT_TRACK", "1")

import mlflow  # noqa: E402
from mlflow import MlflowClient  # noqa: E402
from mlflow.entities import Metric, Param, RunTag  # noqa: E402
from mlflow.exceptions import MlflowException  # noqa: E402

CHAMPION = "champion"
MODEL_DIR = "model"
TAG = "zero."  # prefix of every tag the pipeline sets


class RegistryError(RuntimeError):
    """The registry and the workspace disagree, or a registered network cannot be rebuilt."""


def tracking_uri(root: str | Path) -> str:
    """MLFLOW_TRACKING_URI if set, else the workspace's `sqlite:///<root>/mlflow.db`."""
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{Path(root).resolve() / 'mlflow.db'}"


def model_name(tag: str) -> str:
    """The registered model of a game line: `zero-go-9`."""
    return f"zero-{tag}"


def champion_uri(tag: str) -> str:
    return f"models:/{model_name(tag)}@{CHAMPION}"


class Tracker:
    """The MLflow client of one workspace and game line."""

    def __init__(self, root: str | Path, tag: str):
        self.root = Path(root).resolve()
        self.tag = tag
        self.uri = tracking_uri(self.root)
        mlflow.set_tracking_uri(self.uri)
        mlflow.set_registry_uri(self.uri)
        self.client = MlflowClient(self.uri, self.uri)
        self.model = model_name(tag)
        self.experiment_id = self._experiment()

    def _experiment(self) -> str:
        name = self.model
        exp = self.client.get_experiment_by_name(name)
        if exp is not None:
            return exp.experiment_id
        artifacts = (self.root / "mlartifacts").as_uri()
        try:
            return self.client.create_experiment(name, artifact_location=artifacts, tags={f"{TAG}game": self.tag})
        except MlflowException:  # created meanwhile by another process
            return self.client.get_experiment_by_name(name).experiment_id

    # --- runs -------------------------------------------------------------------------------

    def generation_run(self, g: int, params_digest: str, tags: dict[str, str]) -> tuple[str, bool]:
        """The run of generation g: the unfinished one a retried flow left, or a new one.

        Returns (run_id, resumed). A run that finished is reused as is (a
        re-run of a finished generation changes nothing); an unfinished one
        (status RUNNING, FAILED, KILLED) is resumed so the generation keeps one run.
        """
        runs = self.client.search_runs(
            [self.experiment_id],
            filter_string=f"tags.`{TAG}generation` = '{g}' and tags.`{TAG}params_hash` = '{params_digest}'",
            order_by=["attributes.start_time DESC"],
            max_results=1,
        )
        if runs:
            run = runs[0]
            if run.info.status != "RUNNING":
                self.client.update_run(run.info.run_id, status="RUNNING")
            return run.info.run_id, True
        run = self.client.create_run(
            self.experiment_id,
            run_name=f"{self.tag}-g{g:04d}",
            tags={f"{TAG}generation": str(g), f"{TAG}game": self.tag, f"{TAG}params_hash": params_digest, **tags},
        )
        return run.info.run_id, False

    def log_params(self, run_id: str, params: dict) -> None:
        """Every hyperparameter, flattened to `section.key` (idempotent for a resumed run)."""
        have = self.client.get_run(run_id).data.params
        flat = {k: _param_text(v) for k, v in flatten(params).items()}
        new = [Param(k, v) for k, v in flat.items() if k not in have]
        for i in range(0, len(new), 100):
            self.client.log_batch(run_id, params=new[i : i + 100])

    def set_tags(self, run_id: str, tags: dict) -> None:
        items = [RunTag(k, str(v)) for k, v in tags.items()]
        for i in range(0, len(items), 100):
            self.client.log_batch(run_id, tags=items[i : i + 100])

    def log_metrics(self, run_id: str, metrics: dict, step: int = 0) -> None:
        now = int(time.time() * 1000)
        items = [Metric(k, float(v), now, step) for k, v in metrics.items() if v is not None]
        for i in range(0, len(items), 500):
            self.client.log_batch(run_id, metrics=items[i : i + 500])

    def step_logger(self, run_id: str, flush_every: float = 5.0) -> "StepLogger":
        return StepLogger(self.client, run_id, flush_every)

    def log_artifacts(self, run_id: str, local: str | Path, artifact_path: str | None = None) -> None:
        local = Path(local)
        if local.is_dir():
            self.client.log_artifacts(run_id, str(local), artifact_path)
        else:
            self.client.log_artifact(run_id, str(local), artifact_path)

    def finish(self, run_id: str, status: str = "FINISHED") -> None:
        self.client.set_terminated(run_id, status)

    # --- networks ---------------------------------------------------------------------------

    def log_network(self, run_id: str, checkpoint: str | Path) -> None:
        """Log a checkpoint as model/state_dict.pt + model/config.json + model/meta.json."""
        with tempfile.TemporaryDirectory() as tmp:
            for path in checkpoint_to_files(checkpoint, tmp):
                self.client.log_artifact(run_id, str(path), MODEL_DIR)

    # --- registry ---------------------------------------------------------------------------

    def champion(self):
        """The ModelVersion the `champion` alias points to, or None before generation 0 is registered."""
        try:
            return self.client.get_model_version_by_alias(self.model, CHAMPION)
        except MlflowException:
            return None

    def versions(self) -> list:
        return sorted(
            self.client.search_model_versions(f"name = '{self.model}'"), key=lambda v: int(v.version)
        )

    def version_for_run(self, run_id: str):
        for v in self.versions():
            if v.run_id == run_id:
                return v
        return None

    def register(self, run_id: str, tags: dict, description: str = ""):
        """A new version of `zero-<tag>` from the run's model/ artifacts (idempotent per run)."""
        existing = self.version_for_run(run_id)
        if existing is not None:
            for k, v in tags.items():
                self.client.set_model_version_tag(self.model, existing.version, k, str(v))
            return self.client.get_model_version(self.model, existing.version)
        try:
            self.client.create_registered_model(
                self.model, description=f"zero networks for {self.tag}; alias `{CHAMPION}` is the best player"
            )
        except MlflowException:
            pass  # already registered
        return self.client.create_model_version(
            self.model,
            source=f"runs:/{run_id}/{MODEL_DIR}",
            run_id=run_id,
            tags={k: str(v) for k, v in tags.items()},
            description=description,
        )

    def promote(self, version: str | int, reason: str) -> None:
        """Move the `champion` alias to a version: the only place the alias ever moves."""
        self.client.set_registered_model_alias(self.model, CHAMPION, str(version))
        self.client.set_model_version_tag(self.model, str(version), f"{TAG}promoted", reason)

    def fetch_network(self, uri: str, out: str | Path) -> Path:
        """Rebuild the checkpoint file of a registry URI (`models:/zero-go-9@champion`) at `out`."""
        with tempfile.TemporaryDirectory() as tmp:
            local = mlflow.artifacts.download_artifacts(artifact_uri=uri, dst_path=tmp, tracking_uri=self.uri)
            files_to_checkpoint(local, out)
        return Path(out)


class StepLogger:
    """Buffers per-step training metrics and sends them in batches every few seconds."""

    def __init__(self, client: MlflowClient, run_id: str, flush_every: float = 5.0):
        self.client, self.run_id, self.flush_every = client, run_id, flush_every
        self.buffer: list[Metric] = []
        self.last = time.monotonic()

    def __call__(self, step: int, metrics: dict) -> None:
        now = int(time.time() * 1000)
        self.buffer.extend(Metric(k, float(v), now, step) for k, v in metrics.items())
        if time.monotonic() - self.last >= self.flush_every:
            self.flush()

    def flush(self) -> None:
        while self.buffer:
            batch, self.buffer = self.buffer[:1000], self.buffer[1000:]
            self.client.log_batch(self.run_id, metrics=batch)
        self.last = time.monotonic()


def checkpoint_to_files(checkpoint: str | Path, out_dir: str | Path) -> list[Path]:
    """Split a zero checkpoint into state_dict.pt, config.json and meta.json."""
    import torch

    from zero.network import load_checkpoint

    load_checkpoint(checkpoint)  # refuses a corrupt or foreign file with CheckpointError
    blob = torch.load(checkpoint, map_location="cpu", weights_only=True)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / "state_dict.pt", out_dir / "config.json", out_dir / "meta.json"]
    torch.save(blob["state_dict"], paths[0])
    paths[1].write_text(json.dumps(blob["config"], sort_keys=True, indent=1) + "\n")
    # meta keeps its key order: the rebuilt checkpoint must pickle to the same bytes.
    paths[2].write_text(json.dumps(blob.get("meta", {}), indent=1) + "\n")
    return paths


def files_to_checkpoint(model_dir: str | Path, out: str | Path) -> Path:
    """Rebuild a checkpoint (atomically) from state_dict.pt + config.json + meta.json."""
    import torch

    from zero.network import CheckpointError, net_from_parts, save_checkpoint

    model_dir = Path(model_dir)
    try:
        state_dict = torch.load(model_dir / "state_dict.pt", map_location="cpu", weights_only=True)
        config = json.loads((model_dir / "config.json").read_text())
        meta = json.loads((model_dir / "meta.json").read_text())
    except Exception as e:  # missing file, bad JSON, or a pickle that is more than tensors
        raise RegistryError(f"{model_dir}: not a logged zero network ({type(e).__name__}: {str(e)[:200]})") from None
    try:
        net = net_from_parts(config, state_dict)
    except CheckpointError as e:
        raise RegistryError(f"{model_dir}: {e}") from None
    save_checkpoint(net, out, meta)
    return Path(out)


def flatten(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def _param_text(v) -> str:
    return json.dumps(v) if isinstance(v, (list, dict)) else str(v)
