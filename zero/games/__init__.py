"""The games zero plays: Go and Gomoku behind one `Game` interface."""

from zero.games.base import Game, IllegalMove, LeafInputs


def make_game(config) -> Game:
    """The Game a `GameConfig` section describes."""
    if config.name == "go":
        from zero.games.go import GoGame

        return GoGame(size=config.size, komi=config.komi, liberty_planes=config.liberty_planes)
    from zero.games.gomoku import GomokuGame

    return GomokuGame(height=config.height, width=config.width, k=config.k)


def initial_position(game: Game):
    """The empty board of `game` (Go or Gomoku) as a position to play from."""
    if game.name == "go":
        from zero.games.go import GoPosition

        return GoPosition.initial(size=game.height, komi=game.komi, liberty_planes=game.liberty_planes)
    from zero.games.gomoku import GomokuPosition

    return GomokuPosition.initial(height=game.height, width=game.width, k=game.k)


__all__ = ["Game", "IllegalMove", "LeafInputs", "initial_position", "make_game"]
