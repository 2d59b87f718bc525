"""`zero gtp` answers while its engine loads on a thread (zero.engine_loader): the protocol's own commands and
the board's at once, the engine's once it is there, and `?` with the reason when it cannot be loaded."""

from __future__ import annotations

import io
import threading

import pytest

from zero.config import load_params
from zero.engine import Engine, EngineConfig
from zero.engine_loader import EngineLoadError, LoadingEngine
from zero.games import make_game
from zero.gtp import GtpEngine, run_gtp
from zero.gtp_protocol import GtpError

TINY = ["network.size=b1c8", "network.value_hidden=8", "gate.device=cpu", "mcts.symmetries=false"]
CHEAP = ["protocol_version", "name", "version", "list_commands", "known_command genmove", "boardsize 9",
         "komi 6.5", "clear_board", "play b E5", "play w C3", "undo", "showboard", "printsgf"]


@pytest.fixture(scope="module")
def params():
    return load_params(None, TINY)


def held_engine(params, failure: Exception | None = None):
    """A LoadingEngine whose build waits for `release` (then builds a real engine, or raises `failure`);
    released by itself after 30 s."""
    release = threading.Event()

    def build():
        assert release.wait(120)
        if failure is not None:
            raise failure
        return Engine(EngineConfig.from_params(params, 4), checkpoint=None, seed=0)

    timer = threading.Timer(30, release.set)  # a command that wrongly waits for the engine fails, never hangs
    timer.daemon = True
    timer.start()
    return LoadingEngine(build, make_game(params.game), failure=GtpError), release


def test_the_protocol_and_the_board_answer_before_the_engine_has_loaded(params):
    engine, release = held_engine(params)
    gtp = GtpEngine(engine)
    for command in CHEAP:
        assert gtp.handle(command).startswith("= "), command
    assert not engine.loaded  # every answer above came while the engine was still loading
    assert gtp.position.moves == [40]  # E5, and C3 taken back
    release.set()
    reply = gtp.handle("genmove w")  # the first command that needs the engine waits for it
    assert engine.loaded and reply.startswith("= ") and reply != "= resign\n\n"
    assert len(gtp.position.moves) == 2
    assert gtp.handle("final_score").startswith("= ")


def test_an_engine_that_cannot_load_answers_with_the_reason_and_the_protocol_goes_on(params):
    engine, release = held_engine(params, ValueError("net.pt: not a readable checkpoint"))
    gtp = GtpEngine(engine)
    release.set()
    for command in ("genmove b", "final_status_list dead", "final_score", "boardsize 13"):
        assert gtp.handle(command) == ("? the engine could not be loaded: net.pt: not a readable checkpoint\n\n"), \
            command
    assert gtp.handle("protocol_version") == "= 2\n\n"
    assert gtp.handle("play b E5") == "= \n\n"
    assert engine.error == "net.pt: not a readable checkpoint"


def test_an_engine_that_failed_before_the_session_began_still_serves_the_board(params):
    """A checkpoint refused faster than the session starts (torch already imported): the game given up front
    still sets up the board, and only the commands that need the engine answer `?`."""
    engine, release = held_engine(params, ValueError("net.pt: not a readable checkpoint"))
    release.set()
    with pytest.raises(GtpError):
        engine.wait()
    gtp = GtpEngine(engine)
    assert gtp.handle("protocol_version") == "= 2\n\n" and gtp.handle("play b E5") == "= \n\n"
    assert gtp.handle("genmove w") == "? the engine could not be loaded: net.pt: not a readable checkpoint\n\n"


def test_run_gtp_with_a_broken_checkpoint_names_it_and_exits_2(tmp_path):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    # the params say the network's input planes, so the board is set up before it loads: the session is served
    out, err = io.StringIO(), io.StringIO()
    known = load_params(None, [*TINY, "game.liberty_planes=true"])
    status = run_gtp(known, str(bad), 2, io.StringIO("protocol_version\ngenmove b\nquit\n"), out, stderr=err)
    assert status == 2
    responses = out.getvalue().split("\n\n")
    assert responses[0] == "= 2"
    assert responses[1].startswith("? the engine could not be loaded: ") and "bad.pt" in responses[1]
    assert responses[2] == "= "
    assert "zero gtp: error: " in err.getvalue() and "bad.pt" in err.getvalue()
    # they do not (a Go network may have been trained with the liberty planes): nothing is served
    out, err = io.StringIO(), io.StringIO()
    assert run_gtp(load_params(None, TINY), str(bad), 2, io.StringIO("protocol_version\n"), out, stderr=err) == 2
    assert out.getvalue() == "" and "bad.pt" in err.getvalue()


def test_the_engine_is_built_once_and_its_failure_is_typed(params):
    built = []

    def build():
        built.append(1)
        return Engine(EngineConfig.from_params(params, 2), checkpoint=None, seed=0)

    engine = LoadingEngine(build)  # no game given: reading it waits for the engine
    assert engine.game.name == "go" and engine.wait() is engine.wait() and built == [1]

    def fail():
        raise OSError("disk gone")

    broken = LoadingEngine(fail)
    with pytest.raises(EngineLoadError, match="could not be loaded: disk gone"):
        broken.genmove(None)


def test_zero_play_draws_the_board_and_takes_a_move_before_the_engine_has_loaded(params):
    import time

    from zero.play import run_play

    engine, release = held_engine(params)
    out, status = io.StringIO(), []
    game = threading.Thread(target=lambda: status.append(run_play(params, None, None, "black", io.StringIO("E5\n"),
                                                                  out, engine=engine)))
    game.start()
    deadline = time.monotonic() + 60
    while "You (Black) play E5" not in out.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert "A B C D E F G H J" in out.getvalue() and "You (Black) play E5" in out.getvalue()
    assert not engine.loaded  # the board was drawn and E5 taken while the engine was still loading
    release.set()
    game.join(120)
    assert status == [0] and "zero (White) " in out.getvalue()


def test_bench_gtp_latency_times_every_command_of_a_controller_session(tmp_path):
    """`zero bench --gtp-latency` starts a real `zero gtp` (here a 7x7 board: a fresh tiny network) and answers
    with a row per command, in the order sent."""
    import json
    import subprocess
    import sys

    from zero.bench import GTP_GAME, GTP_SETUP

    args = ["--set", "game.size=7", "--set", "network.size=b1c8", "--set", "network.value_hidden=8",
            "--set", "gate.visits=4"]
    done = subprocess.run([sys.executable, "-m", "zero.cli", "bench", "--gtp-latency", "--json", *args],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout)["gtp_latency"]
    rows = got["rows"]
    assert [r["command"] for r in rows] == ["protocol_version", *GTP_SETUP, "boardsize 7", "komi 7.5",
                                            "clear_board", *GTP_GAME]
    assert rows[0]["answer"] == "2" and rows[7]["answer"] != "resign"
    assert all(a["at"] <= b["at"] for a, b in zip(rows, rows[1:]))
    assert all(r["took"] >= 0 and (r["cpu"] is None or r["cpu"] > 0) for r in rows)
    assert got["gtp_args"] == args and got["cold_cache"] is False and len(got["load_before"]) == 3
