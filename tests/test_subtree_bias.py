"""KataGo's subtree value bias correction (mcts.subtree_bias_*): the pattern keys of Go and Gomoku, a bucket's
bias by hand, a new leaf entering with it, the table kept to the nodes in the tree through re-rooting, and
whole searches with and without virtual loss."""

import numpy as np
import pytest

from zero.config import MCTSConfig, SearchConfig
from zero.games.go import GoPosition
from zero.games.gomoku import GomokuPosition
from zero.mcts import Search, Tree, _expand_backup
from zero.subtree_bias import bucket_of, leaf_correction, observe
from zero.tree_walk import new_child

from search_evaluators import Deferred, PathValues


def go_key(*moves, liberty_planes=True):
    pos = GoPosition.initial(9, liberty_planes=liberty_planes)
    for m in moves:
        pos = pos.play(m)
    return int(pos.game.pattern_keys(pos.planes()[None])[0])


def test_a_go_key_is_the_last_two_moves_and_the_window_around_the_last():
    key = go_key("A1", "G7", "E5")  # E5's window: C3 to G7, so G7 is in it and A1 is not
    assert key >= 0
    assert go_key("J9", "G7", "E5") == key  # another stone out of the window
    assert go_key("A1", "G7", "E4") != key  # another last move
    assert go_key("A1", "G6", "E5") != key  # another move before it
    assert go_key("D4", "G7", "E5") != key  # another stone in the window
    assert go_key("A1", "G7", "E5", "B2") != key  # the other side moved
    # a pass has a point of its own and no window: the same key wherever the stones are
    assert go_key("A1", "G7", "pass") == go_key("J9", "G7", "pass") != go_key("A1", "G6", "pass")


def test_a_go_key_sees_a_stone_in_atari_where_the_input_has_the_liberty_planes():
    # white C3 among black B3, C4 and D3; the last move black E5, white's H9 before it. C3's window
    # neighbours are the same in both; only C3's liberties differ: C2 empty (atari) or white (three)
    atari = ("B3", "C3", "C4", "A9", "D3", "J9", "J1", "H9", "E5")
    safe = ("B3", "C3", "C4", "C2", "D3", "J9", "J1", "H9", "E5")  # C2 is out of E5's window (C3 to G7)
    assert go_key(*atari) != go_key(*safe)
    assert go_key(*atari, liberty_planes=False) == go_key(*safe, liberty_planes=False)


def gomoku_key(*moves):
    pos = GomokuPosition.initial(9, 9, 5)
    for m in moves:
        pos = pos.play(m)
    return int(pos.game.pattern_keys(pos.planes()[None])[0])


def test_a_gomoku_key_is_the_last_move_and_its_window():
    key = gomoku_key("A1", "E5", "F6")
    assert gomoku_key("J9", "E5", "F6") == key  # out of F6's window (D4 to H8)
    assert gomoku_key("D4", "E5", "F6") != key
    assert gomoku_key("A1", "E5", "F7") != key
    pos = GomokuPosition.initial(9, 9, 5)
    assert pos.game.pattern_keys(pos.planes()[None])[0] == -1  # no move yet, no key


def test_buckets_of_the_keys():
    assert list(bucket_of(np.array([-1, 5, 1029]), 1024)) == [-1, 5, 5]


def bias_tree(buckets=256) -> Tree:
    t = Tree.allocate(1, 6, 2, bias_buckets=buckets)
    t.num_nodes[0] = 1
    return t


def test_a_buckets_bias_worked_out_by_hand():
    t = bias_tree()
    t.bias_key[0, 1], t.value[0, 1] = 5, 0.6
    observe(t, 0, 1, 0.2, 0.8)  # error 0.6 - 0.2 = 0.4, weight 1
    assert list(t.bias_table[0, 5]) == pytest.approx([0.4, 1.0])
    observe(t, 0, 1, 0.0, 0.8)  # mean 0.1: error 0.5, weight 2 ** 0.8 = 1.7411, replacing the first
    assert list(t.bias_table[0, 5]) == pytest.approx([0.5 * 1.7411, 1.7411], abs=1e-4)
    t.bias_key[0, 2], t.value[0, 2] = 5, -0.2
    observe(t, 0, 2, 0.2, 0.8)  # error -0.4, weight 1
    assert list(t.bias_table[0, 5]) == pytest.approx([0.8706 - 0.4, 2.7411], abs=1e-4)
    assert leaf_correction(t, 0, 5, 0.35) == pytest.approx(0.35 * 0.4706 / 2.7411, abs=1e-4)
    assert leaf_correction(t, 0, 6, 0.35) == 0.0  # an empty bucket
    assert leaf_correction(t, 0, -1, 0.35) == 0.0  # no bucket
    t.bias_key[0, 3] = -1
    observe(t, 0, 3, 0.9, 0.8)
    assert t.bias_table[0].sum() == pytest.approx(0.4706 + 2.7411, abs=1e-4)  # a node without a bucket adds nothing


