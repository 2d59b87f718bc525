"""The `zero` command line, run as a user would: init, selfplay, train, match, bench, and its errors."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import TINY
from zero.sgf import read_collection
from zero.train import READ_EVERY

ZERO = [sys.executable, "-m", "zero.cli"]


def run(*args, cwd, check=True):
    sets = [x for o in TINY for x in ("--set", o)]
    proc = subprocess.run([*ZERO, *args[:1], *sets, *args[1:]], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    if check and proc.returncode != 0:
        raise AssertionError(f"zero {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


def test_init_selfplay_train_match(tmp_path):
    run("init", "--out", "g0.pt", "--seed", "1", cwd=tmp_path)
    out = run("selfplay", "--model", "g0.pt", "--out", "games/s0.npz", "--seed", "2", "--sgf-dir", "sgf", cwd=tmp_path)
    summary = json.loads(out.stdout)
    assert summary["games"] == 6 and (tmp_path / "games/s0.npz").is_file()
    assert len(read_collection(tmp_path / "sgf" / "s0.sgf.gz")) == 6  # the shard's games, one collection
    run("train", "--init", "g0.pt", "--data", "games/s0.npz", "--out", "g1.pt", "--seed", "3",
        "--metrics-out", "m.jsonl", cwd=tmp_path)
    lines = [json.loads(x) for x in (tmp_path / "m.jsonl").read_text().splitlines()]
    assert len(lines) == 5 and {"loss", "policy_loss", "value_loss", "entropy", "lr", "positions_per_s"} <= set(lines[0])
    out = run("match", "--a", "g1.pt", "--b", "g0.pt", "--games", "4", "--seed", "4", "--out", "r.json", cwd=tmp_path)
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["games"] == 4 and json.loads(out.stdout) == result


def test_match_names_its_players_in_the_sgfs(tmp_path):
    """Two checkpoints with the same file name from different folders: --a-name/--b-name tell them apart
    (by default each is named by its file name)."""
    for d, seed in (("new", "1"), ("old", "2")):
        (tmp_path / d).mkdir()
        run("init", "--out", f"{d}/go-9.pt", "--seed", seed, cwd=tmp_path)
    run("match", "--a", "new/go-9.pt", "--b", "old/go-9.pt", "--games", "2", "--sgf-dir", "same", cwd=tmp_path)
    run("match", "--a", "new/go-9.pt", "--b", "old/go-9.pt", "--games", "2", "--sgf-dir", "named",
        "--a-name", "g26", "--b-name", "g25 [old]", cwd=tmp_path)

    same = read_collection(tmp_path / "same" / "match.sgf.gz")
    named = read_collection(tmp_path / "named" / "match.sgf.gz")
    assert {(g.black, g.white) for g in same} == {("go-9.pt", "go-9.pt")}
    assert [(g.black, g.white) for g in named] == [("g26", "g25 [old]"), ("g25 [old]", "g26")]
    proc = run("match", "--a", "new/go-9.pt", "--b", "old/go-9.pt", "--a-name", "", cwd=tmp_path, check=False)
    assert proc.returncode == 2 and "--a-name" in proc.stderr and "1 to 64 printable" in proc.stderr


def test_bench_json(tmp_path):
    out = run("bench", "--json", "--seconds", "2", "--games", "4", "--visits", "4", cwd=tmp_path)
    figures = json.loads(out.stdout)
    for key in ("nn_positions_per_s", "selfplay_positions_per_s", "selfplay_evals_per_s",
                "search_efficiency", "engine_moves_per_s", "peak_rss_mb", "settings"):
        assert key in figures
    assert figures["settings"]["concurrent_games"] == 4 and figures["engine_moves_per_s"] > 0


def test_bench_of_one_games_search_at_each_leaf_batch(tmp_path):
    """--leaf-batches: the single-game engine's visits a second; batching needs fewer network calls a visit."""
    run("init", "--out", "net.pt", cwd=tmp_path)
    out = run("bench", "--json", "--model", "net.pt", "--leaf-batches", "1,4", "--visits", "24", "--threads", "1",
              cwd=tmp_path)
    rows = json.loads(out.stdout)["single_game"]
    assert [r["leaf_batch"] for r in rows] == [1, 4]
    assert all(r["visits_per_s"] > 0 and r["visits"] == 24 and r["moves"] == 6 and r["threads"] == 1 for r in rows)
    proc = run("bench", "--leaf-batches", "0", cwd=tmp_path, check=False)
    assert proc.returncode == 2 and "--leaf-batches" in proc.stderr


