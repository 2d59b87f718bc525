"""The ladder: matches recorded as pairings, ratings fitted over a directory, the Elo plot."""

import json
import re
import shutil

import pytest

from zero.config import params_from_dict
from zero.cli import main
from zero.ladder import (LadderError, find_gnugo, fit_dir, openings, opponent_name, parse_anchor, play_pairing,
                         player_spec, scale_text)
from zero.ladder_plot import plot_dir
from zero.pairings import paired, read_pairings, write_pairing
from zero.sgf import read_collection, read_collection_text, write_collection
from zero.stats import mcnemar_exact

GOMOKU = params_from_dict({"game": {"name": "gomoku", "height": 6, "width": 6, "k": 4},
                           "network": {"size": "b1c8", "value_hidden": 8}, "gate": {"threads": 1}})
needs_gnugo = pytest.mark.skipif(shutil.which("gnugo") is None and shutil.which("/usr/games/gnugo") is None,
                                 reason="GNU Go is not installed")
GO = params_from_dict({"game": {"name": "go", "size": 9}, "network": {"size": "b1c8", "value_hidden": 8},
                       "gate": {"threads": 1}})


def test_names_and_anchor():
    assert opponent_name("gnugo:10") == "gnugo-l10"
    assert opponent_name("mcts:1000") == "mcts-1000"
    assert opponent_name("models/go-9.pt") == "go-9"
    assert parse_anchor("gnugo:10=1800") == ("gnugo-l10", 1800.0)
    with pytest.raises(LadderError, match="not of the form"):
        parse_anchor("gnugo:10")


def test_openings_are_distinct_and_central():
    ops = openings(9, 50, 2, seed=3)
    assert len(ops) == 50 and len({tuple(o) for o in ops}) == 50
    for o in ops:
        for a in o:
            r, c = divmod(a, 9)
            assert 2 <= r <= 6 and 2 <= c <= 6
        assert o[0] != o[1]
    assert openings(9, 50, 2, seed=3) == ops


def test_a_pairing_is_recorded_with_its_games(tmp_path):
    rec = play_pairing(GOMOKU, "mcts:200", "random", 6, seed=1, visits=8, out_dir=tmp_path, concurrent=6)
    assert rec["a"] == "mcts-200" and rec["b"] == "random" and rec["games"] == 6
    assert "a_sha256" not in rec and "b_sha256" not in rec  # neither is a network file
    assert rec["wins"] >= 5  # pure MCTS with 200 rollouts against random moves on 6x6, four in a row
    games = read_collection(tmp_path / "sgf" / "mcts-200--random--ladder.sgf.gz")
    assert [(g.black, g.white) for g in games] == [("mcts-200", "random"), ("random", "mcts-200")] * 3
    assert sum((g.result[0] == "B") == (i % 2 == 0) for i, g in enumerate(games)) == rec["wins"]
    assert sorted(p.name for p in (tmp_path / "sgf").iterdir()) == ["mcts-200--random--ladder.sgf.gz"]
    assert read_pairings(tmp_path) == [rec]
    black, white = rec["a_as_black"], rec["a_as_white"]  # a is black in games 0, 2, 4
    assert sum(black.values()) == sum(white.values()) == 3
    assert [black[k] + white[k] for k in ("wins", "losses", "draws")] == [rec["wins"], rec["losses"], rec["draws"]]
    assert "a_margins" not in rec  # Gomoku has no score
    with pytest.raises(LadderError, match="colour-swapped"):
        play_pairing(GOMOKU, "mcts:8", "random", 3, seed=1, visits=8, out_dir=tmp_path)


def test_a_pairing_played_with_the_same_settings_is_not_played_again(tmp_path, monkeypatch):
    import zero.match

    first = play_pairing(GOMOKU, "mcts:8", "random", 4, seed=1, visits=8, out_dir=tmp_path, concurrent=4)
    played = []
    run_match = zero.match.run_match
    monkeypatch.setattr(zero.match, "run_match", lambda *a, **k: played.append(1) or run_match(*a, **k))
    assert play_pairing(GOMOKU, "mcts:8", "random", 4, seed=1, visits=8, out_dir=tmp_path, concurrent=4) == first
    assert played == []
    # another seed, more games or its games gone: played again
    play_pairing(GOMOKU, "mcts:8", "random", 4, seed=2, visits=8, out_dir=tmp_path, concurrent=4)
    assert played == [1]
    again = play_pairing(GOMOKU, "mcts:8", "random", 6, seed=2, visits=8, out_dir=tmp_path, concurrent=6)
    assert played == [1, 1] and again["games"] == 6
    (tmp_path / "sgf" / "mcts-8--random--ladder.sgf.gz").unlink()
    play_pairing(GOMOKU, "mcts:8", "random", 6, seed=2, visits=8, out_dir=tmp_path, concurrent=6)
    assert played == [1, 1, 1]
    assert len(read_pairings(tmp_path)) == 1
    assert "search" not in read_pairings(tmp_path)[0]  # no network played


