"""flows.ship --ladder: a shipped champion's lineage carries its results against outside engines."""

import hashlib
import json
import shutil

import pytest

from flows.layout import LineError
from flows.ship import attach_ladder, main
from zero.pairings import write_pairing


@pytest.fixture
def shipped(tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    (models / "go-9.pt").write_bytes(b"champion network")
    sha = hashlib.sha256(b"champion network").hexdigest()
    (models / "go-9.json").write_text(json.dumps({"line": "go-9", "sha256": sha, "ladder": None,
                                                  "champion": {"generation": 11, "name": None, "rating": None}}))
    return models, sha


def test_the_champions_pairings_are_found_by_hash_and_rated_against_the_engine(shipped, tmp_path):
    models, sha = shipped
    lad = tmp_path / "lad"
    write_pairing(lad, {"a": "g11", "b": "gnugo-l1", "a_sha256": sha, "wins": 3, "losses": 17, "draws": 0,
                        "games": 20, "date": "2026-11-23", "visits": 200})
    write_pairing(lad, {"a": "other", "b": "gnugo-l1", "a_sha256": "f" * 64, "wins": 1, "losses": 19, "draws": 0})
    lineage = attach_ladder(models / "go-9.json", lad)
    assert lineage == json.loads((models / "go-9.json").read_text())
    assert lineage["ladder"]["champion"] == "g11" and lineage["ladder"]["matched_by"] == "sha256"
    [match] = lineage["ladder"]["matches"]
    assert (match["b"], match["wins"], match["losses"], match["date"]) == ("gnugo-l1", 3, 17, "2026-11-23")
    assert lineage["champion"]["anchor"]["player"] == "gnugo-l1"
    assert lineage["champion"]["rating"]["elo"] < 0 and lineage["champion"]["generation"] == 11


def test_a_pairing_without_hashes_needs_the_player_named(shipped, tmp_path, capsys):
    models, _ = shipped
    lad = tmp_path / "lad"
    write_pairing(lad, {"a": "fast-g11", "b": "gnugo-l1", "wins": 0, "losses": 20, "draws": 0})
    before = (models / "go-9.json").read_bytes()
    with pytest.raises(LineError, match="--player"):
        attach_ladder(models / "go-9.json", lad)
    assert (models / "go-9.json").read_bytes() == before  # nothing half-written
    lineage = attach_ladder(models / "go-9.json", lad, player="fast-g11")
    assert "predates" in lineage["ladder"]["matched_by"] and lineage["ladder"]["matches"][0]["losses"] == 20


def test_a_torn_lineage_is_named_and_left_as_it_was(shipped, tmp_path):
    models, sha = shipped
    lad = tmp_path / "lad"
    write_pairing(lad, {"a": "g11", "b": "gnugo-l1", "a_sha256": sha, "wins": 3, "losses": 17, "draws": 0})
    torn = (models / "go-9.json").read_bytes()[:40]
    (models / "go-9.json").write_bytes(torn)
    with pytest.raises(LineError, match=r"go-9\.json: torn or not JSON"):
        attach_ladder(models / "go-9.json", lad)
    assert (models / "go-9.json").read_bytes() == torn


def test_the_command_records_the_shipped_champions_committed_ladder(tmp_path, capsys):
    """Whatever champion is shipped: its committed ladder (the directory its lineage names) goes into a copy of
    its lineage, found by the network's hash, and the command prints each pairing's score as the files hold it;
    the same pairings under another network's hash are not this champion's."""
    from pathlib import Path

    from zero.pairings import read_pairings

    repo = Path(__file__).resolve().parent.parent
    models = tmp_path / "models"
    shutil.copytree(repo / "models", models)
    lineage = json.loads((models / "go-9.json").read_text())
    source = tmp_path / "ladder"  # a copy: shipping fits the directory again and writes its ratings.json
    shutil.copytree(repo / lineage["ladder"]["source"], source)
    mine = [r for r in read_pairings(source) if r.get("a_sha256") == lineage["sha256"]]
    assert mine, f"{source}: no pairing of the shipped champion"
    lineage["ladder"] = None
    (models / "go-9.json").write_text(json.dumps(lineage))
    args = ["--params", str(repo / "campaigns" / "go-9.yaml"), "--root", str(repo), "--models", str(models)]
    assert main(args + ["--ladder", str(source)]) == 0
    printed = capsys.readouterr().out
    for r in mine:
        assert f"{r['a']} against {r['b']}: {r['wins']}-{r['losses']}-{r['draws']}" in printed
    lineage = json.loads((models / "go-9.json").read_text())
    assert lineage["ladder"]["matched_by"] == "sha256"
    assert sorted(m["b"] for m in lineage["ladder"]["matches"]) == sorted(r["b"] for r in mine)
    other = tmp_path / "other-network"
    for r in mine:
        write_pairing(other, {**r, "a_sha256": "f" * 64})
    assert main(args + ["--ladder", str(other)]) == 2
    assert "no pairing of go-9.json's champion" in capsys.readouterr().err
    assert main(args + ["--ladder", str(tmp_path / "nothing")]) == 2
    assert "not a ladder directory" in capsys.readouterr().err


def test_a_run_that_ships_again_is_told_from_a_run_that_resumed_from_the_shipped_champion():
    """A campaign ships after each generation it promotes: the second shipping of a run replaces that run's
    entry (the earlier runs stay); a new run from the same start, with another first generation, does not."""
    from flows.ship import _same_run

    gens = [{"generation": 1, "sha256": "g1"}, {"generation": 2, "sha256": "g2"}]
    shipped_after_g1 = {"sha256": "g1", "start_sha256": "start",
                        "runs": [{"start_sha256": "older"}, {"start_sha256": "start", "generations": gens[:1]}]}
    assert _same_run(shipped_after_g1, "start", gens)
    assert not _same_run(shipped_after_g1, "start", [{"generation": 1, "sha256": "another g1"}])
    assert not _same_run(shipped_after_g1, "other start", gens)
    assert not _same_run({"sha256": "start", "start_sha256": "older", "runs": []}, "start", gens)
