"""MLflow tracking and registry at the pipeline's edge, against a temporary SQLite database."""

import hashlib

import pytest

from pipeline_support import isolate_env


@pytest.fixture
def tracker(tmp_path, monkeypatch):
    isolate_env(monkeypatch, tmp_path)
    from flows.tracking import Tracker

    return Tracker(tmp_path, "gomoku-6x6x4")


def sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_network_round_trip_through_the_registry_is_byte_identical(tracker, tiny_checkpoint, tmp_path):
    from flows.tracking import champion_uri
    from zero.network import load_checkpoint

    assert tracker.champion() is None
    run_id, resumed = tracker.generation_run(0, "h0", {"zero.extra": "1"})
    assert not resumed
    tracker.log_network(run_id, tiny_checkpoint)
    tracker.finish(run_id)
    arts = {a.path for a in tracker.client.list_artifacts(run_id, "model")}
    assert arts == {"model/network.pt", "model/network.sha256"}
    version = tracker.register(run_id, {"zero.generation": 0})
    tracker.promote(version.version, "first")
    out = tracker.fetch_network(champion_uri("gomoku-6x6x4"), tmp_path / "back.pt")
    assert sha(out) == sha(tiny_checkpoint)
    net, meta = load_checkpoint(out)
    assert meta == load_checkpoint(tiny_checkpoint)[1]


def test_register_is_idempotent_and_only_promote_moves_the_alias(tracker, tiny_checkpoint):
    versions = []
    for g in (0, 1, 2):
        run_id, _ = tracker.generation_run(g, "h", {})
        tracker.log_network(run_id, tiny_checkpoint)
        versions.append(tracker.register(run_id, {"zero.generation": g}))
        assert str(tracker.register(run_id, {"zero.gate_passed": "x"}).version) == str(versions[-1].version)
    assert [str(v.version) for v in versions] == ["1", "2", "3"]
    assert tracker.champion() is None  # registering never moves the alias
    tracker.promote(versions[0].version, "generation 0")
    tracker.promote(versions[2].version, "generation 2 passed")
    champ = tracker.champion()
    assert str(champ.version) == "3" and champ.tags["zero.promoted"] == "generation 2 passed"
    assert tracker.client.get_model_version(tracker.model, "2").tags["zero.gate_passed"] == "x"


def test_generation_run_is_resumed_not_duplicated(tracker):
    run_a, resumed_a = tracker.generation_run(4, "hash-1", {})
    tracker.finish(run_a, "KILLED")
    run_b, resumed_b = tracker.generation_run(4, "hash-1", {})
    run_c, _ = tracker.generation_run(4, "hash-2", {})  # other params: another run
    assert (run_b, resumed_a, resumed_b) == (run_a, False, True)
    assert run_c != run_a
    assert tracker.client.get_run(run_b).info.status == "RUNNING"


def test_params_are_flattened_and_logged_once(tracker, tiny_params):
    run_id, _ = tracker.generation_run(1, tiny_params.digest(), {})
    tracker.log_params(run_id, tiny_params.model_dump(mode="json"))
    tracker.log_params(run_id, tiny_params.model_dump(mode="json"))  # a resumed run: no conflict
    logged = tracker.client.get_run(run_id).data.params
    assert logged["train.learning_rate"] == str(tiny_params.train.learning_rate)
    assert logged["train.lr_milestones"] == "[3]"
    assert logged["game.name"] == "gomoku"
    flat = __import__("flows.tracking", fromlist=["flatten"]).flatten(tiny_params.model_dump(mode="json"))
    assert set(logged) == set(flat) - {"game.size", "game.komi", "game.liberty_planes"}


@pytest.mark.parametrize("overrides, logged, left_out", [
    (["game.liberty_planes=true"], {"game.name": "go", "game.size": "9", "game.komi": "7.5",
                                    "game.liberty_planes": "True"}, {"game.height", "game.width", "game.k"}),
    (["game.name=gomoku", "game.height=6", "game.width=6", "game.k=4"],
     {"game.name": "gomoku", "game.height": "6", "game.width": "6", "game.k": "4"},
     {"game.size", "game.komi", "game.liberty_planes"}),
])
def test_a_run_logs_only_the_game_params_its_game_reads(tracker, overrides, logged, left_out):
    from zero.config import load_params

    params = load_params(None, overrides)
    run_id, _ = tracker.generation_run(1, params.digest(), {})
    tracker.log_params(run_id, params.model_dump(mode="json"))
    have = tracker.client.get_run(run_id).data.params
    assert {k: v for k, v in have.items() if k.startswith("game.")} == logged
    assert not left_out & set(have)
    assert have["train.batch_size"] == str(params.train.batch_size)  # the other sections whole


