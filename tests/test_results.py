"""flows.results: the README's strength table and docs/strength.md's table of every result, from the records."""

import json
import re
from pathlib import Path

import pytest

from flows import results
from zero.pairings import write_pairing

REPO = Path(__file__).resolve().parents[1]
SHA = [f"{i:x}" * 64 for i in range(1, 5)]  # the networks of generations 1-4


def _generation(n: int, core_hours: float, gpus: int = 0) -> dict:
    return {"generation": n, "sha256": SHA[n - 1],
            "compute": {"core_hours": core_hours, "gpu_hours": 0.5 if gpus else 0.0, "gpus": gpus,
                        "device": "cuda" if gpus else "cpu", "cores": 16 if gpus else 1, "wall_s": 1.0}}


@pytest.fixture
def repo(tmp_path):
    """A repository's records: a shipped lineage of 3 generations (the third on a GPU), a campaign state of 4,
    a ladder of generation 3, a match of generation 4 against 3, and the two pages with their markers."""
    (tmp_path / "models").mkdir()
    (tmp_path / "campaigns" / "state").mkdir(parents=True)
    runs = [{"generations": [_generation(1, 0.5), _generation(2, 0.75)], "params_file": "campaigns/go-9.yaml"},
            {"generations": [_generation(3, 4.0, 1)], "params_file": "params-gpu.yaml",
             "init_from": "models/go-9.pt"}]
    lineage = {"line": "go-9", "file": "go-9.pt", "sha256": SHA[2], "runs": runs,
               "totals": {"generations": 3, "games": 0, "compute": {"cpu x1 core": {"core_hours": 1.25},
                                                                   "cuda x1 gpu": {"core_hours": 4.0, "gpu_hours": 0.5}}},
               "champion": {"generation": 1, "line_generation": 3},
               "ladder": {"champion": "g3", "source": "docs/strength/go-9-g3-ladder", "matches": [
                   {"b": "gnugo-l1", "wins": 15, "losses": 5, "draws": 0, "games": 20, "visits": 200,
                    "label": "ladder", "opening_moves": 2, "seed": 0},
                   {"b": "mcts-500", "wins": 20, "losses": 0, "draws": 0, "games": 20, "visits": 200,
                    "label": "ladder", "opening_moves": 2, "seed": 2**59 + 7, "starts": "fresh"},
                   {"b": "random", "wins": 20, "losses": 0, "draws": 0, "games": 20, "visits": 200},
                   {"b": "pachi-5000", "wins": 8, "losses": 12, "draws": 0, "games": 20, "visits": 200}]}}
    (tmp_path / "models" / "go-9.json").write_text(json.dumps(lineage))
    state = {**lineage, "sha256": SHA[3], "ladder": None,
             "runs": runs + [{"generations": [_generation(4, 1.0)]}]}
    (tmp_path / "campaigns" / "state" / "go-9.json").write_text(json.dumps(state))
    ladder = tmp_path / "docs" / "strength" / "go-9-g3-ladder"
    starts = {"gnugo-l1": {"label": "ladder", "seed": 0}, "mcts-500": {"label": "ladder", "seed": 2**59 + 7,
                                                                       "starts": "fresh"}}
    for b, wins in (("gnugo-l1", 15), ("mcts-500", 20), ("random", 20)):
        write_pairing(ladder, {"a": "g3", "b": b, "a_sha256": SHA[2], "wins": wins, "losses": 20 - wins, "draws": 0,
                               "games": 20, "visits": 200, "komi": 7.5, "opening_moves": 2, "date": "2026-01-02",
                               **starts.get(b, {}), **({"search": {"lcb_stdevs": 5.0}} if b == "random" else {})})
    write_pairing(ladder, {"a": "gnugo-l1", "b": "mcts-500", "wins": 9, "losses": 1, "draws": 0,
                           "label": "calibration"})
    (ladder / "README.md").write_text("# Generation 3 against fixed opponents (2026-01-02)\n")
    match = tmp_path / "docs" / "strength" / "go-9-g4-vs-g3"
    match.mkdir()
    (match / "match.json").write_text(json.dumps({"wins": 50, "losses": 30, "draws": 0, "games": 80}))
    (match / "README.md").write_text(f"# Generation 4 against generation 3 (2026-01-03)\n\nsha256 {SHA[3][:12]}…\n")
    for page in ("README.md", "docs/strength.md", "docs/history.md"):
        (tmp_path / page).write_text(f"# Prose before\n\n{results.BEGIN}\nold table\n{results.END}\n\nProse after.\n")
    return tmp_path


def _generated(path: Path) -> str:
    text = path.read_text()
    return text[text.index(results.BEGIN): text.index(results.END)]


