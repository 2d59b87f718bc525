"""Pachi as a ladder opponent: `pachi:N` specs and names, finding the engine, its GTP conversation, and a
real pairing recorded with the engine's version and options (skipped where Pachi is not built)."""

import json
import os
import stat

import pytest

from zero.cli import main
from zero.config import params_from_dict
from zero.ladder import (LadderError, calibration_pairs, engine_facts, find_pachi, is_fixed_opponent,
                         opponent_name, parse_anchor, play_pairing, player_spec)
from zero.pairings import game_results


def _pachi() -> str | None:
    try:
        return find_pachi()
    except LadderError:
        return None


PACHI = _pachi()
needs_pachi = pytest.mark.skipif(PACHI is None, reason="Pachi is not built: `make pachi` builds it into .pachi/")
SMALL_GO = params_from_dict({"game": {"name": "go", "size": 5}, "network": {"size": "b1c8", "value_hidden": 8},
                             "gate": {"threads": 1}})


def test_pachi_specs_names_and_calibration():
    assert opponent_name("pachi:5000") == "pachi-5000"
    assert is_fixed_opponent("pachi-5000") and not is_fixed_opponent("pachi-x")
    assert parse_anchor("pachi:5000=2100") == ("pachi-5000", 2100.0)
    # listed after GNU Go level 10, Pachi is linked to it by calibration games, then to the next Pachi
    assert calibration_pairs(["mcts:1000", "gnugo:10", "pachi:1000", "pachi:5000", "gen:0"]) == [
        ("mcts:1000", "gnugo:10"), ("gnugo:10", "pachi:1000"), ("pachi:1000", "pachi:5000")]
    for bad in ("pachi:499", "pachi:100001", "pachi:1e4", "pachi:"):
        with pytest.raises(LadderError, match="Pachi's playouts a move are 500 to 100,000"):
            player_spec(bad)
    assert engine_facts("gnugo:10") is None and engine_facts("mcts:100") is None


def test_the_ladder_config_takes_pachi():
    from zero.config import ConfigError

    lad = params_from_dict({"ladder": {"opponents": ["gnugo:10", "pachi:5000"]}}).ladder
    assert lad.opponents == ["gnugo:10", "pachi:5000"]
    with pytest.raises(ConfigError, match="pachi: takes a whole number"):
        params_from_dict({"ladder": {"opponents": ["pachi:many"]}})


