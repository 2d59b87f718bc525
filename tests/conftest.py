import os

# Under pytest-xdist (`make test` runs two workers) each worker keeps to a core of its own, before torch or numba
# start their threads: a worker's threads and its subprocesses then never wait at a barrier on a thread that the
# other worker's load has descheduled (unpinned, two workers of two threads each on two cores ran the search
# tests up to ten times slower). With one core, or outside xdist, nothing changes.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if _WORKER.startswith("gw") and hasattr(os, "sched_setaffinity"):
    _cores = sorted(os.sched_getaffinity(0))
    if len(_cores) > 1:
        os.sched_setaffinity(0, {_cores[int(_WORKER[2:]) % len(_cores)]})

import pytest  # noqa: E402

from zero.config import load_params  # noqa: E402


TINY = [
    "game.name=gomoku", "game.height=6", "game.width=6", "game.k=4",
    "network.size=b1c8", "selfplay.visits=12", "selfplay.concurrent_games=6",
    "selfplay.games_per_shard=6", "gate.visits=12", "gate.concurrent_games=8",
    "train.batch_size=32", "train.steps=5", "train.lr_milestones=[3]",
]


@pytest.fixture
def tiny_params():
    """Gomoku 6x6, four in a row, a one-block network: fast enough for every test."""
    return load_params(None, TINY)


@pytest.fixture
def tiny_checkpoint(tiny_params, tmp_path):
    from zero.network import init_checkpoint

    path = tmp_path / "net.pt"
    init_checkpoint(tiny_params, path, seed=0)
    return path


def run_with_terminal_stderr(args, cwd):
    """Run `python -m zero.cli ARGS` with stderr on a pseudo-terminal (so progress bars are drawn).

    Returns (exit status, stdout text, bytes drawn on the terminal).
    """
    import os
    import pty
    import select
    import subprocess
    import sys

    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen([sys.executable, "-m", "zero.cli", *args], cwd=cwd, stdout=subprocess.PIPE,
                                stderr=slave, stdin=subprocess.DEVNULL, text=True,
                                env={**os.environ, "OMP_NUM_THREADS": "1", "TERM": "xterm", "COLUMNS": "100"})
        os.close(slave)
        drawn = b""
        while proc.poll() is None or select.select([master], [], [], 0)[0]:
            if select.select([master], [], [], 0.1)[0]:
                try:
                    drawn += os.read(master, 65536)
                except OSError:
                    break
        out = proc.stdout.read()
        proc.wait(timeout=60)
    finally:
        os.close(master)
    return proc.returncode, out, drawn


@pytest.fixture(scope="session")
def harness():
    """A real, temporary Prefect server, started once for every flow test of the session (each xdist worker
    has its own): the flow tests run against it in-process, each in a workspace of its own."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


def hand_root(N, W, P, value=0.0):
    """A one-slot tree whose expanded root has the given edge statistics (search tests worked by hand)."""
    from zero.mcts import Tree

    t = Tree.allocate(1, 4, len(N))
    t.N[0, 0], t.W[0, 0], t.P[0, 0] = N, W, P
    t.value[0, 0] = value
    t.expanded[0, 0] = True
    return t


@pytest.fixture
def one_torch_thread():
    """Torch on one thread for the test, as the pipeline's stages run it; the old count restored after."""
    import torch

    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(saved)


# A 5x5 Go position in which Black's only moves are into its own single-point eyes (A5, C5).
ONLY_EYES_LEFT = """
        .X.X.
        XXXXX
        OOOOO
        .O.O.
        OOOOO
        """


def searched(position, fill_own_eyes=True, early_passes=True):
    """GTP names of the moves a leaf at `position` (Go) offers the search under those switches."""
    import numpy as np

    game = position.game
    one = np.zeros(1, np.int32)
    legal = game.leaf_inputs(position.batch, one, np.zeros((1, 1), np.int32), np.zeros(1, np.int32),
                             want_planes=False, fill_own_eyes=fill_own_eyes, early_passes=early_passes).legal[0]
    return sorted(game.action_to_text(int(a)) for a in np.flatnonzero(legal))
