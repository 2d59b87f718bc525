"""zero: AlphaGo Zero for Go and Gomoku.

The public surface: configuration, games, and the stage functions the
pipeline calls (init_checkpoint, play_shard, train, play_match).
"""

from zero.config import ConfigError, Params, load_params
from zero.games import Game, IllegalMove, make_game

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
