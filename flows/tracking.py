"""MLflow at the pipeline's edge: one run per generation, networks as files, the registry.

Tracking and registry share one SQLite database (`sqlite:///mlflow.db` at the
workspace root); artifacts go to `mlartifacts/` beside it. With
MLFLOW_TRACKING_URI set to a tracking server (`http://mlflow:5000`, a team's
server on PostgreSQL) both live there, artifacts where that server stores them.

A network is logged as the very checkpoint file the pipeline plays,
`model/network.pt` (plain tensors, config and meta, read back with
`weights_only=True`, never a pickled module), with its sha256 in `model/network.sha256`; `fetch_network` downloads
it for a registry URI such as `models:/zero-go-9@champion` and checks it by
that hash and by the checkpoint's own content check before writing it out.

Every generation's candidate becomes a version of the registered model
`zero-<game tag>`; `promote` is the one function that moves the `champion` alias.

The second half is what a generation records: its facts (params hash, seeds,
code state, flow run), computed once when it starts and passed along; the
tags and metrics of its run and model version; the registration of
generation 0; and the promotion rule (register every candidate, move the alias
only to one that passed its gate). flows.generation calls these in order.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
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
NETWORK_FILE = "network.pt"  # the checkpoint file itself
NETWORK_HASH = "network.sha256"  # its sha256, `<hex>  network.pt`
TAG = "zero."  # prefix of every tag the pipeline sets
# MLflow's mark of a model-training experiment (MLflow 3.17's UI takes its view from the URL or the browser
# instead: the link below carries it, and `make mlflow-ui`'s page sets it, flows.mlflow_ui).
EXPERIMENT_KIND = {"mlflow.experimentKind": "custom_model_development"}
# The columns of the runs list that follow a line generation by generation: (title, MLflow's column key).
GENERATION_COLUMNS = (("loss", "final_loss"), ("gate score", "gate_win_rate"), ("Elo", "gate_elo"),
                      ("games", "selfplay_games"), ("positions", "selfplay_positions"))
# Every experiment of a line holds a saved view of its runs list with those columns, newest generation first:
# the experiment tag `mlflow.sharedViewState.<key>` that the UI's *Share* / *Save as new view* writes. The
# link below opens it; its name in the UI's views menu is VIEW_NAME.
VIEW_KEY = "zero-generations"
VIEW_NAME = "Generations"
VIEW_TAG = f"mlflow.sharedViewState.{VIEW_KEY}"
# Where the runs list of an experiment is in `mlflow ui`: the model-training view, with the saved view.
RUNS_PAGE = "#/experiments/{experiment_id}/runs?workflowType=machine_learning&viewStateShareKey=" + VIEW_KEY


class RegistryError(RuntimeError):
    """The registry and the workspace disagree, or a registered network cannot be rebuilt."""


def tracking_uri(root: str | Path) -> str:
    """MLFLOW_TRACKING_URI if set, else the workspace's `sqlite:///<root>/mlflow.db`."""
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{Path(root).resolve() / 'mlflow.db'}"


def served(uri: str) -> bool:
    """Whether a tracking URI is an MLflow tracking server (http), rather than a database it opens itself."""
    return uri.startswith(("http://", "https://"))


def model_name(tag: str) -> str:
    """The registered model of a game line: `zero-go-9`."""
    return f"zero-{tag}"


def champion_uri(tag: str) -> str:
    return f"models:/{model_name(tag)}@{CHAMPION}"


def runs_url(ui_url: str, experiment_id: str) -> str:
    """The page of `mlflow ui` (served at ui_url) that lists an experiment's runs."""
    return ui_url.rstrip("/") + "/" + RUNS_PAGE.format(experiment_id=experiment_id)


def generations_view() -> str:
    """The saved view's tag value, as the UI writes one: {name, createdAt, updatedAt, state}, the state a JSON
    text of the runs list's search (newest first) and its visible columns."""
    now = int(time.time() * 1000)
    state = {"searchFilter": "", "orderByKey": "attributes.start_time", "orderByAsc": False, "startTime": "ALL",
             "lifecycleFilter": "Active", "datasetsFilter": [], "modelVersionFilter": "All Runs",
             "selectedColumns": [f"metrics.`{key}`" for _, key in GENERATION_COLUMNS]}
    return json.dumps({"name": VIEW_NAME, "createdAt": now, "updatedAt": now, "state": json.dumps(state)})