def _rows(path: Path) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in _generated(path).splitlines()
            if line.startswith("| ") and not line.startswith("| ---")]


def test_the_pages_are_written_between_their_markers_from_the_records(repo, capsys):
    assert results.main(["--root", str(repo)]) == 0
    for page in (repo / "README.md", repo / "docs" / "strength.md"):
        text = page.read_text()
        assert text.startswith("# Prose before\n\n" + results.BEGIN)
        assert text.endswith(results.END + "\n\nProse after.\n")
        assert "old table" not in text
    header, *shipped = _rows(repo / "README.md")
    assert len(header) <= 6
    # every GNU Go level, every Pachi and the strongest pure MCTS; not random moves
    assert [r[2] for r in shipped] == ["GNU Go 3.8 level 1", "Pachi 12.90, 5,000 playouts", "pure MCTS, 500 rollouts"]
    # the compute of generations 1-3: 1.25 core-hours on a CPU, the GPU machine's generation in GPU-hours
    assert shipped[0][:2] == ["9x9 Go, generation 3 (`models/go-9.pt`)", "1.25 core-hours + 0.50 GPU-hours"]
    assert shipped[0][3] == "**15-5-0**" and "(docs/strength/go-9-g3-ladder/README.md)" in shipped[0][5]
    # which starts each pairing played: the usual seed-0 ones, or fresh ones of the network's own
    assert shipped[0][5].startswith("20 games, 200 visits, the usual starts; [record]")
    assert shipped[2][5].startswith("20 games, 200 visits, fresh starts; [record]")


def test_the_champion_at_a_time_per_move_follows_its_ladder(repo):
    """A timed ladder of the shipped network with its ladder's search constants is a row of the README; one
    with another constant (a trial of a setting) or of another network is not."""
    timed = {"b": "pachi-5000", "games": 20, "visits": 1541, "draws": 0, "label": "ladder", "opening_moves": 2,
             "starts": "fresh", "date": "2026-01-04", "time_per_move": {"seconds_per_move": 1.0, "threads": 1}}
    strength = repo / "docs" / "strength"
    write_pairing(strength / "go-9-g3-1s", {**timed, "a": "g3-1s", "a_sha256": SHA[2], "wins": 14, "losses": 6,
                                            "search": {"leaf_batch": 8}})
    write_pairing(strength / "go-9-g3-su", {**timed, "a": "g3-su", "a_sha256": SHA[2], "wins": 19, "losses": 1,
                                            "search": {"score_utility": 0.2}})
    write_pairing(strength / "go-9-g4-1s", {**timed, "a": "g4-1s", "a_sha256": SHA[3], "wins": 18, "losses": 2})
    (strength / "go-9-g3-1s" / "README.md").write_text("# Generation 3 at 1 s a move (2026-01-04)\n")
    results.main(["--root", str(repo)])
    _, *shipped = _rows(repo / "README.md")
    assert [(r[2], r[3]) for r in shipped] == [("GNU Go 3.8 level 1", "**15-5-0**"),
                                               ("Pachi 12.90, 5,000 playouts", "**8-12-0**"),
                                               ("pure MCTS, 500 rollouts", "**20-0-0**"),
                                               ("Pachi 12.90, 5,000 playouts", "**14-6-0**")]
    assert shipped[3][5] == ("20 games, 1 s a move (1,541 visits, one thread), fresh starts; "
                             "[record](docs/strength/go-9-g3-1s/README.md)")
    assert shipped[3][4] == results.elo_interval_text(results.elo_interval(14, 6, 0))


def test_every_result_is_placed_in_its_lineage_newest_first(repo):
    results.main(["--root", str(repo)])
    header, *rows = [r for r in _rows(repo / "docs" / "strength.md") if len(r) == 8]
    assert header[0] == "date"
    # the match, placed by the sha256 its README names, in the campaign's lineage (generation 4: one more hour)
    assert rows[0][:5] == ["2026-01-03", "9x9 Go generation 4", "generation 3", "50-30-0", "+89 [+13, +174]"]
    assert rows[0][6] == "2.25 core-hours + 0.50 GPU-hours"
    assert [r[2] for r in rows[1:]] == ["random moves", "pure MCTS, 500 rollouts", "GNU Go 3.8 level 1"]
    assert {r[0] for r in rows[1:]} == {"2026-01-02"} and "calibration" not in _generated(repo / "docs/strength.md")
    assert rows[3][5] == "20 games, 200 visits, komi 7.5, 2 opening moves, the usual starts"
    assert rows[2][5] == "20 games, 200 visits, komi 7.5, 2 opening moves, fresh starts"
    # a record that names no seed, played with the move chosen by its lower confidence bound
    assert rows[1][5] == "20 games, 200 visits, komi 7.5, 2 opening moves, the move by its lower confidence bound (5 sd)"
    assert rows[3][7] == "[go-9-g3-ladder](strength/go-9-g3-ladder/README.md)"


