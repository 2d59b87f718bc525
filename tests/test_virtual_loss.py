"""zero.virtual_loss: several leaves of one tree per network call (SearchConfig.leaf_batch)."""

import numpy as np
import pytest

from zero.config import SearchConfig
from zero.evaluator import UniformEvaluator
from zero.games.gomoku import GomokuPosition
from zero.mcts import IN_FLIGHT_SHARE, Search, in_flight_room

from search_evaluators import CountingUniform, Deferred, DeferredUniform, PathValues


def _check_tree(tree, slot):
    """Every node's visits are its children's plus its own evaluation: no virtual visit is left behind."""
    n = tree.num_nodes[slot]
    for node in range(1, n):
        if not tree.expanded[slot, node]:
            continue
        p, a = tree.parent[slot, node], tree.action[slot, node]
        if not np.isnan(tree.terminal[slot, node]):  # a finished game: each visit backs up its result
            assert tree.W[slot, p, a] == pytest.approx(-tree.terminal[slot, node] * tree.N[slot, p, a], abs=1e-4)
            continue
        below = tree.N[slot, node].sum()
        assert tree.N[slot, p, a] == below + 1
        # W of the edge is minus the node's own value and its children's W (sign flips per ply)
        own = tree.terminal[slot, node] if not np.isnan(tree.terminal[slot, node]) else tree.value[slot, node]
        assert tree.W[slot, p, a] == pytest.approx(-(own + tree.W[slot, node].sum()), abs=1e-4)


@pytest.mark.parametrize("leaf_batch", [2, 8, 32])
def test_a_batched_search_reaches_its_visits_in_fewer_calls_and_leaves_no_virtual_visit(leaf_batch):
    pos = GomokuPosition.initial(6, 6, 4).play("C3")
    ev = PathValues(depth_weight=1.0)
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
        search = Search(pos.game, PathValues(depth_weight=1.0), 1, SearchConfig(visits=120, leaf_batch=leaf_batch))
        search.run(pos.batch, np.array([0], np.int32))
        trees.append(search.tree.N[0, 0].copy())
    np.testing.assert_array_equal(*trees)


def test_virtual_loss_spreads_one_round_over_several_root_moves():
    pos = GomokuPosition.initial(6, 6, 4)
    search = Search(pos.game, UniformEvaluator(), 1, SearchConfig(visits=400, leaf_batch=8))
    search.run(pos.batch, np.array([0], np.int32), visits=np.array([300]))
    rows = search._select_virtual(np.array([0], np.int32), np.array([8], np.int32), np.nan)
    first_moves = rows[1][:, 0]
    # eight leaves of one round: each walk sees the others' virtual losses and turns to other root moves
    assert len(rows[3]) == 8 and len(set(first_moves.tolist())) >= 4


def test_the_leaves_at_the_network_are_a_small_share_of_the_search():
    """At most 1/IN_FLIGHT_SHARE of a search's visits wait on the network at once (at least one), and at
    most twice that share of its root's visits so far."""
    assert in_flight_room(1000, 0) == 1 and in_flight_room(1000, 64) == 4 and in_flight_room(100, 5000) == 3
    assert IN_FLIGHT_SHARE == 32
    pos = GomokuPosition.initial(6, 6, 4)
    for visits, most in ((20, 1), (100, 3), (400, 8)):
        counting = CountingUniform()
        Search(pos.game, counting, 1, SearchConfig(visits=visits, leaf_batch=8)).run(pos.batch, np.array([0]))
        assert max(counting.calls) == most
    deferred = Deferred(depth_weight=1.0)
    Search(pos.game, deferred, 1, SearchConfig(visits=100, leaf_batch=8, leaf_batches_in_flight=4)).run(
        pos.batch, np.array([0]))
    assert deferred.most_leaves == 3


def test_searches_with_root_noise_keep_one_leaf_a_round():
    pos = GomokuPosition.initial(6, 6, 4)
    counting = CountingUniform()
    search = Search(pos.game, counting, 1, SearchConfig(visits=30, leaf_batch=8))
    search.run(pos.batch, np.array([0], np.int32), noise_rngs=[np.random.default_rng(0)])
    assert max(counting.calls) == 1


@pytest.mark.parametrize("in_flight", [1, 2])
def test_the_batched_search_still_finds_the_only_block(in_flight):
    board = """
     X . . . . .
     . . . . . .
     X . . . . .
     . . . . . .
     X O O O . .
     . . . . . .
     """
    pos = GomokuPosition.from_ascii(board, k=4, to_play=1)
    # with batches in flight, each batch's values reach the tree only after the next batch is selected
    evaluator = UniformEvaluator() if in_flight == 1 else DeferredUniform()
    search = Search(pos.game, evaluator, 1, SearchConfig(visits=1500, fpu_reduction=0.0, leaf_batch=8,
                                                         leaf_batches_in_flight=in_flight))
    search.run(pos.batch, np.array([0]))
    assert pos.game.action_to_text(int(search.tree.N[0, 0].argmax())) == "E2"