def experiment_tags(have: dict) -> dict:
    """The tags a line's experiment (holding `have`) is given: its kind, and the saved view where it has none
    (a view a person changed in the UI stays as they left it)."""
    return {**EXPERIMENT_KIND, **({} if VIEW_TAG in have else {VIEW_TAG: generations_view()})}


# The keys of the game section that each game reads: a Gomoku run logs no komi, a Go run no k.
GAME_KEYS = {"go": ("name", "size", "komi", "liberty_planes"), "gomoku": ("name", "height", "width", "k")}


def game_params(params: dict) -> dict:
    """params (a params file's sections, as dicts) with only the game keys its game reads."""
    game = params.get("game")
    if not isinstance(game, dict) or game.get("name") not in GAME_KEYS:
        return params
    return {**params, "game": {k: v for k, v in game.items() if k in GAME_KEYS[game["name"]]}}


def read_line(root: str | Path, tag: str) -> tuple[str | None, object | None]:
    """(experiment id, champion ModelVersion) of a line, each None when absent; creates nothing."""
    uri = tracking_uri(root)
    client = MlflowClient(uri, uri)
    exp = client.get_experiment_by_name(model_name(tag))
    try:
        champion = client.get_model_version_by_alias(model_name(tag), CHAMPION)
    except MlflowException:
        champion = None
    return (exp.experiment_id if exp is not None else None), champion


class Tracker:
    """The MLflow client of one workspace and game line."""

    def __init__(self, root: str | Path, tag: str, uri: str | None = None):
        self.root = Path(root).resolve()
        self.tag = tag
        self.uri = uri or tracking_uri(self.root)
        mlflow.set_tracking_uri(self.uri)
        mlflow.set_registry_uri(self.uri)
        self.client = MlflowClient(self.uri, self.uri)
        self.model = model_name(tag)
        self.experiment_id = self._experiment()

    def _experiment(self) -> str:
        name = self.model
        exp = self.client.get_experiment_by_name(name)
        if exp is not None:
            for k, v in experiment_tags(exp.tags).items():  # experiments made before get them too
                if exp.tags.get(k) != v:
                    self.client.set_experiment_tag(exp.experiment_id, k, v)
            return exp.experiment_id
        # A tracking server keeps artifacts where its --artifacts-destination says; a database beside
        # the workspace keeps them in mlartifacts/.
        artifacts = None if served(self.uri) else (self.root / "mlartifacts").as_uri()
        try:
            return self.client.create_experiment(name, artifact_location=artifacts,
                                                 tags={f"{TAG}game": self.tag, **experiment_tags({})})
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
            tags={f"{TAG}generation": str(g), f"{TAG}game": self.tag, f"{TAG}params_hash": params_digest,
                  **{k: str(v) for k, v in tags.items()}},  # the REST store takes strings only
        )
        return run.info.run_id, False

    def log_params(self, run_id: str, params: dict) -> None:
        """Every hyperparameter that applies to the run's game, flattened to `section.key` (idempotent for a
        resumed run)."""
        have = self.client.get_run(run_id).data.params
        flat = {k: _param_text(v) for k, v in flatten(game_params(params)).items()}
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

    def log_network(self, run_id: str, checkpoint: str | Path) -> str:
        """Log a checkpoint file as model/network.pt with model/network.sha256; returns the sha256."""
        from zero.network import load_checkpoint
        from zero.shards import file_sha256

        load_checkpoint(checkpoint)  # refuses a corrupt or foreign file with CheckpointError
        sha = file_sha256(checkpoint)
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copyfile(checkpoint, Path(tmp) / NETWORK_FILE)
            (Path(tmp) / NETWORK_HASH).write_text(f"{sha}  {NETWORK_FILE}\n")
            for name in (NETWORK_FILE, NETWORK_HASH):
                self.client.log_artifact(run_id, str(Path(tmp) / name), MODEL_DIR)
        return sha

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
        """Write the checkpoint file of a registry URI (`models:/zero-go-9@champion`) to `out`, checked by hash."""
        with tempfile.TemporaryDirectory() as tmp:
            local = mlflow.artifacts.download_artifacts(artifact_uri=uri, dst_path=tmp, tracking_uri=self.uri)
            checked_network(local, uri, out)
        return Path(out)


