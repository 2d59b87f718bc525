"""The games zero plays: Go and Gomoku behind one `Game` interface."""

from zero.games.base import Game, IllegalMove, LeafInputs


def make_game(config) -> Game:
    """The Game a `GameConfig` section describes."""
    if config.name == "go":
        from zero.games.go import GoGame

        return GoGame(size=config.size, komi=config.komi, liberty_planes=config.liberty_planes)
    from zero.games.gomoku import GomokuGame

    return GomokuGame(height=config.height, width=config.width, k=config.k)


__all__ = ["Game", "IllegalMove", "LeafInputs", "make_game"]