def test_a_network_pairing_keeps_its_search_and_another_search_plays_again(tmp_path, monkeypatch):
    import zero.match

    first = play_pairing(GOMOKU, "init", "random", 2, seed=1, visits=4, out_dir=tmp_path, a_name="fresh",
                         concurrent=2)
    assert first["search"] == GOMOKU.mcts.model_dump(mode="json")
    played = []
    run_match = zero.match.run_match
    monkeypatch.setattr(zero.match, "run_match", lambda *a, **k: played.append(1) or run_match(*a, **k))
    assert play_pairing(GOMOKU, "init", "random", 2, seed=1, visits=4, out_dir=tmp_path, a_name="fresh",
                        concurrent=2) == first and played == []
    other = GOMOKU.model_copy(update={"mcts": GOMOKU.mcts.model_copy(update={"leaf_batch": 4})})
    again = play_pairing(other, "init", "random", 2, seed=1, visits=4, out_dir=tmp_path, a_name="fresh", concurrent=2)
    assert played == [1] and again["search"]["leaf_batch"] == 4


def test_fit_over_a_directory_and_the_plot(tmp_path):
    write_pairing(tmp_path, {"a": "g0001", "b": "g0000", "wins": 30, "losses": 10, "draws": 0, "label": "gate"})
    write_pairing(tmp_path, {"a": "g0002", "b": "g0001", "wins": 25, "losses": 15, "draws": 0, "label": "gate"})
    # No games against the anchor yet: relative to g0000, and said so.
    fitted = fit_dir(tmp_path, fallback_anchor="g0000")
    assert fitted["anchor"] == {"player": "g0000", "elo": 0.0, "anchored": False, "scale_anchor": "gnugo-l1"}
    assert scale_text(fitted["anchor"]) == "relative to g0000 = 0 (no game against gnugo-l1, the scale's anchor)"
    assert 0 < fitted["ratings"]["g0001"]["elo"] < fitted["ratings"]["g0002"]["elo"]
    write_pairing(tmp_path, {"a": "g0002", "b": "gnugo-l1", "wins": 5, "losses": 15, "draws": 0})
    fitted = fit_dir(tmp_path, fallback_anchor="g0000")
    assert fitted["anchor"]["anchored"] and fitted["ratings"]["gnugo-l1"]["elo"] == 0  # the Go scale's anchor
    assert scale_text(fitted["anchor"]) == "(gnugo-l1 = 0)"
    # the ratings.json of a fit before the missing anchor was recorded
    assert (scale_text({"player": "g0000", "elo": 0.0, "anchored": False})
            == "relative to g0000 = 0 (no game against the scale's anchor)")
    assert fitted["ratings"]["g0002"]["elo"] < 0
    assert json.loads((tmp_path / "ratings.json").read_text()) == fitted
    (tmp_path / "players.json").write_text(json.dumps({
        "g0000": {"generation": 0, "compute_hours": 0.0},
        "g0001": {"generation": 1, "compute_hours": 0.5},
        "g0002": {"generation": 2, "compute_hours": 1.1}}))
    png = plot_dir(tmp_path, fitted)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_a_pool_of_named_networks_is_rated_against_the_outside_engine_and_plotted_as_points(tmp_path):
    """A `zero ladder` of networks against GNU Go has no generations: the ratings are relative to the
    engine (the same player in every such ladder), and the plot shows each player's point and interval."""
    import numpy as np
    from matplotlib.image import imread

    write_pairing(tmp_path, {"a": "fast-g11", "b": "gnugo-l5", "wins": 3, "losses": 17, "draws": 0})
    write_pairing(tmp_path, {"a": "gpu-g7", "b": "gnugo-l5", "wins": 8, "losses": 12, "draws": 0})
    fitted = fit_dir(tmp_path)  # the scale's anchor, level 1, played none of them
    assert fitted["anchor"] == {"player": "gnugo-l5", "elo": 0.0, "anchored": False, "scale_anchor": "gnugo-l1"}
    assert fitted["ratings"]["fast-g11"]["elo"] < fitted["ratings"]["gpu-g7"]["elo"] < 0
    png = plot_dir(tmp_path, fitted)
    pixels = imread(png)[..., :3]
    blue = np.all(np.abs(pixels - np.array([0x1F, 0x77, 0xB4]) / 255) < 0.02, axis=-1)  # the networks, C0
    orange = np.all(np.abs(pixels - np.array([0xFF, 0x7F, 0x0E]) / 255) < 0.02, axis=-1)  # the engine, C1
    rows = np.flatnonzero(blue.any(axis=1))
    assert blue.sum() > 200 and orange.sum() > 20
    assert rows.max() - rows.min() > 40  # two networks, one above the other
    # once the scale's anchor is in the pool (calibration games), the ratings are on the scale
    write_pairing(tmp_path, {"a": "gnugo-l1", "b": "gnugo-l5", "wins": 9, "losses": 11, "draws": 0})
    assert fit_dir(tmp_path)["anchor"] == {"player": "gnugo-l1", "elo": 0.0, "anchored": True}


def test_a_malformed_pairing_is_named(tmp_path):
    (tmp_path / "pairings").mkdir()
    (tmp_path / "pairings" / "bad.json").write_text('{"a": "x", "b": "y", "wins": "many"}')
    with pytest.raises(LadderError, match="bad.json"):
        read_pairings(tmp_path)
    with pytest.raises(LadderError, match="not a ladder directory"):
        read_pairings(tmp_path / "nothing")