class StepLogger:
    """Buffers per-step training metrics and sends them in batches every few seconds.

    A step the run already holds for a metric is not sent again: a training resumed in a run it has logged
    into (a killed worker's retry) repeats the steps between its last kept state and the kill, with the
    same values, and a run's curve keeps one point a step.
    """

    def __init__(self, client: MlflowClient, run_id: str, flush_every: float = 5.0):
        self.client, self.run_id, self.flush_every = client, run_id, flush_every
        self.buffer: list[Metric] = []
        self.last = time.monotonic()
        self.logged: dict[str, set[int]] = {}  # per metric, the steps the run held or was sent

    def _new(self, key: str, step: int) -> bool:
        if key not in self.logged:
            self.logged[key] = {m.step for m in self.client.get_metric_history(self.run_id, key)}
        if step in self.logged[key]:
            return False
        self.logged[key].add(step)
        return True

    def __call__(self, step: int, metrics: dict) -> None:
        now = int(time.time() * 1000)
        self.buffer.extend(Metric(k, float(v), now, step) for k, v in metrics.items() if self._new(k, step))
        if time.monotonic() - self.last >= self.flush_every:
            self.flush()

    def flush(self) -> None:
        while self.buffer:
            batch, self.buffer = self.buffer[:1000], self.buffer[1000:]
            self.client.log_batch(self.run_id, metrics=batch)
        self.last = time.monotonic()


# --- what a generation records ----------------------------------------------------------------

GATE_METRICS = ("wins", "losses", "draws", "games", "win_rate", "elo", "elo_low", "elo_high")
LOSS_CURVES = ("loss", "policy_loss", "value_loss", "entropy", "lr")


@dataclass(frozen=True)
class GenerationFacts:
    """What every record of one generation carries, computed once when it starts and passed along.

    seeds: {"run_seed", "selfplay": [K shard seeds], "train", "gate": [J part seeds]};
    code: {"git_commit", "git_dirty"} of the code that runs the generation.
    """

    generation: int
    params_hash: str
    flow_run_id: str
    seeds: dict
    code: dict

    @classmethod
    def of(cls, g: int, params, flow_run_id: str) -> "GenerationFacts":
        from flows.layout import generation_seeds
        from flows.lineage import code_state

        return cls(g, params.digest(), flow_run_id, generation_seeds(params, g), code_state())

    def code_tags(self) -> dict:
        return {f"{TAG}{k}": v for k, v in self.code.items()}

    def seed_tags(self) -> dict:
        s = self.seeds
        return {f"{TAG}seed.run": s["run_seed"], f"{TAG}seed.selfplay": json.dumps(s["selfplay"]),
                f"{TAG}seed.train": s["train"], f"{TAG}seed.gate": json.dumps(s["gate"])}


def data_tags(hashes: dict) -> dict:
    """`zero.data.g0003` = the md5 dvc.lock records for each generation's games in the window."""
    return {f"{TAG}data.{name}": md5 for name, md5 in hashes.items()}


def gate_text(gate: dict) -> str:
    """`317-83-0 win rate 0.793 Elo +233 [+193, +278]`."""
    from flows.plots import elo_text

    return (f"{gate['wins']}-{gate['losses']}-{gate['draws']} win rate {gate['win_rate']:.3f} "
            f"Elo {elo_text(gate['elo'])} [{elo_text(gate['elo_low'])}, {elo_text(gate['elo_high'])}]")


def run_tags(facts: GenerationFacts, champ: dict, window: dict) -> dict:
    """Tags of a generation's run as it opens: the champion it starts from, its window, seeds, flow run, code."""
    return {
        f"{TAG}champion_version": champ["version"],
        f"{TAG}champion_sha256": champ["sha256"],
        f"{TAG}window_sha256": window["window_sha256"],
        **facts.seed_tags(),
        f"{TAG}flow_run_id": facts.flow_run_id,
        **facts.code_tags(),
    }


