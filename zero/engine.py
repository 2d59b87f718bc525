"""A single-game engine for GTP and terminal play: a network plus search, one position at a time."""

from __future__ import annotations

import numpy as np

from zero.evaluator import NetworkEvaluator
from zero.games import make_game
from zero.mcts import Search
from zero.network import CheckpointError, init_network, load_checkpoint, pick_device


class Engine:
    """Chooses moves for positions of the params' game.

    Args:
        params: Params; `game` sets the rules, `mcts` the search, `gate.visits` the default visits.
        checkpoint: a network checkpoint, or None for a freshly initialised network.
        visits: root visits per move (default `params.gate.visits`).
        seed: seeds the fresh network and the symmetry draws.
    """

    def __init__(self, params, checkpoint: str | None = None, visits: int | None = None, seed: int = 0):
        self.params = params
        self.checkpoint = checkpoint
        self.visits = visits or params.gate.visits
        self.seed = seed
        self.device = pick_device(params.gate.device)
        self._net = None
        if checkpoint is not None:
            self._net, _ = load_checkpoint(checkpoint, self.device)
        self._configure(params.game)

    def _configure(self, game_config) -> None:
        game = make_game(game_config)
        net = self._net
        if self.checkpoint is None:
            net = init_network(self.params.model_copy(update={"game": game_config}), game, self.seed)
            net = net.to(self.device)
        c = net.config
        if (c.height, c.width, c.num_actions, c.in_planes) != (
            game.height, game.width, game.num_actions, game.num_planes
        ):
            raise CheckpointError(
                f"{self.checkpoint}: the network is for a {c.height}x{c.width} board, "
                f"not {game.height}x{game.width}"
            )
        self.game, self._net = game, net
        sym = game.symmetries() if self.params.mcts.symmetries else None
        self.evaluator = NetworkEvaluator(net, sym, self.seed, self.device)
        mc = self.params.mcts
        self.search = Search(game, self.evaluator, 1, self.visits, mc.c_puct, mc.fpu_reduction)

    def set_board(self, **game_fields) -> None:
        """Change the board (e.g. size=13, komi=6.5); CheckpointError if the network cannot play it."""
        self._configure(self.params.game.model_copy(update=game_fields))

    def analyse(self, moves: list[int]) -> tuple[np.ndarray, float]:
        """Search the position after `moves`: (visit distribution [A], root value for the side to move)."""
        batch = self.game.new_batch(1)
        for a in moves:
            self.game.play(batch, 0, int(a))
        self.search.tree.reset(0)
        slots = np.zeros(1, np.int32)
        self.search.run(batch, slots)
        root_v, best_q = self.search.tree.root_values(slots)
        return self.search.tree.root_policy(slots)[0], float(max(root_v[0], best_q[0]))

    def genmove(self, position) -> int | None:
        """The most visited action for the side to move in `position`, or None to resign."""
        if self.game.name == "go" and (position.size, position.komi) != (self.game.height, self.game.komi):
            self.set_board(size=position.size, komi=position.komi)
        policy, value = self.analyse(list(position.moves))
        if value < self.params.selfplay.resign_threshold:
            return None
        return int(policy.argmax())
