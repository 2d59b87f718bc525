"""numba's cache of the engine's kernels lives in a directory named by the digest of the package's files that
use numba: a change to a kernel another file inlines (the search's walk, the Go rules) compiles afresh."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import zero

PRINT = "import os, zero; print(os.environ['NUMBA_CACHE_DIR'])"


def cache_dir(root: Path, **env) -> str:
    clean = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    done = subprocess.run([sys.executable, "-c", PRINT], cwd=root, capture_output=True, text=True, timeout=120,
                          env={**clean, "PYTHONPATH": str(root), **env})
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_the_cache_directory_follows_the_kernels_files_and_an_explicit_one_is_kept(tmp_path):
    shutil.copytree(Path(zero.__file__).parent, tmp_path / "zero", ignore=shutil.ignore_patterns("__pycache__"))
    first = cache_dir(tmp_path)
    assert Path(first).parent == tmp_path / "zero" / "__pycache__" and Path(first).name.startswith("numba-")
    assert cache_dir(tmp_path) == first

    with open(tmp_path / "zero" / "sgf.py", "a") as f:  # a file without kernels: the same kernels
        f.write("\n# an edit\n")
    assert cache_dir(tmp_path) == first
    with open(tmp_path / "zero" / "tree_walk.py", "a") as f:  # a callee inlined into zero.mcts's kernels
        f.write("\n# an edit\n")
    second = cache_dir(tmp_path)
    assert second != first and Path(second).parent == Path(first).parent

    assert cache_dir(tmp_path, NUMBA_CACHE_DIR=str(tmp_path / "mine")) == str(tmp_path / "mine")