def data_run_tags(data: dict) -> dict:
    """Tags of a generation's run once DVC has recorded its data: dvc.lock's sha256 and each generation's
    games' md5 (lineage.window_facts)."""
    return {f"{TAG}dvc_lock_sha256": data["dvc_lock_sha256"], **data_tags(data["hashes"])}


def _decided(selfplay: list[dict]) -> dict:
    """The decided games of selfplay.decided_visits, summed over the shards that have them (none: {})."""
    return {k: sum(s.get(k, 0) for s in selfplay) for k in ("decided", "decided_reversed")
            if any(k in s for s in selfplay)}


def selfplay_metrics(selfplay: list[dict], data: dict) -> dict:
    """The generation's self-play, summed over its shards, and the training window's size."""
    games = sum(s["games"] for s in selfplay)
    timed = [s for s in selfplay if s.get("seconds")]
    decided = _decided(selfplay)
    return {
        "selfplay_games": games,
        "selfplay_positions": sum(s["positions"] for s in selfplay),
        "selfplay_mean_moves": sum(s["moves"] for s in selfplay) / max(games, 1),
        "selfplay_resigned": sum(s["resigned"] for s in selfplay) / max(games, 1),
        **({"selfplay_decided": decided["decided"] / max(games, 1),
            "selfplay_decided_reversed": decided["decided_reversed"] / max(decided["decided"], 1)} if decided else {}),
        "selfplay_black_win_rate": sum(s["black_wins"] for s in selfplay) / max(games, 1),
        "selfplay_games_per_s": (sum(s["games"] for s in timed) / sum(s["seconds"] for s in timed)) if timed else None,
        "window_positions": data["window_positions"],
        "window_shards": data["window_shards"],
    }


def version_tags(facts: GenerationFacts, run_id: str, candidate_sha: str, lock_sha: str, gate: dict,
                 data: dict) -> dict:
    """Tags of a candidate's model version: its run, hashes, gate result, data and code."""
    return {
        f"{TAG}generation": facts.generation,
        f"{TAG}run_id": run_id,
        f"{TAG}params_hash": facts.params_hash,
        f"{TAG}checkpoint_sha256": candidate_sha,
        f"{TAG}dvc_lock_sha256": lock_sha,
        f"{TAG}gate_passed": str(gate["passed"]).lower(),
        f"{TAG}gate": gate_text(gate),
        **({f"{TAG}refused": gate["refused"]} if gate.get("refused") else {}),
        **{f"{TAG}gate_{k}": gate[k] for k in ("wins", "losses", "draws", "win_rate", "threshold")},
        **data_tags(data["hashes"]),
        **facts.code_tags(),
    }


def register_initial(tracker: Tracker, gen0, params, init: dict, facts: GenerationFacts, lock_sha: str):
    """Generation 0: its run (params, network, params snapshot), its model version, the first champion."""
    tags = {
        f"{TAG}seed.init": init["seed"],
        f"{TAG}checkpoint_sha256": init["sha256"],
        f"{TAG}dvc_lock_sha256": lock_sha,
        **facts.code_tags(),
    }
    run_id, _ = tracker.generation_run(0, params.digest(), tags)
    tracker.log_params(run_id, params.model_dump(mode="json"))
    tracker.log_network(run_id, gen0.champion)
    tracker.log_artifacts(run_id, gen0.params_file, "config")
    tracker.finish(run_id)
    start = f"started from {params.pipeline.init_from}" if params.pipeline.init_from else "freshly initialised network"
    version = tracker.register(run_id, {f"{TAG}generation": 0, f"{TAG}run_id": run_id,
                                        f"{TAG}gate": "none (initial network)", **tags},
                               description=f"{gen0.key}: {start}")
    tracker.promote(version.version, "generation 0: the first champion")
    return version