def test_bench_of_training_with_and_without_channels_last(tmp_path):
    """--train: training positions a second under the train section's switches, a model's network or a fresh one."""
    run("init", "--out", "net.pt", "--set", "network.size=b2c16", cwd=tmp_path)
    rows = []
    for on in ("false", "true"):
        out = run("bench", "--json", "--train", "--seconds", "1", "--model", "net.pt", "--threads", "1",
                  "--set", "network.size=b2c16", "--set", "train.batch_size=16", "--set", f"train.channels_last={on}",
                  cwd=tmp_path)
        rows.append(json.loads(out.stdout)["train"])
    assert [r["channels_last"] for r in rows] == [False, True]
    for r in rows:
        assert r["batch_size"] == 16 and r["positions_per_s"] > 0 and r["threads"] == 1
        assert r["steps"] >= READ_EVERY and r["steps"] % READ_EVERY == 0  # whole groups of steps, read at once
        assert r["seconds"] >= 1 and r["device"] == "cpu" and r["minibatch_ms"] > 0
    human = run("bench", "--train", "--seconds", "1", "--model", "net.pt", "--threads", "1",
                "--set", "network.size=b2c16", "--set", "train.batch_size=16", cwd=tmp_path).stdout
    assert "training, batch 16:" in human and "whole steps; drawing the minibatch takes" in human


def test_bench_of_one_games_search_on_a_time_budget_with_batches_in_flight(tmp_path):
    """--seconds-per-move: the visits a move that time buys each search (what the ladder plays at)."""
    go = ["--set", "game.name=go", "--set", "game.size=7"]
    run("init", "--out", "net.pt", *go, cwd=tmp_path)
    out = run("bench", "--json", "--model", "net.pt", "--leaf-batches", "1,8", "--visits", "24",
              "--seconds-per-move", "0.2", "--set", "mcts.leaf_batches_in_flight=2", *go, cwd=tmp_path)
    rows = json.loads(out.stdout)["single_game"]
    assert [(r["leaf_batch"], r["in_flight"]) for r in rows] == [(1, 1), (8, 2)]
    for r in rows:
        timed = r["time_per_move"]
        assert timed["seconds_per_move"] == 0.2 and timed["visits"] >= 1 and len(timed["samples"]) == 3
    run("init", "--out", "gomoku.pt", cwd=tmp_path)
    proc = run("bench", "--model", "gomoku.pt", "--leaf-batches", "8", "--seconds-per-move", "0.2", cwd=tmp_path,
               check=False)
    assert proc.returncode != 0 and "--seconds-per-move measures Go positions" in proc.stderr


@pytest.mark.parametrize("args,needle", [
    (["selfplay", "--model", "missing.pt", "--out", "x.npz"], "missing.pt"),
    (["train", "--init", "bad.pt", "--data", "x.npz", "--out", "y.pt"], "bad.pt"),
    (["init", "--out", "z.pt", "--set", "selfplay.visitz=3"], "selfplay.visitz: unknown key"),
    (["init", "--out", "z.pt", "--set", "game.size=3"], "game.size"),
])
def test_errors_name_what_was_wrong(tmp_path, args, needle):
    (tmp_path / "bad.pt").write_bytes(b"garbage")
    proc = run(*args, cwd=tmp_path, check=False)
    assert proc.returncode == 2
    assert needle in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "z.pt").exists() and not (tmp_path / "y.pt").exists()


def test_corrupt_shard_in_training_is_named(tmp_path):
    run("init", "--out", "g0.pt", cwd=tmp_path)
    (tmp_path / "broken.npz").write_bytes(b"PK\x03\x04 not really")
    proc = run("train", "--init", "g0.pt", "--data", "broken.npz", "--out", "g1.pt", cwd=tmp_path, check=False)
    assert proc.returncode == 2 and "broken.npz" in proc.stderr
    assert not (tmp_path / "g1.pt").exists()


def test_without_the_shipped_champion_a_line_that_ships_one_refuses_instead_of_playing_at_random(
        tmp_path, monkeypatch, capsys):
    """An install without the repository's models/ (not editable) must not play a random 9x9 network."""
    import zero.cli as cli
    import zero.cli_args

    monkeypatch.setattr(zero.cli_args, "MODELS_DIR", tmp_path / "models")
    assert cli.main(["play", "--set", "game.size=9"]) == 2
    err = capsys.readouterr().err
    assert "the shipped champion for go-9 is not at" in err and "--model" in err


@pytest.mark.parametrize("args", [["gtp", "--model", "missing.pt"], ["play", "--params", "missing.yaml"],
                                  ["train", "--init", "missing.pt", "--data", "x.npz", "--out", "y.pt"]])
def test_a_missing_file_is_named_before_torch_is_imported(tmp_path, args):
    """What is not there is said at once: the command stops before importing torch (seconds on a cold start)."""
    code = ("import sys; from zero.cli import main; rc = main(sys.argv[1:]); "
            "print(rc, 'torch' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert proc.stdout.split() == ["2", "False"], proc.stderr
    assert f"{args[1]} {args[2]}: no such" in proc.stderr and "Traceback" not in proc.stderr
