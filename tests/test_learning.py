"""The proof that the loop learns: from random weights, a few generations of self-play and
training on Gomoku 6x6 four-in-a-row end clearly stronger than they started, with the paper's
recipe and with the fast one (global pooling, forced playouts with pruned targets, playout cap
randomization with twice the games, a held-out loss).

The trained network must beat both the untrained network and pure MCTS with 200 random
rollouts per move, each over 60 games, with its Elo interval above zero: a player of equal
strength scores 70% or more in 60 games far less than once in a thousand runs.
"""

import pytest

from zero.config import load_params
from zero.network import init_checkpoint
from zero.selfplay import play_shard
from zero.train import train
from zero.match import play_match

LEARNING = [
    "game.name=gomoku", "game.height=6", "game.width=6", "game.k=4",
    "network.size=b2c32",
    "mcts.fpu_reduction=0.0",
    "selfplay.visits=64", "selfplay.concurrent_games=96", "selfplay.games_per_shard=96",
    "selfplay.temperature_moves=6", "selfplay.resign_threshold=-1",
    "train.batch_size=128", "train.steps=200", "train.learning_rate=0.05", "train.lr_milestones=[150]",
    "train.max_window_positions=20000",
    "gate.visits=64", "gate.concurrent_games=60", "gate.opening_moves=4",
]
FAST = LEARNING + [
    "network.global_pooling=true", "mcts.forced_playouts_k=2",
    "selfplay.full_search_share=0.25", "selfplay.fast_visits=16",
    "selfplay.games_per_shard=192", "selfplay.concurrent_games=192", "train.holdout_share=0.05",
]
GENERATIONS = 10
WINDOW = 3  # generations of games each training sees


# The fast recipe (the one the 9x9 campaign trains with) runs in every `make test`, about 4 minutes on a core:
# ten generations of self-play and training are what it takes for the net to learn measurably. The paper's
# recipe is the same check on the other recipe, in `make test-long`.
@pytest.mark.slow
@pytest.mark.parametrize("recipe", [pytest.param(LEARNING, marks=pytest.mark.long), FAST], ids=["paper", "fast"])
def test_short_loop_learns_gomoku(tmp_path, recipe):
    params = load_params(None, recipe)
    init_checkpoint(params, tmp_path / "g0.pt", seed=0)
    shards = []
    for g in range(GENERATIONS):
        shards.append(tmp_path / f"games-{g}.npz")
        play_shard(params, tmp_path / f"g{g}.pt", shards[-1], seed=100 + g)
        summary = train(params, tmp_path / f"g{g}.pt", shards[-WINDOW:], tmp_path / f"g{g + 1}.pt", seed=g)
        if g == 0:
            first_loss = summary["final"]["loss"]
    assert summary["final"]["loss"] < first_loss
    trained = str(tmp_path / f"g{GENERATIONS}.pt")
    for opponent in (str(tmp_path / "g0.pt"), "mcts:200"):
        result = play_match(params, trained, opponent, num_games=60, seed=7)
        assert result.win_rate >= 0.7 and result.elo_low > 0, (opponent, result.to_dict())