def champion_record(tracker: Tracker, gen, version) -> dict:
    """{version, generation, sha256} of the champion generation `gen` plays, checked against the workspace.

    The registry's champion must be the very file the workspace's lineage says
    (the champion after g-1), or, for a resumed generation, this generation's own
    candidate already promoted by the interrupted run.
    """
    from flows.layout import LineError
    from zero.shards import file_sha256

    prev = gen.prev
    local_sha = file_sha256(prev.champion)
    fetched = prev.dir / ".registry-champion.pt.tmp"
    tracker.fetch_network(champion_uri(gen.tag), fetched)
    reg_sha = file_sha256(fetched)
    fetched.unlink()
    own = version.tags.get(f"{TAG}generation") == str(gen.g)
    if reg_sha != local_sha and not own:
        raise LineError(
            f"the registry's champion ({champion_uri(gen.tag)}: version {version.version}, sha256 {reg_sha[:12]}) "
            f"is not {prev.champion} (sha256 {local_sha[:12]}): this workspace and {tracker.uri} disagree"
        )
    return {"version": str(version.version), "generation": version.tags.get(f"{TAG}generation"), "sha256": local_sha}


def open_generation_run(tracker: Tracker, gen, params, facts: GenerationFacts, champ: dict, window: dict,
                        selfplay: list[dict]) -> tuple[str, bool]:
    """The generation's run (new, or the one an interrupted run left) with its tags, params and self-play
    (`window`: lineage.window_summary's facts; the data's tags follow once DVC has recorded it)."""
    run_id, resumed = tracker.generation_run(gen.g, facts.params_hash, {})
    tracker.set_tags(run_id, run_tags(facts, champ, window))
    tracker.log_params(run_id, params.model_dump(mode="json"))
    tracker.log_metrics(run_id, selfplay_metrics(selfplay, window))
    return run_id, resumed


def log_candidate(tracker: Tracker, run_id: str, gen, summary: dict) -> None:
    """The trained candidate: network, params and window files, final metrics, the loss curves as a PNG."""
    from flows.plots import loss_curves_png

    tracker.log_network(run_id, gen.candidate)
    tracker.log_artifacts(run_id, gen.params_file, "config")
    tracker.log_artifacts(run_id, gen.window_file, "config")
    final = summary.get("final") or {}
    tracker.log_metrics(run_id, {f"final_{k}": v for k, v in final.items()})
    if summary.get("seconds"):
        tracker.log_metrics(run_id, {"train_seconds": summary["seconds"]})
    if summary.get("resumed_at_step"):  # a training stopped on the way went on from its kept state
        tracker.log_metrics(run_id, {"train_resumed_at_step": summary["resumed_at_step"]})
    reuse = summary.get("reuse") or {}  # how often each position is drawn, this training and over its life
    tracker.log_metrics(run_id, {f"reuse_{k}": v for k, v in reuse.items() if isinstance(v, (int, float))})
    if summary.get("value_q"):  # train.value_q_weight: the positions whose value target mixed in a root value
        tracker.log_metrics(run_id, {"value_q_positions": summary["value_q"]["positions_with_root_value"]})
    if summary.get("surprise"):  # train.*_surprise_weight: what the weighted draws are worth, what they cost
        tracker.log_metrics(run_id, {f"surprise_{k}": v for k, v in summary["surprise"].items()})
    tracker.set_tags(run_id, {f"{TAG}candidate_sha256": summary["sha256"]})
    curves = {k: [(m.step, m.value) for m in tracker.client.get_metric_history(run_id, k)] for k in LOSS_CURVES}
    with tempfile.TemporaryDirectory() as tmp:
        png = loss_curves_png(curves, Path(tmp) / "loss.png", title=f"{gen.key}: training")
        tracker.log_artifacts(run_id, png, "plots")


def log_gate(tracker: Tracker, run_id: str, gen, result: dict) -> None:
    """The gate's result: metrics, the passed tag, parts and SGFs as artifacts, a PNG of the result."""
    from flows.plots import gate_png

    tracker.log_metrics(run_id, {f"gate_{k}": result[k] for k in GATE_METRICS})
    tracker.set_tags(run_id, {f"{TAG}gate_passed": str(result["passed"]).lower()})
    tracker.log_artifacts(run_id, gen.gate_dir, "gate")
    with tempfile.TemporaryDirectory() as tmp:
        png = gate_png(result, Path(tmp) / "gate.png", title=f"{gen.key}: gate")
        tracker.log_artifacts(run_id, png, "plots")