@pytest.mark.parametrize("in_flight", [2, 4])
def test_batches_in_flight_reach_the_visits_exactly_and_leave_no_virtual_visit(in_flight):
    pos = GomokuPosition.initial(6, 6, 4).play("C3")
    ev = Deferred(depth_weight=1.0)
    search = Search(pos.game, ev, 1, SearchConfig(visits=1000, leaf_batch=8, leaf_batches_in_flight=in_flight))
    search.run(pos.batch, np.array([0], np.int32))
    assert search.tree.root_visits(np.array([0]))[0] == 1000
    assert ev.most_waiting == in_flight and ev.waiting == []
    _check_tree(search.tree, 0)  # a leaf in flight is never selected again (it would be expanded twice)


def test_batches_in_flight_search_several_games_each_to_its_visits():
    pos = GomokuPosition.initial(6, 6, 4)
    batch = pos.game.new_batch(3)
    config = SearchConfig(visits=90, leaf_batch=4, leaf_batches_in_flight=3)
    search = Search(pos.game, Deferred(depth_weight=1.0), 3, config)
    search.run(batch, np.array([0, 1, 2], np.int32), visits=np.array([90, 40, 7]))
    np.testing.assert_array_equal(search.tree.root_visits(np.array([0, 1, 2])), [90, 40, 7])
    for slot in range(3):
        _check_tree(search.tree, slot)


@pytest.fixture(scope="module")
def gomoku_net():
    from zero.config import load_params
    from zero.network import init_network

    params = load_params(None, ["game.name=gomoku", "game.height=6", "game.width=6", "game.k=4",
                                "network.size=b1c8", "network.value_hidden=8"])
    pos = GomokuPosition.initial(6, 6, 4)
    return init_network(params, pos.game, 0).eval(), pos


@pytest.mark.parametrize("fast", [False, True])
def test_network_calls_on_worker_threads_give_the_synchronous_results(gomoku_net, fast):
    """cpu_workers runs the calls on threads; the leaves' symmetries are drawn at submit, in order, so the
    results are those of the calls made one after the other."""
    from zero.evaluator import NetworkEvaluator

    net, pos = gomoku_net
    sym = pos.game.symmetries()
    results = []
    for workers in (0, 2):
        ev = NetworkEvaluator(net, sym, seed=5, fast=fast, cpu_workers=workers)
        search = Search(pos.game, ev, 1, SearchConfig(visits=200, leaf_batch=8))
        # a tree of 64 visits (room for more) whose next leaves make the batches below
        search.run(pos.batch, np.array([0], np.int32), visits=np.array([64]))
        rows = search._select_virtual(np.array([0], np.int32), np.array([8], np.int32), np.nan)
        inputs = search._leaf_inputs(pos.batch, rows)
        before = ev.nn_positions
        handles = [ev.submit(pos.game, pos.batch, rows[0], rows[1], rows[2], inputs) for _ in range(3)]
        results.append([ev.collect(h) for h in handles])
        assert ev.nn_positions - before == 3 * int(np.isnan(inputs.terminal_value).sum()) > 0
    for (p0, v0), (p1, v1) in zip(*results):
        np.testing.assert_allclose(p0, p1, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(v0, v1, rtol=1e-5, atol=1e-6)


def test_a_network_search_with_batches_in_flight_on_worker_threads(gomoku_net):
    from zero.evaluator import NetworkEvaluator

    net, pos = gomoku_net
    ev = NetworkEvaluator(net, pos.game.symmetries(), seed=1, cpu_workers=2)
    search = Search(pos.game, ev, 1, SearchConfig(visits=1000, leaf_batch=8, leaf_batches_in_flight=2))
    search.run(pos.batch, np.array([0], np.int32))
    assert search.tree.root_visits(np.array([0]))[0] == 1000
    assert ev.nn_calls < 1000 / 4 and ev.nn_positions == search.evaluations
    _check_tree(search.tree, 0)


@pytest.mark.parametrize("in_flight", [1, 3])
def test_a_stopped_search_backs_up_what_is_in_flight_and_returns(in_flight):
    """`stop` (an engine's time budget) ends the search between rounds with no virtual visit left."""
    pos = GomokuPosition.initial(6, 6, 4).play("C3")
    ev = Deferred(depth_weight=1.0)
    calls = []

    def stop():
        calls.append(1)
        return len(calls) > 40

    search = Search(pos.game, ev, 1, SearchConfig(visits=100_000, leaf_batch=8, leaf_batches_in_flight=in_flight))
    search.run(pos.batch, np.array([0], np.int32), stop=stop)
    visits = search.tree.root_visits(np.array([0]))[0]
    assert 1 <= visits <= 41 * 8 and len(calls) > 40 and ev.waiting == []
    _check_tree(search.tree, 0)
