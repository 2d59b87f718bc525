"""The GTP engine: a whole session with the real Engine, protocol details, and the CLI entry."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

from zero.config import load_params
from zero.gtp import GtpEngine, run_gtp
from zero.notation import action_to_vertex, point_to_vertex, score_text, vertex_to_point
from zero.sgf import game_to_sgf, parse_sgf

ROOT = Path(__file__).resolve().parents[1]
TINY = ["network.size=b1c8", "network.value_hidden=8", "gate.device=cpu", "mcts.symmetries=false"]


@pytest.fixture(scope="module")
def params():
    return load_params(None, TINY)


@pytest.fixture(scope="module")
def engine(params):
    from zero.engine import Engine, EngineConfig

    return Engine(EngineConfig.from_params(params, 4), checkpoint=None, seed=0)


def session(params, engine, commands: list[str]) -> list[str]:
    """Run commands through `GtpEngine.run`; the responses, each without its blank line."""
    out = io.StringIO()
    GtpEngine(engine).run(io.StringIO("\n".join(commands) + "\n"), out)
    text = out.getvalue()
    assert text.endswith("\n\n")
    return text[:-2].split("\n\n")


# Black wall on column D, white wall on column G, 9x9: black owns A-D (36),
# white G-J (27; no column I), columns E and F touch both and count for nobody.
# 36 - 27 - 6.5 komi = B+2.5.
WALLS = [m for r in range(1, 10) for m in (f"play b D{r}", f"play w G{r}")]


def test_whole_session_with_the_real_engine(params, engine, tmp_path):
    record = tmp_path / "game.sgf"
    record.write_text(game_to_sgf([vertex_to_point(v, 9, 9) for v in ["E5", "C3", "G7"]], size=9, komi=5.5))
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
    assert g.moves == [vertex_to_point(c.split()[-1], 9, 9) for c in WALLS]
    expect(f"loadsgf {record}", "= ")
    expect("showboard", lambda s: s.count("X") == 2 and s.count("O") == 1)
    expect(f"loadsgf {record} 2", "= ")
    expect("printsgf", lambda s: parse_sgf(s[2:]).moves == [vertex_to_point("E5", 9, 9)] and "KM[5.5]" in s)
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
    from zero.engine import Engine, EngineConfig
    from zero.network import init_checkpoint

    path = tmp_path / "net.pt"
    init_checkpoint(params, path, seed=0)
    gtp = GtpEngine(Engine(EngineConfig.from_params(params, 2), checkpoint=str(path)))
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
    return GtpEngine(ScriptedEngine(size, script))


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
    assert gtp.position.moves == [81, vertex_to_point("C3", 9, 9)]
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


# --- the game is over when the controller says so (GNU Go's behaviour) --------------


def test_play_goes_on_after_two_passes():
    gtp = stand_in([])
    for c in ["play b pass", "play w pass", "play b D4", "play b pass", "play b C3", "play w pass", "play w E5"]:
        assert gtp.handle(c) == "= \n\n", c
    board = gtp.position.board
    assert board[9 - 4, 3] == 1 and board[9 - 3, 2] == 1 and board[9 - 5, 4] == -1
    assert gtp.handle("play w E5") == "? illegal move E5: occupied\n\n"  # the rules still hold


def test_play_past_the_self_play_move_cap_with_superko_over_the_whole_game():
    gtp = stand_in([], size=5)
    # a ko on the left edge: white takes B3 with A3 (move 8), then 62 passes (past 2*5*5 = 50 moves)
    ko = ["play b A2", "play w B2", "play b B3", "play w C3", "play b A4", "play w B4",
          "play b pass", "play w A3", "play b pass", "play w pass"]
    for c in ko + ["play b pass", "play w pass"] * 30:
        assert gtp.handle(c) == "= \n\n", c
    assert len(gtp.position.moves) == 70 and not gtp.position.is_over
    # retaking at move 71 would repeat the board of move 6
    assert gtp.handle("play b B3") == "? illegal move B3: superko\n\n"
    assert gtp.handle("play b D2") == "= \n\n"
    assert gtp.handle("play w B3") == "= \n\n"
    assert len(gtp.position.moves) == 72


def test_every_play_is_accepted_past_move_50_on_5x5():
    from zero.games.go import GoPosition

    gtp = stand_in([], size=5)
    rules = GoPosition.initial(5, 7.5, open_ended=True)
    rng = __import__("numpy").random.default_rng(5)
    for i in range(150):
        action = int(rng.choice(rules.legal_actions()))
        colour = "b" if rules.to_play == 1 else "w"
        vertex = "pass" if action == 25 else point_to_vertex(action, 5, 5)
        assert gtp.handle(f"play {colour} {vertex}") == "= \n\n", (i, vertex)
        rules = rules.play(action)
    assert (gtp.position.board == rules.board).all()


def test_genmove_for_either_colour_at_any_time(params):
    from zero.engine import Engine, EngineConfig

    engine = Engine(EngineConfig.from_params(params, 4), checkpoint=None, seed=0)
    r = session(params, engine, [
        "boardsize 5", "clear_board", "genmove b", "genmove b", "genmove w", "genmove w",
        "play b pass", "play w pass", "genmove w", "play b pass", "genmove b", "genmove w",
    ])
    assert all(re.fullmatch(r"= ([A-E][1-5]|pass)", x) for x in r[2:] if x != "= "), r
    assert r[:2] == ["= ", "= "] and r[6:8] == ["= ", "= "] and r[9] == "= "


def test_genmove_plays_the_search_s_lcb_choice_when_the_params_ask_for_it():
    import numpy as np

    from zero.engine import Engine, EngineConfig

    lcb = load_params(None, TINY + ["mcts.lcb_stdevs=1", "mcts.lcb_min_visit_share=0.05", "mcts.c_puct=5"])
    engine = Engine(EngineConfig.from_params(lcb, 60), checkpoint=None, seed=0)
    gtp = GtpEngine(engine)
    move = vertex_to_point(gtp.handle("genmove b")[2:].strip(), 9, 9)
    tree, root = engine._search.tree, np.zeros(1, np.int32)
    assert move == tree.best_actions(root, 1.0, 0.05)[0]
    assert (tree.N[0, 0] >= 0.05 * tree.N[0, 0].max()).sum() >= 2  # a choice was there to make


def test_genmove_reuses_the_subtree_of_the_moves_played(params):
    import numpy as np

    from zero.engine import Engine, EngineConfig

    engine = Engine(EngineConfig.from_params(params, 40), checkpoint=None, seed=0)
    gtp = GtpEngine(engine)
    mine = gtp.handle("genmove b")[2:].strip()
    tree = engine._search.tree
    a = vertex_to_point(mine, 9, 9)
    node = tree.child[0, 0, a]
    reply = int(tree.N[0, node].argmax())  # white answers with zero's own expected reply
    kept = int(tree.N[0, tree.child[0, node, reply]].sum())
    assert kept > 0
    assert gtp.handle(f"play w {action_to_vertex(reply, 9, 9, 81)}") == "= \n\n"
    before = engine.evaluator.nn_positions
    assert gtp.handle("genmove b").startswith("= ")
    evaluated = engine.evaluator.nn_positions - before
    assert int(engine._search.tree.root_visits(np.zeros(1, np.int32))[0]) == 40
    assert evaluated <= 40 - kept  # only the visits the reused subtree lacked were searched


# --- time ---------------------------------------------------------------------------


def test_bad_times_are_refused():
    gtp = stand_in([])
    for c in ["time_settings 0 inf 3", "time_settings nan 0 0", "time_settings -1 10 5",
              "time_settings 10 10 2.5", "time_settings 10 10 -1",
              "time_left b inf 0", "time_left w nan 0", "time_left b -3 0", "time_left b 10 -1"]:
        response = gtp.handle(c)
        assert response.startswith("? ") and "internal error" not in response, (c, response)
    assert gtp.time_settings is None and gtp.time_left == {}


def test_time_budget_per_move():
    gtp = stand_in(["D4", "E5", "C3", "F6", "G7", "H8", "J9"])
    engine = gtp.engine
    gtp.handle("genmove b")
    assert engine.budgets[-1] is None  # no time settings: search --visits
    gtp.handle("time_settings 600 0 0")  # absolute: 10 minutes
    gtp.handle("genmove w")
    main = engine.budgets[-1]
    assert 0 < main < 600 / 9  # at most the share of the board size's worth of moves
    assert 0 < gtp.time_left[-1][0] <= 600  # its own clock counts the time used
    gtp.handle("time_settings 0 30 5")  # byo-yomi only: 30 s for 5 stones
    gtp.handle("genmove b")
    assert 0 < engine.budgets[-1] < 6
    gtp.handle("time_left b 4 2")  # 4 s left for 2 stones
    gtp.handle("genmove b")
    assert 0 < engine.budgets[-1] < 2
    gtp.handle("time_left w 0 1")  # out of time: the smallest search
    gtp.handle("genmove w")
    assert engine.budgets[-1] == 0
    gtp.handle("time_settings 0 1 0")  # GTP's no time limit
    gtp.handle("genmove b")
    assert engine.budgets[-1] is None


def test_time_budget_stops_the_search_before_the_visits_cap(params):
    import numpy as np

    from zero.engine import Engine, EngineConfig

    engine = Engine(EngineConfig.from_params(params, 20_000), checkpoint=None, seed=0)
    gtp = GtpEngine(engine)
    assert gtp.handle("time_settings 0 1 1") == "= \n\n"  # one second a move
    assert gtp.handle("genmove b").startswith("= ")
    assert 1 <= int(engine._search.tree.root_visits(np.zeros(1, np.int32))[0]) < 20_000


@pytest.mark.parametrize("in_flight", [1, 2])
def test_a_time_budget_searches_leaf_batches(in_flight):
    """Under time_settings the search still evaluates its leaves in batches (and batches in flight)."""
    import numpy as np

    from zero.engine import Engine, EngineConfig

    import numba
    import torch

    from zero.network import set_threads

    params = load_params(None, TINY + ["mcts.leaf_batch=8", f"mcts.leaf_batches_in_flight={in_flight}"])
    threads = torch.get_num_threads(), numba.get_num_threads()
    set_threads(1)  # one core's worth: on a busy machine torch's and numba's thread teams wait on each other
    try:
        # compile the search's kernels first, so that the timed move spends its second searching
        warm = GtpEngine(Engine(EngineConfig.from_params(params, 64), checkpoint=None, seed=0))
        assert warm.handle("genmove b").startswith("= ")
        engine = Engine(EngineConfig.from_params(params, 20_000), checkpoint=None, seed=0)
        gtp = GtpEngine(engine)
        assert gtp.handle("time_settings 0 1 1") == "= \n\n"
        assert gtp.handle("genmove b").startswith("= ")
    finally:
        torch.set_num_threads(threads[0])
        numba.set_num_threads(threads[1])
    visits = int(engine._search.tree.root_visits(np.zeros(1, np.int32))[0])
    # From 128 visits on, the share limit (zero.mcts.IN_FLIGHT_SHARE) lets 8 leaves a call: one leaf a call
    # would take `visits` calls, batches of up to 8 take fewer than half of them.
    assert 128 <= visits < 20_000
    assert engine.evaluator.nn_calls < visits / 2


# --- loadsgf reads regular files only -----------------------------------------------


def _in_thread(gtp, command, seconds=20.0):
    import threading

    out = []
    t = threading.Thread(target=lambda: out.append(gtp.handle(command)), daemon=True)
    t.start()
    t.join(seconds)
    assert out, f"{command!r} did not answer within {seconds} s"
    return out[0]


def test_loadsgf_refuses_fifos_devices_and_huge_files(tmp_path):
    import os

    gtp = stand_in([])
    gtp.handle("play b E5")
    fifo = tmp_path / "fifo.sgf"
    os.mkfifo(fifo)
    assert _in_thread(gtp, f"loadsgf {fifo}") == f"? cannot load file {fifo}: not a regular file\n\n"
    assert _in_thread(gtp, "loadsgf /dev/zero") == "? cannot load file /dev/zero: not a regular file\n\n"
    assert _in_thread(gtp, f"loadsgf {tmp_path}").endswith("not a regular file\n\n")
    huge = tmp_path / "huge.sgf"
    with open(huge, "wb") as f:
        f.truncate(5 << 20)
    assert _in_thread(gtp, f"loadsgf {huge}").endswith("larger than 4194304 bytes\n\n")
    assert gtp.position.moves == [40]


# --- the end of the game --------------------------------------------------------------

# Black wall on D, white wall on E; a white stone at B6 in black's area, a black one at H6 in white's.
DEAD_STONES = [m for r in range(1, 10) for m in (f"play b D{r}", f"play w E{r}")] + ["play b H6", "play w B6"]


def test_final_status_list_from_the_engines_view(params, engine):
    r = session(params, engine, ["boardsize 9", "clear_board", *DEAD_STONES, "final_status_list dead",
                                 "final_status_list alive", "final_status_list seki", "final_score"])
    dead, alive, seki, score = r[-4:]
    assert dead == "= B6 H6"
    assert set(alive[2:].split()) == {f"{c}{r}" for c in "DE" for r in range(1, 10)}
    assert seki == "= "
    # final_score removes what final_status_list calls dead: black owns columns A-D (36), white E-J (45)
    assert score == "= W+16.5"


def passing_engine(params):
    """The real engine, but its search always says pass: cleanup must capture first."""
    from zero.engine import Engine, EngineConfig

    class Passing(Engine):
        def genmove(self, position, seconds=None, resign=True):
            return position.size * position.size

    return Passing(EngineConfig.from_params(params, 2), checkpoint=None, seed=0)


def test_kgs_genmove_cleanup_captures_dead_stones_before_passing(params):
    gtp = GtpEngine(passing_engine(params))
    for c in DEAD_STONES[:-1]:
        assert gtp.handle(c) == "= \n\n"
    assert gtp.handle("play w B6") == "= \n\n"  # black to move, a dead white stone at B6
    assert gtp.handle("genmove b") == "= pass\n\n"  # plain genmove trusts the search
    assert gtp.handle("undo") == "= \n\n"
    moves = []
    for _ in range(10):
        reply = gtp.handle("kgs-genmove_cleanup b")[2:].strip()
        moves.append(reply)
        if reply == "pass":
            break
        assert gtp.handle("play w pass") == "= \n\n"
    assert moves[-1] == "pass" and len(moves) == 5, moves  # B6's four liberties, then pass
    assert set(moves[:-1]) == {"A6", "C6", "B5", "B7"}
    assert gtp.position.board[9 - 6, 1] == 0  # B6 is captured
    assert gtp.handle("final_status_list dead") == "= H6\n\n"


def test_kgs_genmove_cleanup_never_resigns(params):
    from zero.engine import Engine, EngineConfig

    class Resigning(Engine):
        def genmove(self, position, seconds=None, resign=True):
            return None if resign else super().genmove(position, seconds, resign=False)

    gtp = GtpEngine(Resigning(EngineConfig.from_params(params, 2), checkpoint=None, seed=0))
    assert gtp.handle("genmove b") == "= resign\n\n"
    assert re.fullmatch(r"= ([A-HJ][1-9]|pass)\n\n", gtp.handle("kgs-genmove_cleanup b"))


# --- lz-analyze ----------------------------------------------------------------------

INFO = re.compile(r"info move ([A-HJ-T]\d+|pass) visits (\d+) winrate (\d+) prior (\d+) lcb (\d+) order (\d+) "
                  r"pv ((?:(?:[A-HJ-T]\d+|pass) ?)+)")


def _infos(line: str) -> list[tuple]:
    items = INFO.findall(line)
    assert " ".join(" ".join(("info move", m[0], "visits", m[1], "winrate", m[2], "prior", m[3], "lcb", m[4],
                              "order", m[5], "pv", m[6].strip())) for m in items) == line
    return items


def test_lz_analyze_format_and_errors(params, engine):
    gtp = GtpEngine(engine)
    gtp.handle("play b E5")
    response = gtp.handle("7 lz-analyze w 10")
    assert response.startswith("=7\ninfo move ") and response.endswith("\n\n")
    line = response.split("\n")[1]
    items = _infos(line)
    assert sum(int(m[1]) for m in items) == engine.visits  # not serving: searched to the cap
    assert [int(m[5]) for m in items] == list(range(len(items)))
    assert all(0 <= int(m[4]) <= int(m[2]) <= 10000 and 0 <= int(m[3]) <= 10000 for m in items)
    assert all(m[6].split()[0] == m[0] for m in items)
    assert "E5" not in [m[0] for m in items]
    assert gtp.position.moves == [40]  # analysing plays nothing
    for bad in ["lz-analyze b x", "lz-analyze b -5", "lz-analyze b 10 20", "lz-analyze interval"]:
        assert gtp.handle(bad).startswith("? "), bad
    assert gtp.handle("lz-analyze b x") == "? interval (centiseconds) not an integer: 'x'\n\n"
    assert gtp.handle("lz-analyze b -5") == "? interval (centiseconds) must be at least 0, got -5\n\n"
    assert gtp.handle("lz-analyze interval 50").startswith("=\ninfo move")
    listed = gtp.handle("list_commands")[2:].split()
    assert "lz-analyze" in listed and "kgs-genmove_cleanup" in listed


def test_lz_analyze_streams_until_the_next_command(params):
    import os
    import threading
    import time

    from zero.engine import Engine, EngineConfig

    engine = Engine(EngineConfig.from_params(params, 20_000), checkpoint=None, seed=0)
    read_fd, write_fd = os.pipe()
    out = io.StringIO()
    with os.fdopen(read_fd) as stdin, os.fdopen(write_fd, "w") as feed:
        worker = threading.Thread(target=GtpEngine(engine).run, args=(stdin, out))
        worker.start()
        feed.write("play b E5\n3 lz-analyze 5\n")
        feed.flush()
        deadline = time.monotonic() + 60
        while out.getvalue().count("\ninfo move") < 3 and time.monotonic() < deadline:
            time.sleep(0.05)  # wait for lines, not a fixed time: a loaded machine searches slowly
        feed.write("name\nquit\n")
        feed.flush()
        worker.join(60)
        feed.close()  # end of input: the reader thread stops
        time.sleep(0.2)
    assert not worker.is_alive()
    text = out.getvalue()
    assert text.startswith("= \n\n=3\ninfo move ")
    analysis, rest = text[len("= \n\n=3\n"):].split("\n\n", 1)
    assert rest == "= zero\n\n= \n\n"
    lines = analysis.split("\n")
    assert len(lines) >= 3  # a line every 50 ms while searching, and a last one
    totals = [sum(int(m[1]) for m in _infos(line)) for line in lines]
    assert totals == sorted(totals) and totals[-1] > totals[0]


def _think_failing_at(engine, monkeypatch, call: int):
    """Make the engine's search raise on its `call`-th run (1-based): the engine's one inner call that fails."""
    think, calls = engine.think, []

    def failing(*args, **kwargs):
        calls.append(None)
        if len(calls) == call:
            raise RuntimeError("the evaluator went away")
        return think(*args, **kwargs)

    monkeypatch.setattr(engine, "think", failing)


def test_lz_analyze_that_fails_before_anything_is_sent_is_an_error(engine, monkeypatch):
    gtp = GtpEngine(engine)
    _think_failing_at(engine, monkeypatch, 1)
    assert gtp.handle("4 lz-analyze b 10") == "?4 internal error in lz-analyze: RuntimeError: the evaluator went away\n\n"
    assert gtp.handle("name") == "= zero\n\n"


def test_lz_analyze_that_fails_part_way_ends_with_an_error_line(engine, monkeypatch, capsys):
    import os
    import threading
    import time

    _think_failing_at(engine, monkeypatch, 3)  # two searches answer, the third raises
    read_fd, write_fd = os.pipe()
    out = io.StringIO()
    with os.fdopen(read_fd) as stdin, os.fdopen(write_fd, "w") as feed:
        worker = threading.Thread(target=GtpEngine(engine).run, args=(stdin, out))
        worker.start()
        feed.write("3 lz-analyze b 5\n")
        feed.flush()
        deadline = time.monotonic() + 300  # the first search may compile the kernels
        while not out.getvalue().endswith("\n\n") and time.monotonic() < deadline:
            time.sleep(0.05)  # the response must end without a next command to end it
        ended = out.getvalue()
        feed.write("name\nquit\n")
        feed.flush()
        worker.join(60)
    assert not worker.is_alive()
    first, second, error = ended.split("\n")[1:4]
    assert ended == f"=3\n{first}\n{second}\n{error}\n\n"
    assert _infos(first) and _infos(second)
    assert error == "error lz-analyze failed: RuntimeError: the evaluator went away"
    assert out.getvalue() == ended + "= zero\n\n= \n\n"  # the engine goes on
    assert "lz-analyze (id 3) failed after 2 lines: RuntimeError: the evaluator went away" in capsys.readouterr().err


class DeadListEngine(ScriptedEngine):
    """A stand-in whose dead-stone judgement is given (what final_status_list dead reports)."""

    def __init__(self, size, dead_vertices):
        super().__init__(size, [])
        self.dead_vertices = dead_vertices

    def dead_stones(self, position):
        return [position.game.text_to_action(v) for v in self.dead_vertices]


def test_final_score_removes_the_stones_final_status_list_calls_dead():
    gtp = GtpEngine(DeadListEngine(9, ["E5"]))
    for c in ["komi 0", "play b A1", "play w E5"]:
        assert gtp.handle(c) == "= \n\n"
    assert gtp.handle("final_status_list dead") == "= E5\n\n"
    # as the board stands both stones own their point and the rest is neutral; without the dead E5
    # black's A1 owns the whole board
    assert gtp.handle("final_score") == "= B+81\n\n"
    assert gtp.handle("final_score extra").startswith("? wrong number of arguments")


def test_gate_cpu_bf16_plays_the_engine_s_network_in_bfloat16(params):
    """`zero gtp --set gate.fast_inference=true --set gate.cpu_bf16=true`: the engine's evaluator holds
    the folded network in bfloat16 on the CPU, and genmove answers as ever."""
    import torch

    from zero.config import load_params
    from zero.engine import Engine, EngineConfig

    on = load_params(None, TINY + ["gate.fast_inference=true", "gate.cpu_bf16=true"])
    engine = Engine(EngineConfig.from_params(on, 8), checkpoint=None, seed=0)
    assert engine.evaluator.leaf_net.dtype == torch.bfloat16
    plain = Engine(EngineConfig.from_params(params, 8), checkpoint=None, seed=0)
    assert plain.evaluator.leaf_net is None
    r = session(on, engine, ["boardsize 5", "clear_board", "genmove b", "play w pass", "genmove b"])
    assert all(re.fullmatch(r"= ([A-E][1-5]|pass)", x) for x in r[2:] if x != "= "), r
