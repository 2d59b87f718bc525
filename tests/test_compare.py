"""Recipes compared at equal compute (flows/compare.py): lines chained across workspaces, the
matches planned at nearest compute, played once, fitted into one pool, drawn and tabled."""

import json
from pathlib import Path

import pytest
import yaml

from flows.compare import CompareError, elo_at, line_networks, load_spec, plan, run, LineSpec
from flows.layout import Workspace
from zero.config import load_params
from zero.network import init_checkpoint
from zero.shards import file_sha256

ROOT = Path(__file__).resolve().parents[1]
SMOKE = str(ROOT / "params-smoke.yaml")
TAG = "gomoku-6x6x4"


def make_line(root: Path, hours: list[float], seed: int, start: Path | None = None,
              gates: list[tuple[int, int, int]] | None = None) -> list[Path]:
    """A workspace whose line has generation 0 (`start`, or a fresh network) and one finished
    generation per entry of `hours` (each its own compute); returns the networks in order."""
    params = load_params(SMOKE)
    ws = Workspace(root)
    g0 = ws.generation(TAG, 0)
    g0.dir.mkdir(parents=True)
    if start is None:
        init_checkpoint(params, g0.champion, seed=seed)
    else:
        g0.champion.write_bytes(start.read_bytes())
    ws.register(g0)
    nets, champion = [g0.champion], g0.champion
    for g, h in enumerate(hours, start=1):
        gen = ws.generation(TAG, g)
        gen.dir.mkdir(parents=True)
        init_checkpoint(params, gen.candidate, seed=seed * 100 + g)
        gen.champion.write_bytes(gen.candidate.read_bytes())
        w, l_, d = (gates or [(6, 2, 0)] * len(hours))[g - 1]
        record = {
            "generation": g, "seconds": h * 3600,
            "train": {"sha256": file_sha256(gen.candidate), "steps": 20},
            "selfplay": {"games": 8, "positions": 100},
            "gate": {"passed": True, "wins": w, "losses": l_, "draws": d, "games": w + l_ + d,
                     "champion_sha256": file_sha256(champion), "candidate_sha256": file_sha256(gen.candidate)},
            "compute": {"device": "cpu", "cores": 1, "gpus": 0, "wall_s": h * 3600, "core_hours": h,
                        "gpu_hours": 0.0},
        }
        gen.record_file.write_text(json.dumps(record))
        ws.register(gen)
        nets.append(gen.candidate)
        champion = gen.candidate
    return nets


def write_spec(path: Path, lines: dict, **extra) -> Path:
    spec = {"title": "test comparison", "params": SMOKE, "anchor": "a-g0000=0", "games": 2, "visits": 2,
            "opening_moves": 1, "concurrent_games": 2, "lines": lines, **extra}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(spec))
    return path


def test_a_line_continues_across_workspaces_with_generations_and_compute_summed(tmp_path):
    first = make_line(tmp_path / "w1", [0.5, 0.5], seed=1)
    make_line(tmp_path / "w2", [0.25], seed=2, start=first[-1])
    nets = line_networks("a", LineSpec(params=SMOKE, workspaces=[str(tmp_path / "w1"), str(tmp_path / "w2")]),
                         TAG, tmp_path)
    assert sorted(nets) == ["a-g0000", "a-g0001", "a-g0002", "a-g0003"]
    assert [nets[f"a-g000{g}"]["compute_hours"] for g in range(4)] == [0.0, 0.5, 1.0, 1.25]
    assert nets["a-g0003"]["games"] == 24
    # each generation's gate names the network it met, across the workspace boundary too
    assert nets["a-g0003"]["gate"][0] == "a-g0002" and nets["a-g0001"]["gate"][0] == "a-g0000"


def test_a_workspace_that_starts_from_another_network_does_not_continue_the_line(tmp_path):
    make_line(tmp_path / "w1", [0.5], seed=1)
    make_line(tmp_path / "w2", [0.5], seed=3)
    with pytest.raises(CompareError, match="does not continue"):
        line_networks("a", LineSpec(params=SMOKE, workspaces=[str(tmp_path / "w1"), str(tmp_path / "w2")]),
                      TAG, tmp_path)


def test_each_network_meets_the_other_line_nearest_in_compute_once():
    def p(line, g, h):
        return {"line": line, "generation": g, "compute_hours": h}

    players = {"a-g0000": p("a", 0, 0), "a-g0001": p("a", 1, 1.0), "a-g0002": p("a", 2, 2.0),
               "b-g0000": p("b", 0, 0), "b-g0001": p("b", 1, 0.4), "b-g0002": p("b", 2, 0.9),
               "b-g0003": p("b", 3, 1.6), "b-g0004": p("b", 4, 2.2)}
    got = plan(players, ["gnugo:1"])
    cross = sorted((a, b) for a, b, label in got if label == "equal-compute")
    # a1 (1.0) meets b2 (0.9); a2 (2.0) meets b4 (2.2); b1 (0.4) -> a1; b3 (1.6) -> a2 (0.4 away, not a1's 0.6)
    assert cross == [("a-g0001", "b-g0001"), ("a-g0001", "b-g0002"), ("a-g0002", "b-g0003"),
                     ("a-g0002", "b-g0004")]
    assert sorted((a, b) for a, b, label in got if label == "ladder") == [("a-g0002", "gnugo:1"),
                                                                          ("b-g0004", "gnugo:1")]


def test_elo_between_rated_networks_is_interpolated_and_none_outside():
    curve = [(0.0, 0.0), (1.0, 100.0), (3.0, 300.0)]
    assert elo_at(curve, 2.0) == pytest.approx(200.0)
    assert elo_at(curve, 3.0) == 300.0
    assert elo_at(curve, 3.5) is None