def test_the_history_tells_each_run_of_the_shipped_lineage(repo):
    results.main(["--root", str(repo)])
    text = _generated(repo / "docs" / "history.md")
    assert "`models/go-9.pt` is generation 3 of the line" in text and "made in 2 runs" in text
    header, *rows = _rows(repo / "docs" / "history.md")
    assert header[:4] == ["run", "generations", "games", "compute"]
    assert rows[0][:5] == ["1", "1-2", "0", "1.25 core-hours", "`campaigns/go-9.yaml`"]
    assert rows[0][5] == "a random network"
    # the GPU machine's generation in GPU-hours only, its cores not counted as a CPU core's
    assert rows[1][1:6] == ["3-3", "0", "0.50 GPU-hours (GPU)", "`params-gpu.yaml`", "`models/go-9.pt`"]
    assert rows[2][:4] == ["all", "3", "0", "1.25 core-hours + 0.50 GPU-hours"]


def test_a_second_run_changes_nothing_and_check_finds_a_stale_page(repo, capsys):
    assert results.main(["--root", str(repo)]) == 0
    written = (repo / "README.md").read_text()
    capsys.readouterr()
    assert results.main(["--root", str(repo), "--check"]) == 0 and capsys.readouterr().out == ""
    (repo / "docs" / "strength" / "go-9-g4-vs-g3" / "match.json").write_text(json.dumps({"wins": 60, "losses": 20}))
    assert results.main(["--root", str(repo), "--check"]) == 1
    assert "strength.md: not what the records give" in capsys.readouterr().out
    assert (repo / "README.md").read_text() == written and "50-30-0" in (repo / "docs" / "strength.md").read_text()


def test_a_page_without_its_markers_is_named_and_nothing_is_written(repo, capsys):
    (repo / "docs" / "strength.md").write_text("no markers here\n")
    before = (repo / "README.md").read_text()
    assert results.main(["--root", str(repo)]) == 2
    err = capsys.readouterr().err
    assert "strength.md: needs one <!-- results-table: begin -->" in err
    assert (repo / "README.md").read_text() == before
    assert (repo / "docs" / "strength.md").read_text() == "no markers here\n"


@pytest.mark.parametrize("torn", ["docs/strength/go-9-g4-vs-g3/match.json", "models/go-9.json",
                                  "docs/strength/go-9-g3-ladder/pairings/g3--random--ladder.json"])
def test_a_torn_record_is_named_and_nothing_is_written(repo, capsys, torn):
    (repo / torn).write_text('{"wins": 3')
    before = (repo / "README.md").read_text()
    assert results.main(["--root", str(repo)]) == 2
    assert Path(torn).name in capsys.readouterr().err
    assert (repo / "README.md").read_text() == before


def test_a_fit_on_another_anchor_is_moved_onto_the_games_scale():
    fitted = {"anchor": {"player": "gnugo-l10", "elo": 1800.0}, "games": 10,
              "champions": [{"name": "g3", "elo": 1900.0, "elo_low": 1850.0, "elo_high": 1950.0}],
              "opponents": {"gnugo-l1": {"elo": 1700.0, "elo_low": 1650.0, "elo_high": 1750.0}}}
    moved = results.on_scale(fitted, "go")
    assert moved["anchor"] == {"player": "gnugo-l1", "elo": 0.0}
    assert moved["champions"][0] == {"name": "g3", "elo": 200.0, "elo_low": 150.0, "elo_high": 250.0}
    assert moved["opponents"]["gnugo-l1"]["elo"] == 0.0
    with pytest.raises(results.ResultsError, match="without gnugo-l1"):
        results.on_scale({**fitted, "opponents": {}}, "go")


def test_the_committed_pages_are_what_the_records_give():
    """README.md and docs/strength.md hold exactly what `python -m flows.results` writes now."""
    assert results.write(REPO, check=True) == []


def test_the_readme_is_a_short_index():
    text = (REPO / "README.md").read_text()
    lines = text.splitlines()
    assert len(lines) <= 150
    assert [n for n, line in enumerate(lines, 1) if len(line) > 120 and not line.startswith("|")] == []
    for table in re.findall(r"(?m)^(\|.*\|)\n\| ---", text):
        assert table.count("|") - 1 <= 6, table
    headings = re.findall(r"(?m)^## (.*)$", text)
    assert headings == ["Strength", "Install and the two commands", "What you see", "Ports and settings",
                        "Going further"]