def register_candidate(tracker: Tracker, gen, run_id: str, facts: GenerationFacts, candidate_sha: str,
                       lock_sha: str, gate: dict, data: dict):
    """The promotion rule: every candidate becomes a model version; `champion` moves to it only if the gate
    promoted it: it passed (or always, under `gate.promote: always`) and no guard refused it (the version's
    `refused` tag says why; see flows.stages.refusal).

    Finishes the generation's run. Returns (the candidate's version, the champion's version after it).
    """
    tags = version_tags(facts, run_id, candidate_sha, lock_sha, gate, data)
    described = f"{gen.key}: candidate trained on {len(data['hashes'])} generation(s)"
    version = tracker.register(run_id, tags, description=described)
    if gate.get("promoted", gate["passed"]):
        how = "passed the gate (" if gate["passed"] else "promoted without passing (gate.promote: always; "
        tracker.promote(version.version, f"generation {gen.g}: {how}{tags[f'{TAG}gate']})")
    tracker.set_tags(run_id, {f"{TAG}model_version": version.version, f"{TAG}dvc_lock_sha256": lock_sha})
    tracker.finish(run_id)
    return version, tracker.champion()


def generation_record(facts: GenerationFacts, tag: str, champ: dict, selfplay: list[dict], train: dict,
                      gate: dict, data: dict, run_id: str, version: str, champion_after: dict, lock_sha: str,
                      seconds: float) -> dict:
    """generation.json: the audit record of a finished generation (seeds, runs, hashes, gate, code)."""
    return {
        "generation": facts.generation, "game": tag, "params_hash": facts.params_hash,
        "flow_run_id": facts.flow_run_id, "champion_before": champ, "seeds": facts.seeds,
        "selfplay": {**{k: sum(s[k] for s in selfplay) for k in ("games", "positions", "resigned")},
                     **_decided(selfplay),
                     "shards_reused": sum(s["reused"] for s in selfplay),
                     "nn_evals": sum(s.get("nn_evals", 0) for s in selfplay if not s["reused"])},  # this run's shards
        "train": {**{k: train.get(k) for k in ("steps", "positions", "seed", "sha256", "final", "reuse", "holdout")},
                  **{k: train[k] for k in ("resumed_at_step", "value_q", "surprise") if k in train}},
        "gate": gate, "data": data["hashes"], "mlflow_run_id": run_id, "model_version": version,
        "champion_after": champion_after, "dvc_lock_sha256": lock_sha, **facts.code,
        "seconds": round(seconds, 1),
    }


def checked_network(model_dir: str | Path, source: str, out: str | Path) -> Path:
    """Copy model_dir's network.pt to `out` (atomically) once its sha256 and content check pass.

    RegistryError names `source` and what failed: a missing file, a hash that
    is not the one logged with it, or a file that is not a sound zero checkpoint.
    """
    from zero.fileio import atomic_write
    from zero.network import CheckpointError, load_checkpoint
    from zero.shards import file_sha256

    model_dir = Path(model_dir)
    network, hash_file = model_dir / NETWORK_FILE, model_dir / NETWORK_HASH
    if not network.is_file() or not hash_file.is_file():
        raise RegistryError(f"{source}: not a logged zero network (no {MODEL_DIR}/{NETWORK_FILE} "
                            f"with {MODEL_DIR}/{NETWORK_HASH})")
    logged = hash_file.read_text().split()[0] if hash_file.read_text().split() else ""
    actual = file_sha256(network)
    if actual != logged:
        raise RegistryError(f"{source}: {NETWORK_FILE} has sha256 {actual[:12]}, "
                            f"but {logged[:12] or 'nothing'} was logged with it")
    try:
        load_checkpoint(network)
    except CheckpointError as e:
        raise RegistryError(f"{source}: {e}") from None
    with atomic_write(out) as f, open(network, "rb") as src:
        shutil.copyfileobj(src, f)
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