def test_comparison_plays_the_planned_matches_once_and_writes_table_plot_and_mlflow(tmp_path):
    import mlflow

    a = make_line(tmp_path / "wa", [0.5, 0.5], seed=1)
    make_line(tmp_path / "wb", [0.3, 0.3, 0.3], seed=2)
    spec = write_spec(tmp_path / "cmp" / "compare.yaml", {
        "a": {"params": SMOKE, "workspaces": [str(tmp_path / "wa")]},
        "b": {"params": SMOKE, "workspaces": [str(tmp_path / "wb")], "hardware": "1 core"},
    }, opponents=["random"])
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    said = []
    first = run(spec, echo=said.append, max_matches=2)  # a budget: the first two missing matches of the plan
    assert first["missing"] == 3 and len(list((tmp_path / "cmp" / "pairings").glob("*--equal-compute.json"))) == 2
    summary = run(spec, tracking_uri=uri, echo=said.append)
    out = tmp_path / "cmp"
    pairings = sorted(p.stem for p in (out / "pairings").glob("*.json"))
    # 5 gate matches read from the lines; a1 (0.5 h) meets b2 (0.6), a2 (1.0) meets b3 (0.9), b1 (0.3) meets
    # a1; and each line's last network plays the fixed opponent
    assert len([p for p in pairings if p.endswith("--gate")]) == 5
    assert sorted(p for p in pairings if p.endswith("--equal-compute")) == [
        "a-g0001--b-g0001--equal-compute", "a-g0001--b-g0002--equal-compute", "a-g0002--b-g0003--equal-compute"]
    assert sorted(p for p in pairings if p.endswith("--ladder")) == ["a-g0002--random--ladder",
                                                                     "b-g0003--random--ladder"]
    played = json.loads((out / "pairings" / "a-g0002--random--ladder.json").read_text())
    assert played["wins"] + played["losses"] + played["draws"] == 2 and played["visits"] == 2
    ratings = json.loads((out / "ratings.json").read_text())["ratings"]
    assert ratings["a-g0000"]["elo"] == 0 and {"b-g0003", "random"} <= set(ratings)
    rows = {r["line"]: r for r in summary["lines"]}
    assert rows["a"]["core_hours"] == 1.0 and rows["b"]["core_hours"] == pytest.approx(0.9)
    assert rows["b"]["generations"] == 3 and rows["b"]["games"] == 24
    assert summary["common_hours"] == pytest.approx(0.9)
    table = (out / "table.md").read_text()
    assert "| b |" in table and "1 core" in table and "0.90" in table
    assert (out / "compare.png").stat().st_size > 10_000
    client = mlflow.MlflowClient(tracking_uri=uri)
    runs = client.search_runs([client.get_experiment_by_name("zero-recipes").experiment_id])
    assert len(runs) == 1 and runs[0].data.metrics["core_hours_a"] == 1.0
    assert [m.step for m in client.get_metric_history(runs[0].info.run_id, "elo_b")] == [0, 18, 36, 54]
    logged = tmp_path / "mlartifacts" / runs[0].info.run_id / "artifacts"
    assert (logged / "compare.png").is_file() and (logged / "table.md").read_text() == table
    # a second run replays nothing, and a line that grew gets only its new matches
    said.clear()
    assert run(spec, echo=said.append)["missing"] == 0
    assert "0 to play" in said[0]
    assert file_sha256(a[-1])  # the networks are untouched
    make_line(tmp_path / "wc", [0.2], seed=9)
    bad = write_spec(tmp_path / "cmp" / "other.yaml", {
        "a": {"params": SMOKE, "workspaces": [str(tmp_path / "wa")]},
        "c": {"params": SMOKE, "workspaces": [str(tmp_path / "wc")]},
    })
    with pytest.raises(CompareError, match="not in this comparison"):
        run(bad, echo=said.append)


@pytest.mark.parametrize("text, expected", [
    ("title: x\nparams: p\nanchor: a=0\nlines: {a: {params: p, workspaces: [w]}}\n", "lines"),
    ("title: x\nparams: p\nanchor: a=0\ngames: 3\nlines: {}\n", "games"),
    ("title: x\nparams: p\nanchor: a=0\nlines: {a-b: {params: p, workspaces: [w]}, c: {params: p, "
     "workspaces: [w]}}\n", "letters, digits"),
    ("title: [x\n", "not valid YAML"),
    ("title: x\nparams: p\nanchor: a=0\nspeed: 3\nlines: {}\n", "speed"),
])
def test_a_bad_spec_is_named_with_what_is_wrong(tmp_path, text, expected):
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    with pytest.raises(CompareError, match=expected) as err:
        load_spec(path)
    assert str(path) in str(err.value)


def test_a_clone_refits_the_committed_comparison_without_its_workspaces(tmp_path, monkeypatch):
    """docs/recipes/go-9: the lines' workspaces are not in the repository; --no-play fits and draws the
    recorded players and pairings again, to the same files; playing refuses, naming the missing workspace."""
    import shutil

    repo = Path(__file__).resolve().parent.parent
    out = tmp_path / "go-9"
    shutil.copytree(repo / "docs" / "recipes" / "go-9", out)
    monkeypatch.chdir(repo)
    messages = []
    summary = run(out / "compare.yaml", play=False, echo=messages.append)
    assert "as recorded" in messages[0]
    for name in ("ratings.json", "summary.json", "table.md", "players.json"):
        assert (out / name).read_bytes() == (repo / "docs" / "recipes" / "go-9" / name).read_bytes(), name
    assert summary["missing"] == 0 and (out / "compare.png").stat().st_size > 10_000
    with pytest.raises(CompareError, match="workspace"):
        run(out / "compare.yaml", play=True, echo=messages.append)
