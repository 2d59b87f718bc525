"""`zero warmup` compiles the engine's kernels once, so that a shard or the GTP engine compiles none; a `zero gtp`
that still has to compile them says so on stderr, and only then."""

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow

TINY = ["--set", "selfplay.visits=8", "--set", "selfplay.fast_visits=4", "--set", "selfplay.concurrent_games=3",
        "--set", "selfplay.min_positions_per_shard=0"]
ENGINE = """
from zero.bench import kernel_compiles
from zero.config import load_params
from zero.engine import Engine, EngineConfig
from zero.games import make_game
from zero.games import initial_position
params = load_params("campaigns/go-9.yaml", ["mcts.leaf_batch=8"])
Engine(EngineConfig.from_params(params, visits=16), "models/go-9.pt").analyse(initial_position(make_game(params.game)))
print(kernel_compiles()["compiled"])
"""


def run(args, cache, stdin=None, stderr=False):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=900,
                          input=stdin)
    assert done.returncode == 0, done.stderr[-2000:]
    return (done.stdout, done.stderr) if stderr else done.stdout


GAME = "protocol_version\nboardsize 9\nclear_board\ngenmove b\ngenmove w\nfinal_score\nfinal_status_list dead\nquit\n"


def gtp_session(cache):
    """The default `zero gtp` (the shipped champion) through a short game: (responses, stderr)."""
    out, err = run(["-m", "zero.cli", "gtp"], cache, stdin=GAME, stderr=True)
    responses = out.split("\n\n")
    assert len(responses) == 9 and responses[-1] == "" and all(r.startswith("= ") for r in responses[:-1]), out
    return responses[:-1], err


def test_after_warmup_a_shard_and_the_gtp_engine_compile_nothing(tmp_path):
    cache = tmp_path / "numba-cache"  # empty: everything compiles once
    common = ["--params", "campaigns/go-9.yaml", "--model", "models/go-9.pt"]
    shard = ["-m", "zero.cli", "selfplay", *common, "--games", "3", *TINY]
    warm = run(["-m", "zero.cli", "warmup"], cache)  # as make install runs it: the default player, and self-play
    compiled = int(warm.split()[0])
    assert compiled > 10 and "0 loaded from the cache" in warm
    summary = json.loads(run([*shard, "--out", str(tmp_path / "a.npz")], cache))
    assert summary["games"] == 3 and summary["kernels"]["compiled"] == 0 and summary["kernels"]["loaded"] > 0
    assert run(["-c", ENGINE], cache).strip() == "0"
    responses, err = gtp_session(cache)
    assert "compiling" not in err  # nothing left to compile: nothing said
    # without the warm-up, the same shard compiles inside its own run
    cold = json.loads(run([*shard, "--out", str(tmp_path / "b.npz")], tmp_path / "another-cache"))
    assert cold["kernels"]["compiled"] > 10
    # and `zero gtp` says on stderr that it compiles, its stdout still the protocol alone
    cold_responses, err = gtp_session(tmp_path / "a-third-cache")
    assert "zero gtp: compiling search kernels (once, about" in err
    assert cold_responses == responses  # the same game: compiling changes when, not what