def test_a_named_executable_that_is_not_pachi_is_refused(tmp_path, monkeypatch):
    fake = tmp_path / "pachi"
    fake.write_text("#!/bin/sh\necho 'Pachi the platform game'\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("ZERO_PACHI", str(fake))
    with pytest.raises(LadderError, match=r"\(ZERO_PACHI\) is not a Pachi executable.*make pachi"):
        find_pachi()
    with pytest.raises(LadderError, match="the Pachi command"):
        find_pachi(str(tmp_path / "nowhere"))
    monkeypatch.setenv("ZERO_PACHI", str(tmp_path / "nowhere"))
    with pytest.raises(LadderError, match="make pachi"):
        player_spec("pachi:1000")


def test_zero_ladder_refuses_pachi_before_playing(tmp_path, capsys):
    gomoku = ["--set", "game.name=gomoku", "--set", "game.height=6", "--set", "game.width=6", "--set", "game.k=4",
              "--set", "network.size=b1c8", "--set", "network.value_hidden=8"]
    model = tmp_path / "net.pt"
    assert main(["init", "--out", str(model), *gomoku]) == 0
    capsys.readouterr()
    assert main(["ladder", *gomoku, "--model", str(model), "--opponents", "pachi:1000",
                 "--out", str(tmp_path / "lad")]) == 2
    assert "Pachi plays Go" in capsys.readouterr().err
    go = ["--set", "game.size=5", "--set", "network.size=b1c8", "--set", "network.value_hidden=8"]
    assert main(["init", "--out", str(model), *go]) == 0
    capsys.readouterr()
    assert main(["ladder", *go, "--model", str(model), "--opponents", "random,pachi:100",
                 "--out", str(tmp_path / "lad")]) == 2
    assert "500 to 100,000" in capsys.readouterr().err and not (tmp_path / "lad").exists()


@needs_pachi
def test_pachi_speaks_gtp_through_zeros_controller():
    """Its moves, a refused command, its resignation, final_score and its pass; time_settings accepted (its
    playouts a move stay those of -t)."""
    from zero.gtp_player import GtpEngineError, GtpProcess

    engine = GtpProcess(player_spec("pachi:500")[4:], timeout=60)
    try:
        assert engine.send("name") == "Pachi" and engine.send("version").startswith("12.90")
        for line in ("boardsize 5", "komi 0.5", "clear_board", "time_settings 0 1 1"):
            engine.send(line)
        # Pachi as black on the empty board, the side that wins 5x5 at komi 0.5: a move on the board (as white
        # after black's c3 it may rightly resign)
        assert engine.send("genmove b").lower() not in ("pass", "resign")
        with pytest.raises(GtpEngineError, match="refused 'play b z9'"):
            engine.send("play b z9")
        # two black walls and c3 split the board into black's eyes: white, with nowhere to live, resigns
        engine.send("clear_board")
        for move in ("a2", "b2", "c2", "d2", "e2", "a4", "b4", "c4", "d4", "e4", "c3"):
            engine.send(f"play b {move}")
            engine.send("play w pass")
        assert engine.send("genmove w").lower() == "resign"
        assert engine.send("final_score") == "B+24.5"  # all 25 points black's, by area, less komi
        # the board settled: after white passes, Pachi as black passes too
        engine.send("play w pass")
        assert engine.send("genmove b").lower() == "pass"
    finally:
        engine.close()


@needs_pachi
def test_a_pairing_against_pachi_records_the_engine_and_replays_when_it_changes(tmp_path, monkeypatch):
    """A real 5x5 pairing through the ladder's code path: an untrained network against Pachi at 500
    playouts, the engine's version and options kept; a pairing recorded with another version is played again."""
    import zero.match

    rec = play_pairing(SMALL_GO, "init", "pachi:500", 2, seed=3, visits=4, out_dir=tmp_path, a_name="fresh",
                       concurrent=2)
    assert (rec["a"], rec["b"], rec["b_spec"], rec["games"]) == ("fresh", "pachi-500", "pachi:500", 2)
    assert (rec["wins"], rec["losses"]) == (0, 2)  # an untrained network against Pachi
    engine = rec["b_engine"]
    assert engine["engine"] == "pachi" and engine["version"].startswith("Pachi 12.90")
    assert engine["options"] == "-t =500 -r chinese threads=1 pass_all_alive" and engine["git"]
    assert "a_engine" not in rec and rec["komi"] == SMALL_GO.game.komi
    on_disk = json.loads((tmp_path / "pairings" / "fresh--pachi-500--ladder.json").read_text())
    assert on_disk == rec
    assert [points for _, points in game_results(tmp_path, rec)] == [0, 0]  # its games, kept, each lost by a
    played = []
    run_match = zero.match.run_match
    monkeypatch.setattr(zero.match, "run_match", lambda *a, **k: played.append(1) or run_match(*a, **k))
    assert play_pairing(SMALL_GO, "init", "pachi:500", 2, seed=3, visits=4, out_dir=tmp_path, a_name="fresh",
                        concurrent=2) == rec and played == []
    on_disk["b_engine"]["version"] = "Pachi 12.80"  # as if played by another release
    (tmp_path / "pairings" / "fresh--pachi-500--ladder.json").write_text(json.dumps(on_disk))
    again = play_pairing(SMALL_GO, "init", "pachi:500", 2, seed=3, visits=4, out_dir=tmp_path, a_name="fresh",
                         concurrent=2)
    assert played == [1] and again["b_engine"] == engine


@needs_pachi
def test_zero_ladder_against_pachi_and_its_calibration(tmp_path, capsys):
    """`zero ladder --opponents random,pachi:500`: the calibration links random to Pachi, the network plays
    Pachi, and the fit is relative to Pachi, the pool's only outside engine."""
    go = ["--set", "game.size=5", "--set", "network.size=b1c8", "--set", "network.value_hidden=8",
          "--set", "ladder.visits=4", "--set", "gate.threads=1"]
    model = tmp_path / "net.pt"
    assert main(["init", "--out", str(model), *go]) == 0
    out = tmp_path / "lad"
    assert main(["ladder", *go, "--model", str(model), "--opponents", "random,pachi:500", "--games", "2",
                 "--calibration-games", "2", "--anchor", "pachi:500=0", "--out", str(out)]) == 0
    assert "ratings (pachi-500 = 0)" in capsys.readouterr().out
    names = sorted(p.stem for p in (out / "pairings").glob("*.json"))
    assert names == ["net--pachi-500--ladder", "net--random--ladder", "random--pachi-500--calibration"]
    calibration = json.loads((out / "pairings" / "random--pachi-500--calibration.json").read_text())
    assert calibration["losses"] == 2 and calibration["b_engine"]["options"].startswith("-t =500 ")
    ratings = json.loads((out / "ratings.json").read_text())["ratings"]
    assert ratings["pachi-500"]["elo"] == 0 and ratings["random"]["elo"] < 0


@needs_pachi
@pytest.mark.skipif(not os.path.exists("/usr/games/gnugo") and not __import__("shutil").which("gnugo"),
                    reason="GNU Go is not installed")
def test_pachi_and_gnugo_play_a_calibration_pairing(tmp_path):
    """Two outside engines against each other, as the ladder's calibration plays them: both recorded."""
    rec = play_pairing(SMALL_GO, "gnugo:1", "pachi:500", 2, seed=1, visits=4, out_dir=tmp_path,
                       label="calibration", concurrent=2)
    assert (rec["a"], rec["b"], rec["label"]) == ("gnugo-l1", "pachi-500", "calibration")
    assert rec["wins"] + rec["losses"] + rec["draws"] == 2 and "a_engine" not in rec and rec["b_engine"]
    assert len(game_results(tmp_path, rec)) == 2