def test_every_game_setting_is_read_by_some_game():
    """A new field of the game section is logged for the game that reads it, not silently for neither."""
    from flows.tracking import GAME_KEYS
    from zero.config import GameConfig

    assert set(GameConfig.model_fields) == {k for keys in GAME_KEYS.values() for k in keys}
    assert set(GAME_KEYS) == set(GameConfig.model_fields["name"].annotation.__args__)


def test_step_logger_keeps_every_step(tracker):
    run_id, _ = tracker.generation_run(1, "h", {})
    log = tracker.step_logger(run_id, flush_every=0.0)
    for step in range(7):
        log(step, {"loss": 1.0 / (step + 1), "lr": 0.1})
    log.flush()
    history = tracker.client.get_metric_history(run_id, "loss")
    assert sorted(m.step for m in history) == list(range(7))


def test_a_step_logger_on_a_run_that_holds_steps_sends_only_the_others(tracker):
    """A killed worker's retry logs into the same run: the steps the run holds are not sent twice, the
    ones its buffer lost are."""
    run_id, _ = tracker.generation_run(1, "h", {})
    first = tracker.step_logger(run_id, flush_every=0.0)
    for step in (0, 1, 2, 4):  # step 3 was in the buffer when the worker died
        first(step, {"loss": 1.0 / (step + 1), "lr": 0.1})
    first.flush()
    again = tracker.step_logger(run_id, flush_every=0.0)
    for step in range(7):  # the retry replays its kept steps and trains on from one before the kill
        again(step, {"loss": 1.0 / (step + 1), "lr": 0.1, "entropy": 2.0})
    again.flush()
    for key, steps in (("loss", range(7)), ("lr", range(7)), ("entropy", range(7))):
        history = tracker.client.get_metric_history(run_id, key)
        assert sorted(m.step for m in history) == list(steps), key
    assert {m.step: m.value for m in tracker.client.get_metric_history(run_id, "loss")}[3] == 0.25


def test_a_logged_network_that_is_not_the_one_hashed_or_not_a_network_is_refused(tiny_checkpoint, tmp_path):
    from flows.tracking import RegistryError, checked_network
    from zero.shards import file_sha256

    d = tmp_path / "model"
    d.mkdir()
    with pytest.raises(RegistryError, match="not a logged zero network"):
        checked_network(d, "models:/x@champion", tmp_path / "out.pt")
    (d / "network.pt").write_bytes(tiny_checkpoint.read_bytes())
    (d / "network.sha256").write_text("0" * 64 + "  network.pt\n")
    with pytest.raises(RegistryError, match="models:/x@champion: network.pt has sha256 .* but 000000000000 was logged"):
        checked_network(d, "models:/x@champion", tmp_path / "out.pt")
    (d / "network.pt").write_bytes(b"not a zip")
    (d / "network.sha256").write_text(file_sha256(d / "network.pt") + "  network.pt\n")
    with pytest.raises(RegistryError, match="models:/x@champion: .*network.pt"):
        checked_network(d, "models:/x@champion", tmp_path / "out.pt")
    assert not (tmp_path / "out.pt").exists()
    (d / "network.pt").write_bytes(tiny_checkpoint.read_bytes())
    (d / "network.sha256").write_text(file_sha256(tiny_checkpoint) + "  network.pt\n")
    assert sha(checked_network(d, "models:/x@champion", tmp_path / "out.pt")) == sha(tiny_checkpoint)


def test_experiments_are_tagged_as_model_training(tracker, tmp_path):
    from flows.tracking import EXPERIMENT_KIND, Tracker

    assert EXPERIMENT_KIND == {"mlflow.experimentKind": "custom_model_development"}
    exp = tracker.client.get_experiment(tracker.experiment_id)
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"
    # an experiment made before the tag existed gets it the next time the line is opened
    old = tracker.client.create_experiment("zero-go-9", artifact_location=(tmp_path / "a").as_uri())
    assert "mlflow.experimentKind" not in tracker.client.get_experiment(old).tags
    assert Tracker(tmp_path, "go-9").experiment_id == old
    assert tracker.client.get_experiment(old).tags["mlflow.experimentKind"] == "custom_model_development"


