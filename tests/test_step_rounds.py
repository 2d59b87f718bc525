"""selfplay.step_rounds: searches that pause every N rounds so that the games whose searches are done move.

Each game's tree is its own, so pausing a game's search and resuming it later changes nothing for that game
when the evaluator's answer for a leaf does not depend on the other leaves of its call: the games are then
exactly the lockstep's. What changes is how many games a network call holds.
"""

import numpy as np
import pytest

from zero.config import load_params
from zero.games import make_game
from zero.games.base import LeafInputs
from zero.selfplay import play_games

BASE = ["game.size=5", "selfplay.visits=24", "selfplay.concurrent_games=12", "selfplay.temperature_moves=4",
        "selfplay.full_search_share=0.25", "selfplay.fast_visits=4", "mcts.forced_playouts_k=2"]


class RowEvaluator:
    """A fixed function of each leaf's planes, row by row (no batch arithmetic): priors from a random linear
    map of the planes, the value a tanh of another; records the size of each call."""

    needs_planes = True

    def __init__(self, game, seed: int = 0):
        rng = np.random.default_rng(seed)
        n = game.num_planes * game.height * game.width
        self.w = rng.normal(0, 0.3, (game.num_actions, n))
        self.v = rng.normal(0, 0.05, n)
        self.calls: list[int] = []

    def evaluate(self, game, batch, slots, paths, depth, inputs: LeafInputs):
        L = len(slots)
        self.calls.append(L)
        priors = np.zeros((L, game.num_actions), np.float32)
        values = np.zeros(L, np.float32)
        for i in np.flatnonzero(np.isnan(inputs.terminal_value)):  # a finished game's leaf is not evaluated
            x = inputs.planes[i].reshape(-1).astype(np.float64)
            logits = np.where(inputs.legal[i], [np.dot(row, x) for row in self.w], -np.inf)
            p = np.exp(logits - logits.max())
            priors[i] = p / p.sum()
            values[i] = np.tanh(np.dot(self.v, x))
        return priors, values


def _play(extra: list[str], games: int = 16, seed: int = 5):
    params = load_params(None, BASE + extra)
    game = make_game(params.game)
    evaluator = RowEvaluator(game)
    records = play_games(game, evaluator, params.selfplay, params.mcts.search(params.selfplay.visits), games, seed)
    return records, evaluator


def _same_games(a, b) -> None:
    assert [r.moves for r in a] == [r.moves for r in b]
    assert [r.result for r in a] == [r.result for r in b]
    assert [r.resigned for r in a] == [r.resigned for r in b]
    for ra, rb in zip(a, b):
        assert len(ra.policies) == len(rb.policies) > 0
        np.testing.assert_array_equal(np.array(ra.policies), np.array(rb.policies))
        np.testing.assert_array_equal(np.array(ra.planes), np.array(rb.planes))


@pytest.mark.parametrize("step, groups", [(1, 1), (3, 1), (3, 2)])
def test_paused_searches_play_the_lockstep_games(step, groups):
    lockstep, _ = _play([f"selfplay.search_groups={groups}"])
    stepped, _ = _play([f"selfplay.step_rounds={step}", f"selfplay.search_groups={groups}"])
    _same_games(lockstep, stepped)


def test_network_calls_hold_the_games_whose_searches_are_short():
    lockstep, a = _play([], games=24)
    stepped, b = _play(["selfplay.step_rounds=2"], games=24)
    _same_games(lockstep, stepped)
    # the same leaves in all (the same searches), in fewer and fuller calls: a quarter of the searches
    # take 24 visits and the rest 4, so in lockstep most rounds hold only the full searches' games
    assert sum(a.calls) == sum(b.calls)
    assert np.mean(b.calls) > 2 * np.mean(a.calls)


def test_the_switch_is_off_by_default_and_keeps_params_hashes():
    default = load_params(None, BASE)
    off = load_params(None, BASE + ["selfplay.step_rounds=0"])
    on = load_params(None, BASE + ["selfplay.step_rounds=4"])
    assert default.selfplay.step_rounds == 0
    assert default.digest() == off.digest() != on.digest()
    assert "step_rounds" not in default.model_dump()["selfplay"]
    with pytest.raises(ValueError, match="step_rounds"):
        load_params(None, BASE + ["selfplay.step_rounds=-1"])


def test_gumbel_search_refuses_the_switch():
    from zero.gumbel import search_player

    params = load_params(None, ["game.size=5", "mcts.root=gumbel", "selfplay.step_rounds=2"])
    game = make_game(params.game)
    with pytest.raises(ValueError, match="step_rounds must stay 0"):
        search_player("self-play", RowEvaluator(game), params.mcts.search(8), noise=True,
                      step_rounds=params.selfplay.step_rounds)
