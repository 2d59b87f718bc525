"""The GTP engine: a whole session with the real Engine, protocol details, and the CLI entry."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from zero.config import load_params
from zero.games.base import text_to_point
from zero.gtp import GtpEngine, run_gtp, score_text
from zero.sgf import game_to_sgf, parse_sgf

ROOT = Path(__file__).resolve().parents[1]
TINY = ["network.size=b1c8", "network.value_hidden=8", "gate.device=cpu", "mcts.symmetries=false"]


@pytest.fixture(scope="module")
def params():
    return load_params(None, TINY)


@pytest.fixture(scope="module")
def engine(params):
    from zero.engine import Engine

    return Engine(params, checkpoint=None, visits=4, seed=0)


def session(params, engine, commands: list[str]) -> list[str]:
    """Run commands through `GtpEngine.run`; the responses, each without its blank line."""
    out = io.StringIO()
    GtpEngine(params, engine).run(io.StringIO("\n".join(commands) + "\n"), out)
    text = out.getvalue()
    assert text.endswith("\n\n")
    return text[:-2].split("\n\n")


# Black wall on column D, white wall on column G, 9x9: black owns A-D (36),
# white G-J (27; no column I), columns E and F touch both and count for nobody.
# 36 - 27 - 6.5 komi = B+2.5.
WALLS = [m for r in range(1, 10) for m in (f"play b D{r}", f"play w G{r}")]


def test_whole_session_with_the_real_engine(params, engine, tmp_path):
    record = tmp_path / "game.sgf"
    record.write_text(game_to_sgf([text_to_point(v, 9, 9) for v in ["E5", "C3", "G7"]], size=9, komi=5.5))
    commands = [
        "1 protocol_version",
        "2 name",
        "version",
        "known_command genmove",
        "known_command frobnicate",
        "boardsize 9",
        "clear_board",
        "komi 6.5",
        # illegal moves: suicide (black A1 inside white A2/B1), occupied, ko
        "play w A2",  # black to move: zero passes for black first
        "play w B1",
        "play b A1",
        "play B a2",
        "clear_board",
        "play b D6", "play w E6", "play b C5", "play w F5", "play b D4", "play w E4",
        "play b A1", "play w D5", "play b E5",
        "play w D5",  # retakes the ko at once: positional superko
        "12 genmove w",
        "showboard",
        # garbage and errors, after which the engine keeps going
        "this is not gtp",
        "play b",
        "play b Z19",
        "play purple D4",
        "boardsize 4",
        "boardsize 20",
        "komi lots",
        "undo",
        "clear_board",
        "undo",
        *WALLS,
        "final_score",
        "printsgf",
        f"loadsgf {record}",
        "showboard",
        f"loadsgf {record} 2",
        "printsgf",
        f"loadsgf {tmp_path / 'missing.sgf'}",
        "genmove b",
        "99 quit",
        "name",  # never read: quit ends the session
    ]
    r = session(params, engine, commands)
    assert len(r) == len(commands) - 1
    it = iter(zip(commands, r))

    def expect(command, response):
        c, got = next(it)
        assert c == command
        if callable(response):
            assert response(got), f"{command!r} -> {got!r}"
        else:
            assert got == response, f"{command!r} -> {got!r}"

    expect("1 protocol_version", "=1 2")
    expect("2 name", "=2 zero")
    expect("version", lambda s: s.startswith("= ") and len(s) > 2)
    expect("known_command genmove", "= true")
    expect("known_command frobnicate", "= false")
    expect("boardsize 9", "= ")
    expect("clear_board", "= ")
    expect("komi 6.5", "= ")
    expect("play w A2", "= ")
    expect("play w B1", "= ")
    expect("play b A1", "? illegal move A1: suicide")
    expect("play B a2", "? illegal move a2: occupied")
    expect("clear_board", "= ")
    for c in ["play b D6", "play w E6", "play b C5", "play w F5", "play b D4", "play w E4",
              "play b A1", "play w D5", "play b E5"]:
        expect(c, "= ")
    expect("play w D5", lambda s: s.startswith("? illegal move D5: ") and "ko" in s)
    expect("12 genmove w", lambda s: s.startswith("=12 ") and s[4:] != "")
    expect("showboard", lambda s: s.startswith("= \n") and " A B C D E F G H J" in s)
    expect("this is not gtp", "? unknown command")
    expect("play b", lambda s: s.startswith("? wrong number of arguments"))
    expect("play b Z19", lambda s: s.startswith("? invalid vertex") and "Z19" in s)
    expect("play purple D4", lambda s: s.startswith("? invalid color") and "purple" in s)
    expect("boardsize 4", "? unacceptable size")
    expect("boardsize 20", "? unacceptable size")
    expect("komi lots", lambda s: s.startswith("? komi not a float"))
    expect("undo", "= ")
    expect("clear_board", "= ")
    expect("undo", "? cannot undo")
    for c in WALLS:
        expect(c, "= ")
    expect("final_score", "= B+2.5")
    sgf_text = next(it)
    assert sgf_text[0] == "printsgf" and sgf_text[1].startswith("= (;FF[4]")
    g = parse_sgf(sgf_text[1][2:])
    assert (g.size, g.komi) == (9, 6.5)
    assert g.moves == [text_to_point(c.split()[-1], 9, 9) for c in WALLS]
    expect(f"loadsgf {record}", "= ")
    expect("showboard", lambda s: s.count("X") == 2 and s.count("O") == 1)
    expect(f"loadsgf {record} 2", "= ")
    expect("printsgf", lambda s: parse_sgf(s[2:]).moves == [text_to_point("E5", 9, 9)] and "KM[5.5]" in s)
    expect(f"loadsgf {tmp_path / 'missing.sgf'}", lambda s: s.startswith("? cannot load file"))
    expect("genmove b", lambda s: s.startswith("= "))  # loadsgf ... 2 left white to move: a pass goes in first
    expect("99 quit", "=99 ")


def test_run_gtp_from_params(params, tmp_path):
    out = io.StringIO()
    status = run_gtp(params, None, 2, io.StringIO("boardsize 7\ngenmove b\nfinal_score\nquit\n"), out)
    assert status == 0
    responses = out.getvalue().split("\n\n")
    assert responses[0] == "= " and responses[1].startswith("= ") and responses[2].startswith("= ")
    assert responses[3] == "= "


def test_gomoku_is_refused_at_start():
    params = load_params(None, ["game.name=gomoku", "game.height=7", "game.width=7", "game.k=4"])
    err = io.StringIO()
    assert run_gtp(params, None, 2, io.StringIO("name\n"), io.StringIO(), stderr=err) == 2
    assert "Go only" in err.getvalue() and "gomoku" in err.getvalue()


def test_checkpoint_limits_board_sizes(params, tmp_path):
    from zero.engine import Engine
    from zero.network import init_checkpoint

    path = tmp_path / "net.pt"
    init_checkpoint(params, path, seed=0)
    gtp = GtpEngine(params, Engine(params, checkpoint=str(path), visits=2))
    assert gtp.handle("boardsize 13") == "? unacceptable size\n\n"
    assert gtp.handle("boardsize 9") == "= \n\n"
    assert gtp.handle("genmove b").startswith("= ")


def test_cli_subprocess_keeps_going_after_errors(tmp_path):
    commands = "protocol_version\n\x01garbage here\n3 play b Q99\nplay w C3\n4 showboard\nquit\n"
    proc = subprocess.run(
        [sys.executable, "-m", "zero.gtp", "--visits", "2", *[a for s in TINY for a in ("--set", s)]],
        input=commands, capture_output=True, text=True, cwd=tmp_path, timeout=120,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    r = proc.stdout.split("\n\n")
    assert r[0] == "= 2"
    assert r[1] == "? unknown command"
    assert r[2].startswith("?3 invalid vertex")
    assert r[3] == "= "
    assert r[4].startswith("=4 \n") and "O" in r[4]
    assert r[5] == "= " and r[6] == ""


# --- protocol details, with a stand-in engine that plays a scripted list ------------


class ScriptedEngine:
    """Plays the given vertices in order (None resigns); only for protocol tests. Records each time budget."""

    def __init__(self, size: int, script: list[str | None]):
        from zero.games.go import GoGame

        self.game = GoGame(size, 7.5)
        self.script = list(script)
        self.size = size
        self.budgets: list[float | None] = []

    def genmove(self, position, seconds=None):
        self.budgets.append(seconds)
        v = self.script.pop(0)
        return None if v is None else position.play(v).moves[-1]


def stand_in(script, size=9):
    return GtpEngine(load_params(None), ScriptedEngine(size, script))


def test_ids_echo_on_success_and_failure():
    gtp = stand_in(["C3"])
    assert gtp.handle("7 genmove black") == "=7 C3\n\n"
    assert gtp.handle("8 play b C3") == "?8 illegal move C3: occupied\n\n"
    assert gtp.handle("9 nonsense") == "?9 unknown command\n\n"
    assert gtp.handle("10") == "?10 no command after id\n\n"


def test_empty_and_comment_lines_get_no_response():
    gtp = stand_in([])
    assert gtp.handle("") is None
    assert gtp.handle("   \t ") is None
    assert gtp.handle("# just a comment") is None
    assert gtp.handle("name # trailing comment") == "= zero\n\n"
    assert gtp.handle("\tname\x07\r\n") == "= zero\n\n"


def test_genmove_resign_and_pass():
    gtp = stand_in([None, "pass", "D4"])
    assert gtp.handle("genmove b") == "= resign\n\n"
    assert gtp.position.moves == []  # resigning plays nothing
    assert gtp.handle("genmove b") == "= pass\n\n"
    assert gtp.handle("play w pass") == "= \n\n"
    assert not gtp.position.is_over  # two passes end a GTP game only when the controller says so
    assert gtp.handle("genmove b") == "= D4\n\n"  # the engine is asked again


def test_playing_out_of_turn_inserts_a_pass_and_undo_removes_it():
    gtp = stand_in(["E5"])
    assert gtp.handle("play w C3") == "= \n\n"
    assert gtp.position.moves == [81, text_to_point("C3", 9, 9)]
    assert gtp.handle("genmove w") == "= E5\n\n"  # white again: black passes first
    assert gtp.position.moves == [81, 56, 81, 40]
    assert gtp.handle("undo") == "= \n\n"
    assert gtp.position.moves == [81, 56]
    assert gtp.handle("undo") == "= \n\n"
    assert gtp.position.moves == []
    assert gtp.handle("undo") == "? cannot undo\n\n"


def test_final_score_formats():
    assert score_text(3.5) == "B+3.5" and score_text(-0.5) == "W+0.5" and score_text(0.0) == "0"
    assert score_text(-16.0) == "W+16"
    gtp = stand_in([])
    assert gtp.handle("final_score") == "= W+7.5\n\n"
    assert gtp.handle("komi 0") == "= \n\n"
    assert gtp.handle("final_score") == "= 0\n\n"
    gtp.handle("play b E5")
    assert gtp.handle("final_score") == "= B+81\n\n"
    # komi changes mid-game keep the moves
    assert gtp.handle("komi 80.5") == "= \n\n"
    assert gtp.position.moves == [40]
    assert gtp.handle("final_score") == "= B+0.5\n\n"


def test_final_score_counts_captures():
    gtp = stand_in([])
    for c in ["play b A2", "play w A1", "play b B1"]:  # captures A1
        assert gtp.handle(c) == "= \n\n"
    assert gtp.position.board[8, 0] == 0
    assert gtp.handle("final_score") == "= B+73.5\n\n"
    assert gtp.handle("final_status_list dead") == "= \n\n"
    assert gtp.handle("final_status_list alive") == "= A2 B1\n\n"
    assert gtp.handle("final_status_list zombie").startswith("? invalid status")


def test_printsgf_to_file_and_result_when_over(tmp_path):
    gtp = stand_in([])
    for c in ["play b E5", "play w pass", "play b pass"]:
        gtp.handle(c)
    path = tmp_path / "out.sgf"
    assert gtp.handle(f"printsgf {path}") == "= \n\n"
    g = parse_sgf(path.read_text())
    assert g.moves == [40, 81, 81] and g.result == "B+73.5"
    assert gtp.handle(f"printsgf {tmp_path / 'no' / 'such' / 'dir.sgf'}").startswith("? cannot write")


def test_loadsgf_errors_leave_the_board_alone(tmp_path):
    gtp = stand_in([])
    gtp.handle("play b E5")
    bad = tmp_path / "bad.sgf"
    for text, reason in [
        ("(;SZ[9];B[ee];W[ee])", "occupied"),
        ("(;GM[4]SZ[9];B[ee])", "not Go"),
        ("(;SZ[9]AB[aa])", "setup stones"),
        ("(;SZ[3];B[aa])", "unacceptable size"),
        ("(;SZ[9];B[ee]", "not closed"),
    ]:
        bad.write_text(text)
        response = gtp.handle(f"loadsgf {bad}")
        assert response.startswith("? ") and reason in response, response
        assert gtp.position.moves == [40] and gtp.size == 9
    assert gtp.handle(f"loadsgf {bad} x").startswith("? move number not an integer")


def test_time_commands_are_stored():
    gtp = stand_in([])
    assert gtp.handle("time_settings 300 30 5") == "= \n\n"
    assert gtp.handle("time_left b 120 0") == "= \n\n"
    assert gtp.time_settings == (300, 30, 5) and gtp.time_left == {1: (120, 0)}
    assert gtp.handle("time_left b soon 0").startswith("? time left is not a number")
    assert gtp.handle("time_settings 1 2").startswith("? wrong number of arguments")


def test_boardsize_changes_and_clears():
    gtp = stand_in([])
    gtp.handle("play b E5")
    assert gtp.handle("boardsize 13") == "= \n\n"
    assert gtp.position.size == 13 and gtp.position.moves == []
    assert gtp.handle("play b N13") == "= \n\n"
    assert gtp.handle("boardsize nine").startswith("? boardsize not an integer")


def test_known_commands_and_list_agree():
    gtp = stand_in([])
    listed = gtp.handle("list_commands")[2:].split()
    required = {"protocol_version", "name", "version", "known_command", "list_commands", "quit",
                "boardsize", "clear_board", "komi", "play", "genmove", "undo", "showboard",
                "final_score", "loadsgf", "printsgf", "time_settings", "time_left"}
    assert required <= set(listed)
    assert all(gtp.handle(f"known_command {c}") == "= true\n\n" for c in listed)
