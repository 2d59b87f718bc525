"""KataGo's dynamic variance-scaled c_puct (mcts.c_puct_stdev_*): the factor by hand, the choice it changes,
and whole searches with it, with and without virtual loss."""

import numpy as np
import pytest

from zero.config import MCTSConfig, SearchConfig
from zero.games.gomoku import GomokuPosition
from zero.mcts import Search, Tree, explore_factor, forced_select, puct_select

from search_evaluators import PathValues

KATAGO = (0.85, 0.4, 2.0)  # KataGo's scale, prior and prior weight


def node_with_values(per_edge: list[list[float]], own: float, priors: list[float] | None = None) -> Tree:
    """Slot 0's root with `own` as its network value and, on edge a, the values backed up through it."""
    A = len(per_edge)
    t = Tree.allocate(1, 4, A)
    t.N[0, 0] = [len(v) for v in per_edge]
    t.W[0, 0] = [sum(v) for v in per_edge]
    t.W2[0, 0] = [sum(x * x for x in v) for v in per_edge]
    t.P[0, 0] = priors or [1.0 / A] * A
    t.value[0, 0] = own
    t.expanded[0, 0] = True
    return t


def test_the_factor_is_worked_out_by_hand():
    # values 0.1 (the node's own), 0.9, 0.3 (edge 0), -0.5 (edge 1): n = 4, mean 0.2, mean of squares 0.29;
    # variance ((0.04 + 0.16) * 2 + 0.29 * 4) / (2 + 4 - 1) - 0.04 = 0.272, sigma 0.52154;
    # factor 1 + 0.85 * (0.52154 / 0.4 - 1) = 1.25827
    t = node_with_values([[0.9, 0.3], [-0.5], []], own=0.1)
    assert explore_factor(t, 0, 0, KATAGO) == pytest.approx(1.25827, abs=1e-4)
    assert explore_factor(t, 0, 0, (0.0, 0.4, 2.0)) == 1.0  # off
    assert explore_factor(node_with_values([[], []], own=0.7), 0, 0, KATAGO) == 1.0  # no value below it yet


def test_agreeing_values_explore_less_and_disagreeing_ones_more():
    agree = node_with_values([[0.5] * 6, [0.5] * 4], own=0.5)
    disagree = node_with_values([[0.9, -0.9] * 3, [0.9, -0.9] * 2], own=0.0)
    assert explore_factor(agree, 0, 0, KATAGO) < 1.0 < explore_factor(disagree, 0, 0, KATAGO)
    # the factor never turns exploration negative, whatever the scale does to a tiny spread
    assert explore_factor(agree, 0, 0, (1.0, 2.0, 0.0)) >= 0.0


def test_a_spread_of_values_sends_puct_to_the_unvisited_move():
    # edge 0: four visits of 0.9; edge 1 unvisited (fpu: the node's own value -0.5). Priors 0.5 each,
    # sum N = 4: a0 = 0.9 + c * 0.5 * 2 / 5 = 0.9 + 0.2c, a1 = -0.5 + c * 0.5 * 2 = -0.5 + c; a1 wins for c > 1.75.
    # values -0.5, 0.9 x 4: sigma 0.6154, factor 1.4577, c = 1.5 * 1.4577 = 2.19
    t = node_with_values([[0.9] * 4, []], own=-0.5, priors=[0.5, 0.5])
    assert puct_select(t, 0, 0, 1.5, 0.0) == 0
    assert puct_select(t, 0, 0, 1.5, 0.0, np.nan, KATAGO) == 1


def test_forced_playouts_take_the_scaled_c_puct_too():
    # k = 2, sum N = 3: edges 0 and 1 are owed forced playouts (sqrt(2 * 0.2 * 3) = 1.10 and sqrt(2 * 0.7 * 3) =
    # 2.05, above their one visit), edge 2 is not (0.77). a0 = 0.3 + c * 0.2 * 1.732 / 2 = 0.3 + 0.173c,
    # a1 = -0.2 + 0.606c: a1 goes first for c > 1.155. Values -0.9 (own), 0.3, -0.2, 0.9: factor 1.517.
    t = node_with_values([[0.3], [-0.2], [0.9]], own=-0.9, priors=[0.2, 0.7, 0.1])
    assert forced_select(t, 0, 1.0, 2.0) == 0
    assert forced_select(t, 0, 1.0, 2.0, KATAGO) == 1


def test_the_params_switch_reaches_the_search():
    assert MCTSConfig().search(10).stdev == (0.0, 0.4, 2.0)
    mc = MCTSConfig(c_puct_stdev_scale=0.85, c_puct_stdev_prior=0.5, c_puct_stdev_prior_weight=3)
    assert mc.search(10).stdev == (0.85, 0.5, 3.0)
    with pytest.raises(ValueError, match="c_puct_stdev_scale"):
        MCTSConfig(c_puct_stdev_scale=1.5)
    with pytest.raises(ValueError, match="c_puct_stdev_prior"):
        MCTSConfig(c_puct_stdev_prior=0)


def _edges_agree_with_their_nodes(tree, slot):
    """Every edge's W2 is the sum of the squares its node's values gave: no virtual visit left behind."""
    for node in range(1, tree.num_nodes[slot]):
        if not tree.expanded[slot, node]:
            continue
        p, a = tree.parent[slot, node], tree.action[slot, node]
        if not np.isnan(tree.terminal[slot, node]):
            assert tree.W2[slot, p, a] == pytest.approx(tree.terminal[slot, node] ** 2 * tree.N[slot, p, a], abs=1e-3)
            continue
        own = tree.value[slot, node]
        assert tree.W2[slot, p, a] == pytest.approx(own * own + tree.W2[slot, node].sum(), abs=1e-3)


@pytest.mark.parametrize("leaf_batch", [1, 8])
def test_a_search_with_the_scaled_c_puct_spends_its_visits_otherwise(leaf_batch):
    pos = GomokuPosition.initial(6, 6, 4).play("C3")
    roots = []
    for scale in (0.0, 0.85):
        search = Search(pos.game, PathValues(), 1, SearchConfig(visits=300, leaf_batch=leaf_batch,
                                                            c_puct_stdev_scale=scale))
        search.run(pos.batch, np.array([0], np.int32))
        assert search.tree.root_visits(np.array([0]))[0] == 300
        _edges_agree_with_their_nodes(search.tree, 0)
        roots.append(search.tree.N[0, 0].copy())
    assert not np.array_equal(*roots)
