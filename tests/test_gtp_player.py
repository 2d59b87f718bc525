"""External GTP engines as match players: zero's own `zero gtp` in a child process, and GNU Go."""

import shutil
import sys

import pytest

from zero.config import load_params
from zero.games import make_game
from zero.gtp_player import GtpEngineError, GtpPlayer, GtpProcess
from zero.arena import RandomPlayer
from zero.match import make_player, run_match

SMALL = ["game.size=5", "network.size=b1c8", "gate.visits=4", "gate.concurrent_games=2"]


def zero_gtp_command(visits=2):
    sets = " ".join(f"--set {o}" for o in SMALL)
    return f"{sys.executable} -m zero.gtp {sets} --visits {visits}"


def test_zero_over_gtp_plays_whole_games_against_random():
    params = load_params(None, SMALL)
    game = make_game(params.game)
    player = make_player(f"gtp:{zero_gtp_command()}", params, game, visits=0)
    assert isinstance(player, GtpPlayer)
    out = run_match(game, player, RandomPlayer(1), num_games=2, seed=0, concurrent=2, opening_moves=0)
    assert out.result.games == 2
    for rec in out.records:
        assert rec.moves and (rec.resigned or len(rec.moves) <= game.max_moves)
    assert player.procs == []  # the engines were shut down


def test_engine_that_cannot_start_is_named():
    params = load_params(None, SMALL)
    game = make_game(params.game)
    player = GtpPlayer("/nonexistent/engine --gtp", 7.5)
    with pytest.raises(GtpEngineError, match="/nonexistent/engine"):
        run_match(game, player, RandomPlayer(1), num_games=1, seed=0, concurrent=1)


def test_gtp_player_refuses_gomoku():
    params = load_params(None, ["game.name=gomoku", "game.height=6", "game.width=6", "game.k=4"])
    game = make_game(params.game)
    with pytest.raises(ValueError, match="plays Go"):
        run_match(game, GtpPlayer(zero_gtp_command(), 7.5), RandomPlayer(1), num_games=1, seed=0)


GNUGO = shutil.which("gnugo") or shutil.which("/usr/games/gnugo")


@pytest.mark.skipif(GNUGO is None, reason="GNU Go is not installed (apt-get install gnugo)")
def test_gnugo_plays_whole_games_and_beats_random_as_white():
    """GNU Go over GTP, seeded so its play repeats. It passes with dead random stones still on the
    board, which Tromp-Taylor counts as alive, so as black (giving 7.5 komi) it can lose to random;
    as white it wins."""
    params = load_params(None, ["game.size=9"])
    game = make_game(params.game)
    gnugo = make_player(f"gtp:{GNUGO} --mode gtp --level 1 --seed 1", params, game, visits=0)
    out = run_match(game, gnugo, RandomPlayer(3), num_games=4, seed=0, concurrent=4, opening_moves=0,
                    resign_threshold=-0.9)
    assert out.result.games == 4
    assert all(len(r.moves) > 20 for r in out.records)
    as_white = [r for r in out.records if r.index % 2 == 1]
    assert all(r.result == -1 for r in as_white), [r.result_text() for r in out.records]


def _script(body: str) -> str:
    return f'{sys.executable} -c "{body}"'


def test_an_engine_that_hangs_is_stopped_with_its_last_stderr_lines():
    hang = GtpProcess(_script("import sys, time; print('loading weights', file=sys.stderr, flush=True); "
                              "sys.stdin.readline(); time.sleep(60)"), timeout=1.0)
    with pytest.raises(GtpEngineError, match=r"did not answer 'name' within 1 s(.|\n)*loading weights"):
        hang.send("name")
    assert hang.proc.wait(timeout=5) is not None  # stopped, not left running


def test_an_engine_that_dies_mid_reply_is_named_with_its_stderr():
    dies = GtpProcess(_script("import sys; sys.stdin.readline(); print('= half', flush=True); "
                              "print('segfault in genmove', file=sys.stderr, flush=True); sys.exit(3)"))
    with pytest.raises(GtpEngineError, match=r"closed while answering 'genmove b'(.|\n)*segfault in genmove"):
        dies.send("genmove b")
