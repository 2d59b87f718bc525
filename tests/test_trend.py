"""flows.trend: a line's in-flow ladders pooled span by span from its lineage."""

import json
from pathlib import Path

import pytest

from flows import trend
from zero.stats import elo_interval


def _generation(n: int, ladder: list[tuple[str, int, int]] | None = None, gpus: int = 0) -> dict:
    g = {"generation": n, "sha256": f"{n:064x}",
         "compute": {"core_hours": 0.0 if gpus else 0.5, "gpu_hours": 0.25 if gpus else 0.0, "gpus": gpus}}
    if ladder:
        g["ladder"] = {"matches": [{"b": b, "wins": w, "losses": l, "draws": 0, "games": w + l, "visits": 200}
                                   for b, w, l in ladder]}
    return g


@pytest.fixture
def lineage(tmp_path):
    """Seven generations in two runs (the fifth on a GPU): ladders at 2 and 3 against GNU Go level 1, at 4, 6
    and 7 against Pachi, 3 and 6 against both."""
    first = [_generation(1), _generation(2, [("gnugo-l1", 15, 5)]),
             _generation(3, [("gnugo-l1", 18, 2), ("pachi-5000", 4, 16)]), _generation(4, [("pachi-5000", 6, 14)])]
    second = [_generation(5, gpus=1), _generation(6, [("pachi-5000", 9, 11), ("gnugo-l1", 20, 0)]),
              _generation(7, [("pachi-5000", 12, 8)])]
    path = tmp_path / "go-9.json"
    path.write_text(json.dumps({"line": "go-9", "runs": [{"generations": first}, {"generations": second}]}))
    return path


def test_the_ladders_are_pooled_by_span_opponent_and_visits(lineage, tmp_path, capsys):
    out = tmp_path / "trend"
    assert trend.main([str(lineage), "--span", "3", "--out", str(out)]) == 0
    spans = json.loads((out / "trend.json").read_text())["spans"]
    got = [(s["first"], s["last"], s["opponent"], s["generations"], s["wins"], s["losses"]) for s in spans]
    assert got == [(1, 3, "gnugo-l1", [2, 3], 33, 7), (1, 3, "pachi-5000", [3], 4, 16),
                   (4, 6, "pachi-5000", [4, 6], 15, 25), (4, 6, "gnugo-l1", [6], 20, 0),
                   (7, 7, "pachi-5000", [7], 12, 8)]  # the last span cut at the line's last generation
    # the line's compute at each span's last ladder: CPU core-hours, the GPU generation in GPU-hours
    assert [(s["core_hours"], s["gpu_hours"]) for s in spans] == [(1.5, 0.0), (1.5, 0.0), (2.5, 0.25),
                                                                   (2.5, 0.25), (3.0, 0.25)]
    low, high = elo_interval(15, 25, 0)[1:]
    assert spans[2]["elo_low"] == pytest.approx(low) and spans[2]["elo_high"] == pytest.approx(high)
    md = (out / "trend.md").read_text()
    assert "| 4-6 | pachi-5000 | 200 | 4, 6 | 2.50 core-hours + 0.25 GPU-hours | 40 | 15-25-0 | 37.5% |" in md
    assert md == capsys.readouterr().out
    assert (out / "trend.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_wider_span_pools_more_ladders(lineage, tmp_path):
    spans = trend.run(lineage, 10, tmp_path / "p")
    assert [(s["opponent"], s["games"], s["wins"]) for s in spans] == [("gnugo-l1", 60, 53), ("pachi-5000", 80, 31)]
    assert {(s["first"], s["last"]) for s in spans} == {(1, 7)}


@pytest.mark.parametrize("text, says", [
    ("{not json", "go-9.json"),
    ('{"line": "go-9"}', "not a lineage"),
    ('{"runs": [{"generations": [{"ladder": {"matches": [{"b": "gnugo-l1"}]}}]}]}', "generation 1's ladder is torn"),
    ('{"runs": [{"generations": [{"generation": 1}]}]}', "no generation of it played an in-flow ladder"),
])
def test_a_lineage_that_says_nothing_is_named_and_nothing_is_written(tmp_path, capsys, text, says):
    path = tmp_path / "go-9.json"
    path.write_text(text)
    out = tmp_path / "trend"
    assert trend.main([str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("flows.trend: ") and says in err
    assert not out.exists()


def test_a_span_below_one_is_refused(lineage, tmp_path):
    with pytest.raises(trend.TrendError, match="1 or more, not 0"):
        trend.run(lineage, 0, tmp_path / "p")
    assert not (tmp_path / "p").exists()


def test_the_committed_trend_is_what_the_saved_lineage_gives(tmp_path, monkeypatch):
    """docs/strength/go-9-line/trend/ is written again by `make campaign-save`: a save whose record was not
    committed beside it fails here."""
    repo = Path(__file__).resolve().parents[1]
    kept = repo / "docs" / "strength" / "go-9-line" / "trend"
    monkeypatch.chdir(repo)
    trend.run(Path("campaigns/state/go-9.json"), 15, tmp_path)
    for name in ("trend.md", "trend.json"):
        assert (tmp_path / name).read_text() == (kept / name).read_text(), name
