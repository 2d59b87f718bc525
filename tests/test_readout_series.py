"""flows.readout_series: the pairs of several readouts in one table, their mean over the pairs with an interval."""

import json

import pytest

from flows.readout import readout
from flows.readout_series import SeriesError, main, over_pairs, series
from zero.config import load_params
from zero.network import init_checkpoint
from zero.selfplay import play_shard

GO_5 = ["game.size=5", "network.size=b1c8", "network.aux_heads=true", "selfplay.visits=8",
        "selfplay.concurrent_games=4", "selfplay.games_per_shard=6", "selfplay.resign_playout_share=0",
        "selfplay.resign_min_move=6", "selfplay.resign_threshold=-1.0"]


@pytest.fixture(scope="module")
def readouts(tmp_path_factory):
    """Two readouts of pairs of networks on one 5x5 shard of played-out games, as JSON files."""
    d = tmp_path_factory.mktemp("series")
    params = load_params(None, GO_5)
    for seed in range(3):
        init_checkpoint(params, d / f"n{seed}.pt", seed)
    play_shard(params, d / "n0.pt", d / "games.npz", seed=2)
    paths = []
    for name, (a, b) in {"first": (1, 0), "second": (2, 0)}.items():
        result = readout([d / "games.npz"], {f"a{a}": d / f"n{a}.pt", f"b{b}": d / f"n{b}.pt"}, [(f"a{a}", f"b{b}")],
                         cuts=[6])
        (d / f"{name}.json").write_text(json.dumps(result))
        paths.append(d / f"{name}.json")
    return d, paths


def test_pairs_are_set_in_order_with_their_mean(readouts):
    d, paths = readouts
    got = series(paths)
    assert [row["name"] for row in got["pairs"]] == ["a1 - b0", "a2 - b0"]
    assert got["stone_bands"] == ["0-5", "6+"]
    originals = [json.loads(p.read_text())["pairs"][0] for p in paths]
    for band in ("all", "0-5", "6+"):
        for key in ("value_loss", "dead_read"):
            diffs = [(o if band == "all" else next(b for b in o["by_stones"] if b["stones"] == band))[key]["difference"]
                     for o in originals]
            s = got["over_pairs"][band][key]
            assert s["mean"] == pytest.approx(sum(diffs) / 2)
            assert min(diffs) <= s["low"] <= s["mean"] <= s["high"] <= max(diffs)
            assert s["above"] + s["below"] <= s["pairs"] == 2


def test_the_mean_over_pairs():
    s = over_pairs([0.1, 0.3, -0.1, 0.5])
    assert s["mean"] == pytest.approx(0.2) and (s["above"], s["below"]) == (3, 1)
    assert -0.1 <= s["low"] < 0.2 < s["high"] <= 0.5
    one = over_pairs([0.4])
    assert one["mean"] == pytest.approx(0.4) and one["low"] is None and one["high"] is None


def test_the_command_writes_the_table_and_the_plot(readouts, tmp_path, capsys):
    _, paths = readouts
    assert main([*map(str, paths), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "| a1 - b0 | 6+ | " in out and "| all | " in out
    assert (tmp_path / "out" / "series.md").read_text() == out
    assert (tmp_path / "out" / "series.png").read_bytes()[:4] == b"\x89PNG"
    assert json.loads((tmp_path / "out" / "series.json").read_text())["over_pairs"]["all"]["value_loss"]["pairs"] == 2


def test_what_cannot_be_set_side_by_side_is_named(readouts, tmp_path, capsys):
    d, paths = readouts
    other = readout([d / "games.npz"], {"a": d / "n1.pt", "b": d / "n0.pt"}, [("a", "b")])  # default bands
    (tmp_path / "other.json").write_text(json.dumps(other))
    with pytest.raises(SeriesError, match="other.json: its bands of stones .* --stones"):
        series([paths[0], tmp_path / "other.json"])
    (tmp_path / "nopair.json").write_text(json.dumps(readout([d / "games.npz"], {"a": d / "n1.pt"})))
    assert main([str(tmp_path / "nopair.json"), "--out", str(tmp_path / "x")]) == 2
    assert "nopair.json: not a readout with pairs" in capsys.readouterr().err
    (tmp_path / "junk.json").write_text("{junk")
    assert main([str(tmp_path / "junk.json"), "--out", str(tmp_path / "x")]) == 2
    assert "junk.json" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
