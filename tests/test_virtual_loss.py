"""zero.virtual_loss: several leaves of one tree per network call (SearchConfig.leaf_batch)."""

import numpy as np
import pytest

from zero.config import SearchConfig
from zero.evaluator import UniformEvaluator
from zero.games.gomoku import GomokuPosition
from zero.mcts import Search


class CountingUniform(UniformEvaluator):
    """Uniform priors, value 0, and the number of leaves of each call."""

    def __init__(self):
        self.calls = []

    def evaluate(self, game, batch, slots, paths, depth, inputs):
        self.calls.append(len(slots))
        return super().evaluate(game, batch, slots, paths, depth, inputs)


class ByAction(UniformEvaluator):
    """A value that depends on the leaf's path, so the trees of different leaves differ."""

    def evaluate(self, game, batch, slots, paths, depth, inputs):
        priors, _ = super().evaluate(game, batch, slots, paths, depth, inputs)
        first = np.asarray(paths)[:, 0]
        return priors, np.cos(first * 1.7 + np.asarray(depth)).astype(np.float32) * 0.8


def _check_tree(tree, slot):
    """Every node's visits are its children's plus its own evaluation: no virtual visit is left behind."""
    n = tree.num_nodes[slot]
    for node in range(1, n):
        if not tree.expanded[slot, node]:
            continue
        p, a = tree.parent[slot, node], tree.action[slot, node]
        below = tree.N[slot, node].sum()
        assert tree.N[slot, p, a] == below + 1
        # W of the edge is minus the node's own value and its children's W (sign flips per ply)
        own = tree.terminal[slot, node] if not np.isnan(tree.terminal[slot, node]) else tree.value[slot, node]
        assert tree.W[slot, p, a] == pytest.approx(-(own + tree.W[slot, node].sum()), abs=1e-4)


@pytest.mark.parametrize("leaf_batch", [2, 8, 32])
def test_a_batched_search_reaches_its_visits_in_fewer_calls_and_leaves_no_virtual_visit(leaf_batch):
    pos = GomokuPosition.initial(6, 6, 4).play("C3")
    ev = ByAction()
    ev.calls = []
    counting = CountingUniform()
    for evaluator in (ev, counting):
        search = Search(pos.game, evaluator, 1, SearchConfig(visits=200, leaf_batch=leaf_batch))
        search.run(pos.batch, np.array([0], np.int32))
        assert search.tree.root_visits(np.array([0]))[0] == 200
        _check_tree(search.tree, 0)
    assert max(counting.calls) > 1 and max(counting.calls) <= leaf_batch
    assert len(counting.calls) < 200


def test_one_leaf_a_round_is_the_unbatched_search():
    pos = GomokuPosition.initial(6, 6, 4).play("C3")
    trees = []
    for leaf_batch in (1, 1):
        search = Search(pos.game, ByAction(), 1, SearchConfig(visits=120, leaf_batch=leaf_batch))
        search.run(pos.batch, np.array([0], np.int32))
        trees.append(search.tree.N[0, 0].copy())
    np.testing.assert_array_equal(*trees)


def test_virtual_loss_spreads_one_round_over_several_root_moves():
    pos = GomokuPosition.initial(6, 6, 4)
    counting = CountingUniform()
    search = Search(pos.game, counting, 1, SearchConfig(visits=8, leaf_batch=8))
    search.run(pos.batch, np.array([0], np.int32))
    # the root's own evaluation, then one round of eight leaves under eight different root moves
    assert counting.calls == [1, 8]
    assert (search.tree.N[0, 0] > 0).sum() == 8


def test_searches_with_root_noise_keep_one_leaf_a_round():
    pos = GomokuPosition.initial(6, 6, 4)
    counting = CountingUniform()
    search = Search(pos.game, counting, 1, SearchConfig(visits=30, leaf_batch=8))
    search.run(pos.batch, np.array([0], np.int32), noise_rngs=[np.random.default_rng(0)])
    assert max(counting.calls) == 1


def test_the_batched_search_still_finds_the_only_block():
    board = """
     X . . . . .
     . . . . . .
     X . . . . .
     . . . . . .
     X O O O . .
     . . . . . .
     """
    pos = GomokuPosition.from_ascii(board, k=4, to_play=1)
    search = Search(pos.game, UniformEvaluator(), 1, SearchConfig(visits=1500, fpu_reduction=0.0, leaf_batch=8))
    search.run(pos.batch, np.array([0]))
    assert pos.game.action_to_text(int(search.tree.N[0, 0].argmax())) == "E2"
