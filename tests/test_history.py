"""flows.history: a shipped line's champions rated by one fit over their matches and ladders."""

import json
from pathlib import Path

import pytest
import yaml

from flows import history
from zero.pairings import write_pairing

REPO = Path(__file__).resolve().parent.parent


def _match(path: Path, wins: int, losses: int) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"wins": wins, "losses": losses, "draws": 0, "games": wins + losses}))
    return str(path.relative_to(path.parent.parent))


def _line(tmp_path: Path, **changes) -> Path:
    """A line of three champions: b beat a 30-10, c beat b 30-10; a ladder where `old-a` (a's name when it
    played) lost 0-20 to GNU Go level 1 and c lost 5-15, and a variant of c no champion is named after."""
    m1 = _match(tmp_path / "b-vs-a" / "match.json", 30, 10)
    m2 = _match(tmp_path / "c-vs-b" / "match.json", 30, 10)
    ladder = tmp_path / "ladder"
    write_pairing(ladder, {"a": "old-a", "b": "gnugo-l1", "wins": 0, "losses": 20, "draws": 0})
    write_pairing(ladder, {"a": "c", "b": "gnugo-l1", "wins": 5, "losses": 15, "draws": 0})
    write_pairing(ladder, {"a": "c-lb8", "b": "gnugo-l1", "wins": 20, "losses": 0, "draws": 0})
    spec = {"anchor": "gnugo-l1=0", "rename": {"old-a": "a"},
            "champions": [{"name": "a", "core_hours": 1.0}, {"name": "b", "core_hours": 2.0},
                          {"name": "c", "core_hours": 3.5, "shipped": "abc1234"}],
            "matches": [{"a": "b", "b": "a", "file": m1}, {"a": "c", "b": "b", "file": m2}],
            "ladders": ["ladder"]}
    spec.update(changes)
    path = tmp_path / "history.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def test_fit_rates_every_champion_through_the_chain_and_writes_the_table_and_plot(tmp_path):
    fitted = history.run(_line(tmp_path))
    by = {c["name"]: c for c in fitted["champions"]}
    assert [c["name"] for c in fitted["champions"]] == ["a", "b", "c"]
    assert by["a"]["elo"] < by["b"]["elo"] < by["c"]["elo"] < 0  # c lost 5-15 to the anchor
    assert by["c"]["elo_low"] < by["c"]["elo"] < by["c"]["elo_high"]
    assert by["b"]["games"] == 80 and by["a"]["games"] == 60  # old-a's ladder games count as a's
    assert fitted["games"] == 120  # the variant c-lb8 is no champion: its 20 games are left out
    assert "c-lb8" not in fitted["opponents"] and fitted["opponents"]["gnugo-l1"]["elo"] == 0.0
    assert by["c"]["shipped"] == "abc1234" and by["c"]["core_hours"] == 3.5
    assert json.loads((tmp_path / "ratings.json").read_text()) == fitted
    assert (tmp_path / "elo.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = history.table_md(fitted)
    assert "| c | 3.50 |" in table and "gnugo-l1 = 0" in table
    assert "| b (not shipped) | 2.00 |" in table  # a champion with no commit that shipped it


def _labelled(champions: list[dict]) -> list[str]:
    plt = history.agg_pyplot()
    fig, ax = plt.subplots(figsize=(8, 5))
    ax.plot([c["core_hours"] for c in champions], [c["elo"] for c in champions], "o")
    try:
        return history.label_points(fig, ax, champions)
    finally:
        plt.close(fig)


def test_crowded_champions_are_labelled_newest_shipped_first_and_never_over_each_other():
    def champ(i, elo, shipped="abc", gpu=0.0, hours=None):
        return {"name": f"g{i}", "core_hours": float(i if hours is None else hours), "elo": elo, "gpu_hours": gpu,
                "shipped": shipped}
    # a far first champion, then twenty on a plateau half a core-hour apart: their labels cannot all fit
    plateau = [champ(i, 500.0 + i, gpu=0.18 if i >= 5 else 0.0, hours=80 + i / 2) for i in range(2, 21)]
    crowded = [champ(1, -1500.0), *plateau, champ(21, 520.0, "", gpu=0.18, hours=90.5)]
    drawn = _labelled(crowded)
    assert drawn[:3] == ["g20", "g21", "g5 (+0.18 GPU-h from here)"]  # newest shipped, newest, where GPU-hours change
    assert 3 < len(drawn) < 21 and len(set(drawn)) == len(drawn)
    # far apart, every champion is labelled and only the first to use the GPU names it
    apart = [champ(1, 0.0), champ(50, 1000.0, gpu=0.5), champ(100, 2000.0, gpu=0.5)]
    assert sorted(_labelled(apart)) == ["g1", "g100", "g50 (+0.50 GPU-h from here)"]


def test_a_champion_no_game_reaches_is_listed_unrated(tmp_path):
    fitted = history.fit(history.load(_line(tmp_path, champions=[
        {"name": "a", "core_hours": 1.0}, {"name": "b", "core_hours": 2.0}, {"name": "c", "core_hours": 3.5},
        {"name": "d", "core_hours": 4.0, "gpu_hours": 0.25}])), tmp_path)
    assert fitted["champions"][-1] == {"name": "d", "core_hours": 4.0, "gpu_hours": 0.25, "shipped": "",
                                       "elo": None, "games": 0}
    assert "| d (not shipped) | 4.00 | 0.25 | not connected | 0 |" in history.table_md(fitted)


@pytest.mark.parametrize("change, message", [
    ({"matches": [{"a": "b", "b": "x", "file": "b-vs-a/match.json"}]}, "'x' is not one of the champions"),
    ({"matches": [{"a": "b", "b": "a", "file": "missing.json"}]}, "missing.json: not a match result"),
    ({"ladders": ["nowhere"]}, "nowhere: not a ladder directory"),
    ({"champions": [{"name": "a", "core_hours": 1}, {"name": "a", "core_hours": 2}]}, "named twice"),
    ({"anchor": "gnugo-l1"}, "not of the form"),
    ({"anchor": "gnugo-l10=1800"}, "the anchor gnugo-l10 played none"),
    ({"champions": [{"name": "a", "core_hours": -1}]}, "core_hours"),
    ({"colour": "red"}, "colour"),
])
def test_bad_history_names_what_is_wrong(tmp_path, change, message):
    path = _line(tmp_path, **change)
    with pytest.raises(history.HistoryError, match=message):
        history.fit(history.load(path), tmp_path)


def test_a_corrupt_match_file_is_named_and_nothing_is_written(tmp_path, capsys):
    path = _line(tmp_path)
    (tmp_path / "c-vs-b" / "match.json").write_text("{not json")
    assert history.main([str(path)]) == 2
    assert "c-vs-b/match.json: not a match result" in capsys.readouterr().err
    assert not (tmp_path / "ratings.json").exists() and not (tmp_path / "elo.png").exists()


def test_the_committed_ratings_are_the_fit_of_the_committed_games():
    """docs/strength/go-9-line/ratings.json (the README's Elo-by-compute plot) is what its history gives."""
    path = REPO / "docs" / "strength" / "go-9-line" / "history.yaml"
    fitted = history.fit(history.load(path), path.parent)
    assert json.loads((path.parent / "ratings.json").read_text()) == json.loads(json.dumps(fitted))
    shipped = json.loads((REPO / "models" / "go-9.json").read_text())
    last = [c for c in fitted["champions"] if c["shipped"]][-1]  # candidates laddered after it were not shipped
    assert last["name"] == shipped["ladder"]["champion"]
    assert (last["core_hours"], last["gpu_hours"]) == pytest.approx(_lineage_hours(shipped), abs=0.005)


def test_each_shipped_champions_compute_is_its_lineage_at_the_commit_that_shipped_it():
    """The core- and GPU-hours the history plots come from models/go-9.json as each `shipped` commit holds it."""
    import subprocess

    shallow = subprocess.run(["git", "rev-parse", "--is-shallow-repository"], cwd=REPO, capture_output=True, text=True)
    if shallow.returncode != 0 or shallow.stdout.strip() != "false":
        pytest.skip("needs the repository's full git history")
    line = history.load(REPO / "docs" / "strength" / "go-9-line" / "history.yaml")
    shipped = [c for c in line.champions if c.shipped]
    assert len(shipped) >= 20
    for champion in shipped:
        text = subprocess.run(["git", "show", f"{champion.shipped}:models/go-9.json"], cwd=REPO,
                              capture_output=True, text=True, check=True).stdout
        lineage = json.loads(text)
        assert lineage["totals"]["generations"] == int(champion.name.strip("gL")), champion
        assert (champion.core_hours, champion.gpu_hours) == pytest.approx(_lineage_hours(lineage), abs=0.005), champion


def _lineage_hours(lineage: dict) -> tuple[float, float]:
    """A lineage's (core-hours, GPU-hours), summed over its hardware."""
    compute = lineage["totals"]["compute"].values()
    return sum(c["core_hours"] for c in compute), sum(c["gpu_hours"] for c in compute)