@needs_gnugo
def test_gnugo_is_an_opponent(tmp_path):
    assert find_gnugo().endswith("gnugo")
    rec = play_pairing(GO, "init", "gnugo:1", 2, seed=5, visits=4, out_dir=tmp_path, a_name="fresh", concurrent=2)
    # An untrained network against GNU Go: GNU Go wins both, refereed by zero's Tromp-Taylor count.
    assert (rec["wins"], rec["losses"]) == (0, 2)
    games = read_collection(tmp_path / "sgf" / "fresh--gnugo-l1--ladder.sgf.gz")
    assert len(games) == 2 and all(g.result.startswith("W+") for g in games[0::2])


@needs_gnugo
def test_gnugo_levels_above_ten_are_opponents(tmp_path):
    import shlex
    import subprocess

    command = player_spec("gnugo:12")
    assert command.startswith("gtp:") and command.endswith("--level 12")
    gtp = "boardsize 9\nclear_board\nkomi 7.5\nplay b e5\ngenmove w\nquit\n"
    answer = subprocess.run(shlex.split(command[4:]), input=gtp, capture_output=True, text=True, timeout=60)
    replies = [line for line in answer.stdout.splitlines() if line.startswith("=")]
    assert len(replies) == 6 and replies[4][2:].strip() not in ("", "PASS", "resign")  # level 12 plays a move
    with pytest.raises(LadderError, match="GNU Go levels are 0 to 16"):
        player_spec("gnugo:17")
    # without level 10 (the default anchor) in the pool, the reference is the highest level by number
    write_pairing(tmp_path, {"a": "gnugo-l5", "b": "gnugo-l12", "wins": 9, "losses": 11, "draws": 0})
    assert fit_dir(tmp_path)["anchor"] == {"player": "gnugo-l12", "elo": 0.0, "anchored": False,
                                           "scale_anchor": "gnugo-l1"}


GOMOKU_ARGS = ["--set", "game.name=gomoku", "--set", "game.height=6", "--set", "game.width=6", "--set", "game.k=4",
               "--set", "network.size=b1c8", "--set", "network.value_hidden=8", "--set", "ladder.visits=8",
               "--set", "gate.threads=1"]