def test_experiments_hold_the_generations_view_that_the_printed_link_opens(tracker, tmp_path):
    import json
    from urllib.parse import parse_qs, urlsplit

    from flows.tracking import GENERATION_COLUMNS, VIEW_KEY, VIEW_NAME, VIEW_TAG, Tracker, runs_url

    view = json.loads(tracker.client.get_experiment(tracker.experiment_id).tags[VIEW_TAG])
    assert view["name"] == VIEW_NAME and isinstance(view["createdAt"], int) and view["updatedAt"] == view["createdAt"]
    state = json.loads(view["state"])  # the UI's saved view: its search and its columns
    assert state["selectedColumns"] == [f"metrics.`{key}`" for _, key in GENERATION_COLUMNS]
    assert (state["orderByKey"], state["orderByAsc"]) == ("attributes.start_time", False)  # newest first
    link = urlsplit(runs_url("http://127.0.0.1:5000/", tracker.experiment_id))
    assert link.fragment.startswith(f"/experiments/{tracker.experiment_id}/runs?")
    assert parse_qs(link.fragment.split("?", 1)[1]) == {"workflowType": ["machine_learning"],
                                                         "viewStateShareKey": [VIEW_KEY]}
    # a line's experiment made before the view existed gets it; one a person changed in the UI keeps theirs
    old = tracker.client.create_experiment("zero-go-9", artifact_location=(tmp_path / "a").as_uri())
    Tracker(tmp_path, "go-9")
    assert json.loads(tracker.client.get_experiment(old).tags[VIEW_TAG])["name"] == VIEW_NAME
    tracker.client.set_experiment_tag(old, VIEW_TAG, json.dumps({**view, "name": "mine"}))
    Tracker(tmp_path, "go-9")
    assert json.loads(tracker.client.get_experiment(old).tags[VIEW_TAG])["name"] == "mine"


def test_loss_curves_and_gate_plots_are_pngs(tmp_path):
    from flows.plots import gate_png, loss_curves_png

    curves = {"loss": [(s, 3.0 - s / 10) for s in range(20)], "policy_loss": [(s, 2.0) for s in range(20)],
              "entropy": [(s, 1.5) for s in range(20)], "lr": [(s, 0.02) for s in range(20)]}
    loss = loss_curves_png(curves, tmp_path / "loss.png", title="gomoku-6x6x4-g0001: training")
    gate = {"wins": 7, "losses": 1, "draws": 0, "games": 8, "win_rate": 0.875, "threshold": 0.55, "passed": True,
            "elo": 338.0, "elo_low": 60.0, "elo_high": None}
    gate_file = gate_png(gate, tmp_path / "gate.png")
    for path in (loss, gate_file):
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5000
    assert not list(tmp_path.glob("*.tmp*"))


def test_register_candidate_moves_the_alias_only_to_a_promoted_candidate(tracker, tiny_checkpoint):
    from types import SimpleNamespace

    from flows.tracking import GenerationFacts, register_candidate
    from zero.stats import MatchResult

    def gate(wins, losses, passed, promoted, refused=None):
        return {**MatchResult(wins, losses, 0).to_dict(), "threshold": 0.55, "passed": passed, "promoted": promoted,
                **({"refused": refused} if refused else {})}

    cases = [gate(15, 5, True, True), gate(8, 12, False, True), gate(3, 17, False, False, "scored 0.150"),
             gate(16, 4, True, False, "dead value head"), gate(5, 15, False, False)]
    for g, result in enumerate(cases, start=1):
        facts = GenerationFacts(g, "h", "flow", {}, {"git_commit": "c", "git_dirty": False})
        run_id, _ = tracker.generation_run(g, "h", {})
        tracker.log_network(run_id, tiny_checkpoint)
        gen = SimpleNamespace(g=g, key=f"gomoku-6x6x4-g{g:04d}")
        version, champion = register_candidate(tracker, gen, run_id, facts, "sha", "lock", result, {"hashes": {}})
        tags = tracker.client.get_model_version(tracker.model, version.version).tags
        assert tags.get("zero.refused") == result.get("refused")
        assert str(champion.version) == {1: "1", 2: "2"}.get(g, "2")  # 3-5 leave generation 2's version champion
    assert tracker.champion().tags["zero.promoted"].startswith("generation 2: promoted without passing")


def test_a_gates_line_rounds_its_elo_signed_and_never_to_minus_zero():
    from flows.tracking import gate_text

    even = {"wins": 10, "losses": 10, "draws": 0, "win_rate": 0.5, "elo": -0.0, "elo_low": -163.3, "elo_high": 163.3}
    assert gate_text(even) == "10-10-0 win rate 0.500 Elo +0 [-163, +163]"
    shut_out = {"wins": 20, "losses": 0, "draws": 0, "win_rate": 1.0, "elo": 636.4, "elo_low": 394.8, "elo_high": None}
    assert gate_text(shut_out) == "20-0-0 win rate 1.000 Elo +636 [+395, inf]"
