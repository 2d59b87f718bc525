"""zero: AlphaGo Zero for Go and Gomoku.

The public surface: configuration, games, and the stage functions the
pipeline calls (init_checkpoint, play_shard, train, play_match).
"""

import hashlib
import os
import sys
from pathlib import Path


def _kernel_cache() -> None:
    """Put numba's cache of the engine's kernels in a directory named by the digest of the package's files
    that use numba. Numba checks a cached kernel against its own file only, so a kernel that calls one
    from another file (the search's walk in zero.tree_walk, the Go rules in zero.games.go_kernels) would
    otherwise load its old compiled code after that other file changed, in a checkout updated by git
    pull as much as in one being edited. A NUMBA_CACHE_DIR set in the environment is used as it is."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    root = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        text = path.read_bytes()
        if b"numba" in text:
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + text)
    where = str(root / "__pycache__" / f"numba-{digest.hexdigest()[:16]}")
    os.environ["NUMBA_CACHE_DIR"] = where  # before numba reads it; processes started from here share it
    if "numba" in sys.modules:  # numba imported first: its settings were read already
        sys.modules["numba"].config.CACHE_DIR = where


_kernel_cache()

from zero.config import ConfigError, Params, load_params  # noqa: E402
from zero.games import Game, IllegalMove, make_game  # noqa: E402

__version__ = "0.1.0"


def __getattr__(name):  # the stage functions pull in torch: import them on first use
    stages = {
        "init_checkpoint": "zero.network",
        "load_checkpoint": "zero.network",
        "play_shard": "zero.selfplay",
        "train": "zero.train",
        "play_match": "zero.match",
        "read_shard": "zero.shards",
    }
    if name in stages:
        import importlib

        return getattr(importlib.import_module(stages[name]), name)
    raise AttributeError(f"module 'zero' has no attribute {name!r}")


__all__ = ["ConfigError", "Game", "IllegalMove", "Params", "load_params", "make_game", "__version__"]