@pytest.mark.parametrize("factor, entered", [(0.5, 0.3), (0.0, 0.5)])
def test_a_new_leaf_enters_with_its_buckets_bias(factor, entered):
    # the root's edge 0 leads to node 1 of bucket 7, value 0.5, which saw 0.1 come back: bias 0.4, weight 1
    t = bias_tree()
    t.expanded[0, 0] = True
    t.P[0, 0] = [0.5, 0.5]
    one = new_child(t, 0, 0, 0)
    t.expanded[0, one], t.value[0, one], t.bias_key[0, one] = True, 0.5, 7
    observe(t, 0, one, 0.1, 0.8)
    two = new_child(t, 0, 0, 1)
    priors = np.full((1, 2), 0.5, np.float32)
    values = np.array([0.5], np.float32)
    _expand_backup(t, np.zeros(1, np.int32), np.array([two], np.int32), priors, values, values,
                   np.ones((1, 2), bool), np.full(1, np.nan, np.float32), np.array([7]), (factor, 0.8))
    assert t.W[0, 0, 1] == pytest.approx(-entered)  # the root's view of the leaf's corrected value
    assert t.V[0, 0, 1] == pytest.approx(-0.5)  # the value head's own value stays as it was
    assert t.value[0, two] == pytest.approx(0.5)  # the node keeps its network value, the error's reference
    if factor:
        assert t.bias_key[0, two] == 7 and list(t.bias_node[0, two]) == [0.0] * 4


def check_table_is_the_trees_nodes(tree, slot):
    """Each keyed node's statistics are what came back through its edges, and its slot's table is the sum of
    the last contributions of the nodes in the tree: no virtual visit entered, no dropped node left behind."""
    table = np.zeros_like(tree.bias_table[slot])
    for node in range(tree.num_nodes[slot]):
        k = tree.bias_key[slot, node]
        if k < 0 or not tree.expanded[slot, node]:
            continue
        s = tree.bias_node[slot, node]
        assert s[0] == tree.N[slot, node].sum()
        assert s[1] == pytest.approx(tree.W[slot, node].sum(), abs=1e-3)
        table[k] += (s[3], s[2])
    assert np.allclose(table, tree.bias_table[slot])
    return int((tree.bias_key[slot, :tree.num_nodes[slot]] >= 0).sum())


@pytest.mark.parametrize("leaf_batch, in_flight", [(1, 1), (8, 1), (8, 2)])
def test_a_search_keeps_its_table_to_the_nodes_in_its_tree(leaf_batch, in_flight):
    pos = GomokuPosition.initial(6, 6, 4).play("C3")
    config = SearchConfig(visits=300, leaf_batch=leaf_batch, leaf_batches_in_flight=in_flight,
                          subtree_bias_factor=0.35)
    search = Search(pos.game, Deferred(by="last") if in_flight > 1 else PathValues(by="last"), 1, config)
    slots = np.zeros(1, np.int32)
    search.run(pos.batch, slots)
    t = search.tree
    assert t.root_visits(slots)[0] == 300
    assert check_table_is_the_trees_nodes(t, 0) > 100
    assert np.abs(t.bias_table[0, :, 0]).sum() > 0  # errors were observed
    best = int(t.best_actions(slots)[0])
    t.advance(0, best)  # tree reuse: the kept subtree's contributions alone
    kept = check_table_is_the_trees_nodes(t, 0)
    assert 0 < kept < 300
    t.reset(0)
    assert not t.bias_table[0].any()


@pytest.mark.parametrize("leaf_batch", [1, 8])
def test_the_switch_turns_a_search_and_off_it_is_the_search_as_it_was(leaf_batch):
    pos = GomokuPosition.initial(6, 6, 4).play("C3")
    roots = []
    for factor in (0.0, 0.0, 0.35):
        search = Search(pos.game, PathValues(by="last"), 1, SearchConfig(visits=300, leaf_batch=leaf_batch,
                                                            subtree_bias_factor=factor))
        search.run(pos.batch, np.zeros(1, np.int32))
        assert (search.tree.bias_table.shape[1] > 0) == (factor > 0)  # off: no table at all
        roots.append(search.tree.N[0, 0].copy())
    assert np.array_equal(roots[0], roots[1])
    assert not np.array_equal(roots[0], roots[2])


def test_the_params_switch_reaches_the_search():
    assert MCTSConfig().search(10).bias == (0.0, 0.8)
    assert MCTSConfig(subtree_bias_factor=0.35, subtree_bias_exponent=0.9).search(10).bias == (0.35, 0.9)
    with pytest.raises(ValueError, match="subtree_bias_factor"):
        MCTSConfig(subtree_bias_factor=1.5)
    with pytest.raises(ValueError, match="subtree_bias_exponent"):
        MCTSConfig(subtree_bias_exponent=0)