def test_zero_ladder_command_plays_fits_and_plots(tmp_path, capsys):
    from zero.cli import main

    model = tmp_path / "net.pt"
    assert main(["init", "--out", str(model), *GOMOKU_ARGS]) == 0
    out = tmp_path / "lad"
    code = main(["ladder", *GOMOKU_ARGS, "--model", str(model), "--opponents", "mcts:30,random", "--games", "4",
                 "--calibration-games", "2", "--anchor", "random=0", "--out", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    assert "ratings (random = 0)" in text and "net" in text and "mcts-30" in text
    names = sorted(p.stem for p in (out / "pairings").glob("*.json"))
    assert names == ["mcts-30--random--calibration", "net--mcts-30--ladder", "net--random--ladder"]
    assert (out / "elo.png").is_file()
    import hashlib

    record = json.loads((out / "pairings" / "net--random--ladder.json").read_text())
    assert record["a_sha256"] == hashlib.sha256(model.read_bytes()).hexdigest() and "b_sha256" not in record
    # --plot refits what is there and draws it elsewhere, playing nothing.
    assert main(["ladder", *GOMOKU_ARGS, "--plot", str(out), "--anchor", "random=0", "--png",
                 str(tmp_path / "again.png")]) == 0
    assert (tmp_path / "again.png").is_file()
    assert sorted(p.stem for p in (out / "pairings").glob("*.json")) == names


def test_zero_ladder_calibration_games_zero_plays_no_calibration(tmp_path, capsys):
    """--calibration-games 0 (as ladder.calibration_games: 0) plays only the network's pairings; -1 is refused.
    With no game against the scale's anchor, the ratings say which player they are relative to."""
    from zero.cli import main

    model = tmp_path / "net.pt"
    assert main(["init", "--out", str(model), *GOMOKU_ARGS]) == 0
    out = tmp_path / "lad"
    assert main(["ladder", *GOMOKU_ARGS, "--model", str(model), "--opponents", "mcts:30,random", "--games", "2",
                 "--calibration-games", "0", "--anchor", "mcts:1000=0", "--out", str(out)]) == 0
    assert sorted(p.stem for p in (out / "pairings").glob("*.json")) == ["net--mcts-30--ladder", "net--random--ladder"]
    text = " ".join(capsys.readouterr().out.split())  # the table's title may wrap
    assert "ratings relative to mcts-30 = 0 (no game against mcts-1000, the scale's anchor)" in text
    assert json.loads((out / "ratings.json").read_text())["anchor"]["scale_anchor"] == "mcts-1000"
    with pytest.raises(SystemExit):
        main(["ladder", *GOMOKU_ARGS, "--model", str(model), "--calibration-games", "-1", "--out", str(out)])
    assert "--calibration-games: must be a whole number from 0 to" in capsys.readouterr().err


def test_zero_ladder_games_zero_plays_only_the_calibration(tmp_path, capsys):
    """--games 0 links the fixed opponents (their calibration games) without playing the network."""
    from zero.cli import main

    model = tmp_path / "net.pt"
    assert main(["init", "--out", str(model), *GOMOKU_ARGS]) == 0
    out = tmp_path / "lad"
    capsys.readouterr()
    assert main(["ladder", *GOMOKU_ARGS, "--model", str(model), "--opponents", "mcts:30,random", "--games", "0",
                 "--out", str(out)]) == 2
    assert "give --calibration-games too" in capsys.readouterr().err and not out.exists()
    assert main(["ladder", *GOMOKU_ARGS, "--model", str(model), "--opponents", "mcts:30,random", "--games", "0",
                 "--calibration-games", "2", "--anchor", "random=0", "--out", str(out)]) == 0
    assert [p.stem for p in (out / "pairings").glob("*.json")] == ["mcts-30--random--calibration"]


def test_zero_ladder_refuses_before_playing(tmp_path, capsys):
    from zero.cli import main

    model = tmp_path / "net.pt"
    main(["init", "--out", str(model), *GOMOKU_ARGS])
    capsys.readouterr()
    code = main(["ladder", *GOMOKU_ARGS, "--model", str(model), "--opponents", "mcts:30,gnugo:1",
                 "--out", str(tmp_path / "lad")])
    err = capsys.readouterr().err
    assert code == 2 and "zero: error:" in err and "GNU Go plays Go" in err
    assert not (tmp_path / "lad").exists()
    assert main(["ladder", *GOMOKU_ARGS, "--plot", str(tmp_path / "nothing")]) == 2
    assert "not a ladder directory" in capsys.readouterr().err


def test_shipped_champions_load_and_are_the_default_player(capsys):
    """Every models/<line>.pt has its lineage, loads, and is what `zero match` plays when no --a is given."""
    from pathlib import Path

    from zero.cli import main
    from zero.cli_args import shipped_model
    from zero.config import load_params
    from zero.network import load_checkpoint
    from zero.shards import file_sha256

    models = Path(__file__).resolve().parents[1] / "models"
    shipped = sorted(models.glob("*.pt"))
    assert shipped, "no champion is shipped in models/"
    for pt in shipped:
        lineage = json.loads(pt.with_suffix(".json").read_text())
        assert lineage["sha256"] == file_sha256(pt) and lineage["line"] == pt.stem
        assert lineage["totals"]["generations"] >= 1 and lineage["runs"][-1]["generations"]
        load_checkpoint(pt)
    params = load_params(models.parent / "campaigns" / "gomoku-6x6x4.yaml")
    assert shipped_model(params) == models / "gomoku-6x6x4.pt"
    code = main(["match", "--params", str(models.parent / "campaigns" / "gomoku-6x6x4.yaml"), "--b", "random",
                 "--games", "4", "--visits", "16", "--set", "gate.threads=1"])
    out = capsys.readouterr()
    assert code == 0 and "shipped champion" in out.err
    assert json.loads(out.out)["wins"] == 4  # the shipped champion against random moves


def _params_with(cli_args: list[str]):
    """The params `zero` reads with these --set arguments (zero.cli's own reading of them)."""
    from argparse import Namespace

    from zero.cli_args import params_of

    return params_of(Namespace(params=None, set=cli_args[1::2]))


def test_a_ladder_at_a_time_a_move_plays_at_the_visits_that_time_buys(tmp_path, capsys):
    """--seconds-per-move: the network's own engine measures what the time buys here; the match is
    played at those visits and the pairing says so. The ladder resumes and grows at the visits it measured."""
    from zero import ladder
    from zero.cli import main

    go_args = ["--set", "game.size=7", "--set", "network.size=b1c8", "--set", "network.value_hidden=8",
               "--set", "gate.threads=1", "--set", "mcts.leaf_batch=4"]
    model = tmp_path / "net.pt"
    assert main(["init", "--out", str(model), *go_args]) == 0
    out = tmp_path / "lad"
    assert main(["ladder", *go_args, "--model", str(model), "--opponents", "random", "--games", "2",
                 "--calibration-games", "0", "--seconds-per-move", "0.2", "--out", str(out)]) == 0
    record = json.loads((out / "pairings" / "net--random--ladder.json").read_text())
    timed = record["time_per_move"]
    assert timed["seconds_per_move"] == 0.2 and len(timed["samples"]) == 3 and record["leaf_batch"] == 4
    assert record["visits"] == timed["visits"] == sorted(s["visits"] for s in timed["samples"])[1] > 1
    assert all(0.15 < s["seconds"] < 5 for s in timed["samples"])
    assert f"buys net {record['visits']} visits" in capsys.readouterr().err
    assert timed["threads"] == 1 and timed["cpu"]
    # run again, and on to more games: the ladder keeps the visits it measured first rather than timing again
    pairing = out / "pairings" / "net--random--ladder.json"
    written = pairing.stat().st_mtime_ns
    timed_args = ["ladder", *go_args, "--model", str(model), "--opponents", "random", "--calibration-games", "0",
                  "--seconds-per-move", "0.2", "--out", str(out)]
    assert main([*timed_args, "--games", "2"]) == 0 and pairing.stat().st_mtime_ns == written
    assert f"plays at the {record['visits']} visits this ladder measured first" in capsys.readouterr().err
    assert main([*timed_args, "--games", "4"]) == 0
    more = json.loads(pairing.read_text())
    assert more["games"] == 4 and more["time_per_move"] == timed and more["visits"] == record["visits"]
    # another time a move, or another search, is timed afresh
    assert ladder.kept_timing(out, _params_with(go_args), str(model), 0.3) is None
    assert ladder.kept_timing(out, _params_with([*go_args, "--set", "mcts.c_puct=2.0"]), str(model), 0.2) is None
    assert ladder.kept_timing(out, _params_with(go_args), str(model), 0.2) == timed
    assert main(["ladder", *go_args, "--model", str(model), "--opponents", "random", "--games", "2",
                 "--seconds-per-move", "0", "--out", str(out)]) == 2


def test_fresh_starts_are_the_networks_own_and_the_same_when_played_again(tmp_path, capsys):
    """--seed fresh: the seed comes from the network's sha256 (two networks meet different openings, neither the
    usual seed-0 ones), the pairing says so, and a second run finds the pairing played."""
    from zero.ladder import fresh_seed
    from zero.shards import file_sha256

    go_args = ["--set", "game.size=7", "--set", "network.size=b1c8", "--set", "network.value_hidden=8",
               "--set", "gate.threads=1", "--set", "ladder.visits=8"]
    nets = [tmp_path / "one.pt", tmp_path / "two.pt"]
    for seed, net in enumerate(nets):
        assert main(["init", "--out", str(net), "--seed", str(seed), *go_args]) == 0
    seeds = [fresh_seed(net) for net in nets]
    assert seeds[0] == int(file_sha256(nets[0])[:15], 16) and len(set(seeds)) == 2 and 0 not in seeds
    assert openings(7, 5, 2, seeds[0]) not in (openings(7, 5, 2, 0), openings(7, 5, 2, seeds[1]))
    out = tmp_path / "lad"
    args = ["ladder", *go_args, "--model", str(nets[0]), "--opponents", "random", "--games", "2",
            "--calibration-games", "0", "--seed", "fresh", "--out", str(out)]
    assert main(args) == 0
    assert f"fresh starts for one: seed {seeds[0]}" in capsys.readouterr().err
    record = json.loads((out / "pairings" / "one--random--ladder.json").read_text())
    assert (record["seed"], record["starts"]) == (seeds[0], "fresh")
    pairing = out / "pairings" / "one--random--ladder.json"
    written = pairing.stat().st_mtime_ns
    assert main(args) == 0 and pairing.stat().st_mtime_ns == written  # played once: the run again reads it
    with pytest.raises(SystemExit):
        main(["ladder", *go_args, "--model", str(nets[0]), "--seed", "stale", "--out", str(out)])


def test_a_go_pairing_records_each_games_margin_from_as_side(tmp_path):
    small = params_from_dict({"game": {"name": "go", "size": 5}, "network": {"size": "b1c8", "value_hidden": 8},
                              "gate": {"threads": 1}})
    rec = play_pairing(small, "mcts:30", "random", 6, seed=4, visits=8, out_dir=tmp_path, concurrent=6)
    margins = rec["a_margins"]
    games = read_collection(tmp_path / "sgf" / "mcts-30--random--ladder.sgf.gz")
    assert len(margins) == len(games) == 6
    for i, (margin, sgf) in enumerate(zip(margins, games)):
        assert sgf.black == ("mcts-30" if i % 2 == 0 else "random")
        winner, points = sgf.result.split("+")  # e.g. W+12.5: the referee's count, as the record has it
        a_won = (winner == "B") == (i % 2 == 0)
        assert margin == (float(points) if a_won else -float(points))
    assert sum(m > 0 for m in margins) == rec["wins"]
    assert rec["a_as_black"]["wins"] == sum(m > 0 for m in margins[0::2])


SMALL_GO = params_from_dict({"game": {"name": "go", "size": 5}, "network": {"size": "b1c8", "value_hidden": 8},
                             "gate": {"threads": 1}})


class Interrupted(Exception):
    pass


def _interrupt_after(games: int):
    def progress(done, total, moves):
        if done >= games:
            raise Interrupted(f"stopped after {done} of {total} games")
    return progress


def _interrupted(out_dir, games: int, after: int, seed: int = 4) -> dict:
    """A pairing of mcts:30 against random stopped after `after` games: its kept games by index."""
    with pytest.raises(Interrupted):
        play_pairing(SMALL_GO, "mcts:30", "random", games, seed=seed, visits=8, out_dir=out_dir, concurrent=2,
                     progress=_interrupt_after(after))
    games = out_dir / ".partial" / "mcts-30--random--ladder" / "games.jsonl"
    return {g["index"]: g for g in map(json.loads, games.read_text().splitlines())}


def test_an_interrupted_pairing_resumes_with_the_games_it_finished(tmp_path):
    key = "mcts-30--random--ladder"
    partial = tmp_path / ".partial" / key
    kept = _interrupted(tmp_path, 8, 3)
    assert len(kept) == 3 and not (tmp_path / "pairings").exists()  # no record of a pairing not yet played out
    assert json.loads((partial / "settings.json").read_text())["seed"] == 4

    calls = []
    rec = play_pairing(SMALL_GO, "mcts:30", "random", 8, seed=4, visits=8, out_dir=tmp_path, concurrent=2,
                       progress=lambda *args: calls.append(args))
    assert calls[0] == (3, 8, None) and calls[-1][:2] == (8, 8) and len(calls) == 1 + 5  # five games played now
    assert rec["games"] == 8 and rec["games_resumed"] == 3 and rec["seconds"] >= max(g["seconds"] for g in kept.values())
    games = read_collection(tmp_path / "sgf" / f"{key}.sgf.gz")
    assert len(games) == 8
    for index, game in kept.items():  # the games kept are the collection's, move for move and result
        assert games[index].moves == game["moves"]
        assert (games[index].result[0] == "B") == (game["result"] == 1)
    a_won = [(g.result[0] == "B") == (i % 2 == 0) for i, g in enumerate(games)]
    assert rec["wins"] == sum(a_won) and sum(m > 0 for m in rec["a_margins"]) == rec["wins"]
    assert not (tmp_path / ".partial").exists()
    assert read_pairings(tmp_path) == [rec]


def test_a_pairing_of_fewer_games_is_recorded_from_a_longer_ones_kept_games_which_goes_on_later(tmp_path):
    key = "mcts-30--random--ladder"
    partial = tmp_path / ".partial" / key
    kept = _interrupted(tmp_path, 12, 7)
    assert len(kept) == 7 and max(kept) >= 6
    short = play_pairing(SMALL_GO, "mcts:30", "random", 6, seed=4, visits=8, out_dir=tmp_path, concurrent=2)
    assert short["games"] == 6 and short["games_resumed"] == len([i for i in kept if i < 6])
    games = read_collection(tmp_path / "sgf" / f"{key}.sgf.gz")
    assert [g.moves for g in games[:6]] == [kept[i]["moves"] if i in kept else games[i].moves for i in range(6)]
    assert partial.is_dir() and json.loads((partial / "settings.json").read_text())["games"] == 12  # games 6+ kept
    full = play_pairing(SMALL_GO, "mcts:30", "random", 12, seed=4, visits=8, out_dir=tmp_path, concurrent=2)
    assert full["games"] == 12 and full["games_resumed"] >= 7 and not (tmp_path / ".partial").exists()
    games = read_collection(tmp_path / "sgf" / f"{key}.sgf.gz")
    assert all(games[i].moves == game["moves"] for i, game in kept.items())  # the kept games, not played again
    assert read_pairings(tmp_path) == [full]


def _collection(out_dir, key="mcts-30--random--ladder"):
    return [(g.moves, g.result, g.properties["C"]) for g in read_collection(out_dir / "sgf" / f"{key}.sgf.gz")]


def test_a_recorded_pairing_lends_its_games_to_a_longer_one_and_a_shorter_one(tmp_path, capsys):
    probe = play_pairing(SMALL_GO, "mcts:30", "random", 4, seed=4, visits=8, out_dir=tmp_path, concurrent=2)
    first = _collection(tmp_path)
    # the 4-game probe goes on to 8: its games are the 8-game pairing's first 4, not played again
    calls = []
    full = play_pairing(SMALL_GO, "mcts:30", "random", 8, seed=4, visits=8, out_dir=tmp_path, concurrent=2,
                        progress=lambda *args: calls.append(args))
    assert calls[0] == (4, 8, None) and len(calls) == 1 + 4
    assert "mcts-30--random--ladder.sgf.gz: 4 games of the recorded pairing carried into this 8-game one" in \
        capsys.readouterr().err
    assert full["games"] == 8 and full["games_resumed"] == 4 and full["seconds"] >= probe["seconds"]
    games = _collection(tmp_path)
    assert games[:4] == first  # moves, results (the referee's margins and resignations) and seeds
    assert full["a_margins"][:4] == probe["a_margins"]
    assert read_pairings(tmp_path) == [full] and not (tmp_path / ".partial").exists()
    # a 4-game pairing asked of the directory now is the 8-game one's first 4; the other 4 wait in .partial/ and
    # the 8-game pairing asked again plays nothing
    short = play_pairing(SMALL_GO, "mcts:30", "random", 4, seed=4, visits=8, out_dir=tmp_path, concurrent=2,
                         progress=_interrupt_after(5))
    assert short["games_resumed"] == 4 and _collection(tmp_path) == first
    assert {k: short[k] for k in ("wins", "losses", "draws")} == {k: probe[k] for k in ("wins", "losses", "draws")}
    again = play_pairing(SMALL_GO, "mcts:30", "random", 8, seed=4, visits=8, out_dir=tmp_path, concurrent=2,
                         progress=_interrupt_after(9))
    assert again["games_resumed"] == 8 and _collection(tmp_path) == games and not (tmp_path / ".partial").exists()


def test_a_recorded_pairing_whose_games_disagree_with_it_lends_none_and_is_named(tmp_path, capsys):
    play_pairing(SMALL_GO, "mcts:30", "random", 4, seed=4, visits=8, out_dir=tmp_path, concurrent=2)
    sgf = tmp_path / "sgf" / "mcts-30--random--ladder.sgf.gz"
    texts = ["(;" + t for t in read_collection_text(sgf).split("(;")[1:]]
    write_collection(sgf, texts[:2])
    capsys.readouterr()
    full = play_pairing(SMALL_GO, "mcts:30", "random", 8, seed=4, visits=8, out_dir=tmp_path, concurrent=2)
    assert "games_resumed" not in full
    assert f"{sgf}: its games are not carried into this pairing (2 games where the record says 4)" in \
        capsys.readouterr().err
    # a game's players swapped: named by the game
    write_collection(sgf, [texts[0].replace("PB[mcts-30]PW[random]", "PB[random]PW[mcts-30]"), *texts[1:]])
    (tmp_path / "pairings" / "mcts-30--random--ladder.json").write_text(json.dumps({**full, "games": 4}))
    rec = play_pairing(SMALL_GO, "mcts:30", "random", 2, seed=4, visits=8, out_dir=tmp_path, concurrent=2)
    assert "games_resumed" not in rec
    assert "(game 1 is random against mcts-30, not mcts-30 against random)" in capsys.readouterr().err
    # a result that is no count, resignation or draw: named by the game and its text
    write_collection(sgf, [texts[0], re.sub(r"RE\[[^]]*\]", "RE[W+lots]", texts[1]), *texts[2:]])
    (tmp_path / "pairings" / "mcts-30--random--ladder.json").write_text(json.dumps({**rec, "games": 4}))
    again = play_pairing(SMALL_GO, "mcts:30", "random", 2, seed=4, visits=8, out_dir=tmp_path, concurrent=2)
    assert "games_resumed" not in again
    assert "(game 2's result 'W+lots' is not W+<points>, B+R or 0)" in capsys.readouterr().err


def test_the_kept_games_of_other_settings_are_not_resumed_and_a_broken_one_is_named(tmp_path):
    key = "mcts-30--random--ladder"
    with pytest.raises(Interrupted):
        play_pairing(SMALL_GO, "mcts:30", "random", 8, seed=4, visits=8, out_dir=tmp_path, concurrent=2,
                     progress=_interrupt_after(2))
    rec = play_pairing(SMALL_GO, "mcts:30", "random", 4, seed=5, visits=8, out_dir=tmp_path, concurrent=2)
    assert "games_resumed" not in rec and rec["seed"] == 5 and not (tmp_path / ".partial").exists()
    with pytest.raises(Interrupted):
        play_pairing(SMALL_GO, "mcts:30", "random", 8, seed=6, visits=8, out_dir=tmp_path, concurrent=2,
                     progress=_interrupt_after(1))
    broken = tmp_path / ".partial" / key / "games.jsonl"
    broken.write_text(broken.read_text() + '{"index": 0, "mo\n')
    with pytest.raises(LadderError, match=f"{broken.name}, line 2: .*delete the line to play that game again"):
        play_pairing(SMALL_GO, "mcts:30", "random", 8, seed=6, visits=8, out_dir=tmp_path, concurrent=2)
    assert read_pairings(tmp_path)[0]["seed"] == 5  # the recorded pairing is left as it was


def test_a_pairing_resumes_with_its_network_moved_and_says_which_settings_end_the_kept_games(tmp_path, capsys):
    net = tmp_path / "net.pt"
    assert main(["init", "--out", str(net), "--set", "game.size=5", "--set", "network.size=b1c8",
                 "--set", "network.value_hidden=8"]) == 0
    out = tmp_path / "lad"
    with pytest.raises(Interrupted):
        play_pairing(SMALL_GO, str(net), "random", 6, seed=4, visits=8, out_dir=out, concurrent=2,
                     progress=_interrupt_after(2))
    games = out / ".partial" / "net--random--ladder" / "games.jsonl"
    kept = {g["index"]: g for g in map(json.loads, games.read_text().splitlines())}
    assert len(kept) >= 2
    moved = tmp_path / "elsewhere" / "g1.pt"  # the same network, read from another path
    moved.parent.mkdir()
    shutil.copyfile(net, moved)
    rec = play_pairing(SMALL_GO, str(moved), "random", 6, seed=4, visits=8, out_dir=out, a_name="net", concurrent=2)
    assert rec["games_resumed"] == len(kept) and rec["a_spec"] == str(moved)
    collection = read_collection(out / "sgf" / "net--random--ladder.sgf.gz")
    assert all(collection[i].moves == g["moves"] for i, g in kept.items())
    # the recorded pairing stands for its network read from the first path again: nothing is played
    again = play_pairing(SMALL_GO, str(net), "random", 6, seed=4, visits=8, out_dir=out, a_name="net", concurrent=2,
                         progress=_interrupt_after(0))
    assert again == rec == read_pairings(out)[0]
    # another network under the same name is another pairing: its games go, and the message says why
    with pytest.raises(Interrupted):
        play_pairing(SMALL_GO, str(net), "random", 8, seed=6, visits=8, out_dir=out, concurrent=2,
                     progress=_interrupt_after(1))
    assert main(["init", "--out", str(moved), "--seed", "9", "--set", "game.size=5", "--set", "network.size=b1c8",
                 "--set", "network.value_hidden=8"]) == 0
    capsys.readouterr()
    other = play_pairing(SMALL_GO, str(moved), "random", 2, seed=6, visits=8, out_dir=out, a_name="net",
                         concurrent=2)
    assert "games_resumed" not in other
    assert "were played with other settings (a_sha256); they are not this pairing's and are removed" in \
        capsys.readouterr().err


@pytest.fixture(scope="module")
def two_ladders(tmp_path_factory):
    """Two players' ladders against the same opponent on the same starts (seed 4), and one on other starts."""
    root = tmp_path_factory.mktemp("paired")
    recs = {}
    for name, spec, seed in (("strong", "mcts:40", 4), ("weak", "mcts:2", 4), ("other", "mcts:2", 5)):
        recs[name] = play_pairing(SMALL_GO, spec, "random", 12, seed=seed, visits=8, out_dir=root / name,
                                  a_name=name, concurrent=12)
    return root, recs


def test_two_ladders_are_compared_start_by_start(two_ladders):
    root, recs = two_ladders
    (row,) = paired(root / "strong", "strong", root / "weak", "weak")
    won = {k: [m > 0 for m in recs[k]["a_margins"]] for k in ("strong", "weak")}  # nobody resigns here
    pairs = list(zip(won["strong"], won["weak"]))
    assert row["opponent"] == "random" and row["games"] == 12
    assert (row["a_wins"], row["b_wins"]) == (recs["strong"]["wins"], recs["weak"]["wins"])
    assert row["both"] == sum(x and y for x, y in pairs)
    assert (row["a_only"], row["b_only"]) == (sum(x > y for x, y in pairs), sum(y > x for x, y in pairs))
    assert row["both"] + row["a_only"] + row["b_only"] + row["neither"] == 12
    assert row["p"] == mcnemar_exact(row["a_only"], row["b_only"])
    (back,) = paired(root / "weak", "weak", root / "strong", "strong")
    assert (back["a_only"], back["b_only"], back["p"]) == (row["b_only"], row["a_only"], row["p"])


def test_ladders_on_other_starts_or_with_other_openings_are_refused(two_ladders, tmp_path):
    root, _ = two_ladders
    with pytest.raises(LadderError, match=r"no opponent on the same starts .*seed \+ i, so list the opponents"):
        paired(root / "strong", "strong", root / "other", "other")
    altered = tmp_path / "weak"
    shutil.copytree(root / "weak", altered)
    collection = altered / "sgf" / "weak--random--ladder.sgf.gz"
    texts = ["(;" + t for t in read_collection_text(collection).split("(;")[1:]]
    first = texts[3].index(";B[") + 3
    point = texts[3][first:first + 2]
    texts[3] = texts[3][:first] + ("aa" if point != "aa" else "ee") + texts[3][first + 2:]
    write_collection(collection, texts)
    with pytest.raises(LadderError, match="game 3 opens differently"):
        paired(root / "strong", "strong", altered, "weak")
    write_collection(collection, texts[:-1])
    with pytest.raises(LadderError, match="11 games for a pairing of 12 games"):
        paired(root / "strong", "strong", altered, "weak")
    collection.write_bytes(collection.read_bytes()[:-20])
    with pytest.raises(LadderError, match="weak--random--ladder.sgf.gz: not a readable gzip"):
        paired(root / "strong", "strong", altered, "weak")


def test_a_ladder_of_sgf_folders_is_packed_before_it_is_read_or_played_on(two_ladders, tmp_path):
    """A ladder directory written before the collections (a folder of SGF files a pairing) is neither played
    again nor read: the error says to pack it, and once packed it compares as before."""
    root, _ = two_ladders
    old = tmp_path / "weak"
    shutil.copytree(root / "weak", old)
    collection = old / "sgf" / "weak--random--ladder.sgf.gz"
    folder = collection.with_name("weak--random--ladder")
    folder.mkdir()
    for i, text in enumerate("(;" + t for t in read_collection_text(collection).split("(;")[1:]):
        (folder / f"weak--random--ladder-{i:04d}.sgf").write_text(text)
    collection.unlink()
    with pytest.raises(LadderError, match="zero sgf pack"):
        paired(root / "strong", "strong", old, "weak")
    with pytest.raises(LadderError, match="zero sgf pack"):
        play_pairing(SMALL_GO, "mcts:2", "random", 12, seed=4, visits=8, out_dir=old, a_name="weak", concurrent=12)
    assert main(["sgf", "pack", str(old)]) == 0
    assert not folder.exists() and collection.is_file()
    assert paired(root / "strong", "strong", old, "weak") == paired(root / "strong", "strong", root / "weak", "weak")


def test_mcnemar_exact():
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(10, 0) == mcnemar_exact(0, 10) == pytest.approx(2 / 2**10)
    assert mcnemar_exact(18, 12) == pytest.approx(0.3616, abs=1e-4)  # 2 P(X <= 12), X ~ binomial(30, 1/2)
    assert mcnemar_exact(5, 5) == 1.0
    with pytest.raises(ValueError, match="a_only"):
        mcnemar_exact(-1, 3)


def test_zero_paired_prints_and_writes_the_comparison(two_ladders, tmp_path, capsys):
    root, _ = two_ladders
    out = tmp_path / "paired.json"
    assert main(["paired", str(root / "strong"), str(root / "weak"), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "strong alone" in text and "exact McNemar p" in text
    record = json.loads(out.read_text())
    assert record["a"] == "strong" and record["b"] == "weak"
    assert record["opponents"] == paired(root / "strong", "strong", root / "weak", "weak")
    both = tmp_path / "both"
    shutil.copytree(root / "strong", both)
    shutil.copytree(root / "weak" / "pairings", both / "pairings", dirs_exist_ok=True)
    assert main(["paired", str(both), str(root / "weak")]) == 2
    assert "ladder pairings of 2 players (strong, weak)" in capsys.readouterr().err
