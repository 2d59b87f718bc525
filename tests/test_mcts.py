"""The batched PUCT search: hand-worked selection, backup, reuse, tactics, batch independence."""

import math

import numpy as np
import pytest

from zero.config import SearchConfig
from zero.evaluator import NetworkEvaluator, UniformEvaluator, masked_softmax
from zero.games.gomoku import GomokuGame, GomokuPosition
from zero.gumbel import search_player
from zero.mcts import Search, Tree, add_dirichlet_noise, puct_select, tempered


def tree_with_root(N, W, P, value=0.0):
    A = len(N)
    t = Tree.allocate(1, 4, A)
    t.N[0, 0], t.W[0, 0], t.P[0, 0] = N, W, P
    t.value[0, 0] = value
    t.expanded[0, 0] = True
    return t


def test_puct_picks_the_edge_worked_out_by_hand():
    # sum N = 3, sqrt 3 = 1.7321, c_puct 1.5, fpu = 0.1 - 0.25 = -0.15
    # a0: 1.0/2 + 1.5*0.2*1.7321/3 = 0.6732
    # a1: 0.8/1 + 1.5*0.5*1.7321/2 = 1.4495   <- best
    # a2: -0.15 + 1.5*0.3*1.7321/1 = 0.6294
    t = tree_with_root([2, 1, 0], [1.0, 0.8, 0.0], [0.2, 0.5, 0.3], value=0.1)
    assert puct_select(t, 0, 0, 1.5, 0.25) == 1


def test_puct_prefers_unvisited_edge_with_large_prior():
    # sum N = 4, sqrt = 2. a0: -0.5/2 + 1.5*0.1*2/3 = -0.15; a1: fpu 0 - 0 + 1.5*0.9*2/1 = 2.7
    t = tree_with_root([2, 0, 2], [-0.5, 0.0, -2.0], [0.1, 0.9, -1.0], value=0.0)
    assert puct_select(t, 0, 0, 1.5, 0.0) == 1


def test_puct_skips_illegal_edges_and_uses_prior_on_first_visit():
    # no visits: U uses sqrt(max(sum N, 1)) so the largest legal prior wins; a0 is illegal
    t = tree_with_root([0, 0, 0], [0.0, 0.0, 0.0], [-1.0, 0.3, 0.7])
    assert puct_select(t, 0, 0, 1.5, 0.25) == 2


def test_fpu_reduction_value_changes_choice():
    # a0 visited with Q = 0.2; a1 unvisited. U(a0) = 1*0.5*1/2 = 0.25 -> 0.45
    # fpu 0.0: Q(a1) = 0.3 -> 0.3 + 0.5 = 0.8 wins; fpu 0.9: -0.6 + 0.5 = -0.1 loses
    t = tree_with_root([1, 0], [0.2, 0.0], [0.5, 0.5], value=0.3)
    assert puct_select(t, 0, 0, 1.0, 0.0) == 1
    assert puct_select(t, 0, 0, 1.0, 0.9) == 0


def test_the_kernels_and_python_share_the_trees_arrays_which_cannot_be_replaced():
    t = tree_with_root([0, 0, 0], [0.0, 0.0, 0.0], [0.2, 0.5, 0.3])
    t.advance(0, 1)  # a kernel: the root has no child there, so the slot's tree is reset
    assert not t.expanded[0, 0] and t.num_nodes[0] == 1
    t.P[0, 0] = [0.1, 0.1, 0.8]  # written through Python, read by the kernel
    t.expanded[0, 0] = True
    assert puct_select(t, 0, 0, 1.0, 0.0) == 2
    with pytest.raises(AttributeError):
        t.N = np.zeros_like(t.N)  # the kernels would go on reading the old array


class FixedEvaluator:
    """Priors and values that depend only on the leaf's planes (row by row), like a network would."""

    needs_planes = True

    def __init__(self, num_actions, seed=3):
        self.calls = []
        self.weights = None
        self.seed = seed
        self.num_actions = num_actions

    def evaluate(self, game, batch, slots, paths, depth, inputs):
        flat = inputs.planes.reshape(len(slots), -1).astype(np.float64)
        if self.weights is None:
            rng = np.random.default_rng(self.seed)
            self.weights = rng.normal(size=(flat.shape[1], self.num_actions))
            self.vweights = rng.normal(size=flat.shape[1])
        self.calls.append(len(slots))
        logits = flat @ self.weights
        return masked_softmax(logits, inputs.legal), np.tanh(flat @ self.vweights * 0.1).astype(np.float32)


def test_backup_alternates_sign_along_the_path():
    game = GomokuGame(4, 4, 3)
    batch = game.new_batch(1)

    class Const:
        needs_planes = False

        def evaluate(self, game, batch, slots, paths, depth, inputs):
            legal = inputs.legal.astype(np.float32)
            return legal / legal.sum(1, keepdims=True), np.full(len(slots), 0.5, np.float32)

    search = Search(game, Const(), 1, SearchConfig(visits=3, c_puct=1.0))
    search.run(batch, np.array([0]))
    t = search.tree
    # first simulation expands the root; each next one expands a child whose value 0.5 is
    # for the side to move there, so the root player's edge gets -0.5
    assert t.root_visits(np.array([0]))[0] == 3
    visited = np.flatnonzero(t.N[0, 0])
    assert np.allclose(t.W[0, 0, visited] / t.N[0, 0, visited], -0.5)
    assert np.allclose(t.W2[0, 0, visited] / t.N[0, 0, visited], 0.25)  # the squares: no variance


def test_root_visits_reach_target_and_tree_stays_within_its_arrays():
    game = GomokuGame(6, 6, 4)
    batch = game.new_batch(2)
    search = Search(game, UniformEvaluator(), 2, SearchConfig(visits=50))
    search.run(batch, np.array([0, 1]))
    assert list(search.tree.root_visits(np.array([0, 1]))) == [50, 50]
    assert search.tree.num_nodes.max() <= search.tree.max_nodes


@pytest.mark.parametrize("board,expected", [
    # X to move wins at D5 (row of four, diagonal, column)
    ("""
     . . . . . .
     . X X X . .
     . . . . . .
     . O O . . .
     . O . . . .
     . . . . . .
     """, {"E5", "A5"}),
    ("""
     . . . . . .
     . X . . . .
     . . X . . .
     . . . X . .
     O O O . . .
     . . . . . .
     """, {"E2", "A6"}),
])
def test_search_finds_one_move_win(board, expected):
    pos = GomokuPosition.from_ascii(board, k=4)
    assert pos.to_play == 1
    game, batch = pos.game, pos.batch
    search = Search(game, UniformEvaluator(), 1, SearchConfig(visits=400, fpu_reduction=0.0))
    search.run(batch, np.array([0]))
    best = int(search.tree.N[0, 0].argmax())
    assert game.action_to_text(best) in expected


@pytest.mark.parametrize("stdev_scale", [0.0, 0.85])  # the constant c_puct, KataGo's variance-scaled one
def test_search_finds_the_only_block(stdev_scale):
    # O threatens four at E2 only (A2 is taken by X); every other move loses at once
    board = """
     X . . . . .
     . . . . . .
     X . . . . .
     . . . . . .
     X O O O . .
     . . . . . .
     """
    pos = GomokuPosition.from_ascii(board, k=4, to_play=1)
    game, batch = pos.game, pos.batch
    # with equal priors the plain Q = 0 for unvisited moves lets every reply be tried
    search = Search(game, UniformEvaluator(), 1, SearchConfig(visits=1500, fpu_reduction=0.0,
                                                              c_puct_stdev_scale=stdev_scale))
    search.run(batch, np.array([0]))
    best = int(search.tree.N[0, 0].argmax())
    assert game.action_to_text(best) == "E2"


def _positions():
    openings = [[], ["C3"], ["C3", "D4"], ["A1", "F6", "B2"]]
    out = []
    for moves in openings:
        p = GomokuPosition.initial(6, 6, 4)
        for m in moves:
            p = p.play(m)
        out.append(p)
    return out


def _batched(positions):
    """(game, one batch holding the positions in slots 0, 1, ...)."""
    game = positions[0].game
    batch = game.new_batch(len(positions))
    for j, p in enumerate(positions):
        game.copy_slot(p.batch, 0, batch, j)
    return game, batch


def test_batched_and_single_searches_agree():
    positions = _positions()
    game, batch = _batched(positions)
    together = Search(game, FixedEvaluator(game.num_actions), len(positions), SearchConfig(visits=60))
    together.run(batch, np.arange(len(positions), dtype=np.int32))
    for j, p in enumerate(positions):
        alone = Search(game, FixedEvaluator(game.num_actions), 1, SearchConfig(visits=60))
        alone.run(p.batch, np.array([0], np.int32))
        np.testing.assert_array_equal(together.tree.N[j, 0], alone.tree.N[0, 0])
        np.testing.assert_allclose(together.tree.W[j, 0], alone.tree.W[0, 0], rtol=1e-6)
    # all four games were evaluated together, in one call per round
    assert max(together.evaluator.calls) == len(positions)


def test_tree_reuse_keeps_the_subtree_statistics():
    pos = _positions()[1]
    game = pos.game
    search = Search(game, FixedEvaluator(game.num_actions), 1, SearchConfig(visits=200))
    search.run(pos.batch, np.array([0]))
    t = search.tree
    a = int(t.N[0, 0].argmax())
    child = t.child[0, 0, a]
    child_edges = t.N[0, child].copy(), t.W[0, child].copy(), t.P[0, child].copy(), t.W2[0, child].copy()
    edge_visits = int(t.N[0, 0, a])
    t.advance(0, a)
    np.testing.assert_array_equal(t.N[0, 0], child_edges[0])
    np.testing.assert_array_equal(t.W[0, 0], child_edges[1])
    np.testing.assert_array_equal(t.P[0, 0], child_edges[2])
    np.testing.assert_array_equal(t.W2[0, 0], child_edges[3])
    # the child's first visit expanded it; every later one went through one of its edges
    assert t.root_visits(np.array([0]))[0] == edge_visits - 1
    assert t.num_nodes[0] <= edge_visits
    # the renumbered tree is consistent: each child's parent points back to it
    for node in range(t.num_nodes[0]):
        for act in np.flatnonzero(t.child[0, node] >= 0):
            c = t.child[0, node, act]
            assert t.parent[0, c] == node and t.action[0, c] == act
    # and searching on from it continues to the target
    new_pos = pos.play(a)
    search.run(new_pos.batch, np.array([0]))
    assert t.root_visits(np.array([0]))[0] == 200


def test_lcb_plays_the_edge_whose_bound_is_highest_among_those_with_enough_visits():
    # a0: 100 visits, Q 0.1, values 0.1 +- 0.5 (var 0.2525): bound 0.1 - 3 * sqrt(0.2525 / 100) = -0.051
    # a1: 40 visits, Q 0.3, every value 0.3: bound 0.3, played
    # a2: 5 visits, Q 0.9: under 0.1 of the most visited's visits, never played
    t = tree_with_root([100, 40, 5], [10.0, 12.0, 4.5], [0.4, 0.4, 0.2])
    t.W2[0, 0] = [100 * (0.01 + 0.25), 40 * 0.09, 5 * 0.81]
    slots = np.array([0])
    assert t.best_actions(slots)[0] == 0  # off: the most visited
    assert t.best_actions(slots, lcb_stdevs=3.0)[0] == 1
    assert t.best_actions(slots, lcb_stdevs=3.0, lcb_min_visit_share=0.5)[0] == 0  # a1 under half of a0's
    assert t.best_actions(slots, lcb_stdevs=3.0, lcb_min_visit_share=0.04)[0] == 2
    # a noisy a1 (values 0.3 +- 1) bounds below a0: 0.3 - 3 * sqrt((1.09 - 0.09) * 40 / 39 / 40) = -0.18
    t.W2[0, 0, 1] = 40 * (0.09 + 1.0)
    assert t.best_actions(slots, lcb_stdevs=3.0)[0] == 0


def test_a_player_with_lcb_plays_the_edge_with_the_highest_bound():
    pos = _positions()[1]
    game = pos.game
    config = SearchConfig(visits=200, lcb_stdevs=1.0, lcb_min_visit_share=0.05)
    player = search_player("lcb", FixedEvaluator(game.num_actions), config)
    batch = game.new_batch(1)
    game.copy_slot(pos.batch, 0, batch, 0)
    player.start(game, batch, 1)
    slots = np.array([0])
    choice = player.choose(slots, np.zeros(1, bool), [np.random.default_rng(0)])
    t = player.search.tree
    n, w, w2 = (x[0, 0].astype(np.float64) for x in (t.N, t.W, t.W2))
    eligible = (n >= 2) & (n >= 0.05 * n.max())
    q = w / np.maximum(n, 1)
    bound = np.where(eligible, q - np.sqrt(np.maximum(w2 - w * q, 0) / np.maximum(n - 1, 1) / np.maximum(n, 1)),
                     -np.inf)
    assert eligible.sum() >= 2
    assert choice.actions[0] == bound.argmax()
    assert np.all(w2 >= w * q - 1e-4)  # each edge's squares bound its mean's: a real variance


def test_dirichlet_noise_only_touches_legal_root_priors():
    t = tree_with_root([0, 0, 0, 0], [0, 0, 0, 0], [0.25, -1.0, 0.25, 0.5])
    rng = np.random.default_rng(0)
    add_dirichlet_noise(t, np.array([0]), [rng], 0.25, None)
    p = t.P[0, 0]
    assert p[1] == -1.0
    assert math.isclose(p[[0, 2, 3]].sum(), 1.0, rel_tol=1e-5)
    assert not np.allclose(p[[0, 2, 3]], [0.25, 0.25, 0.5])


def test_root_policy_temperature_raises_the_legal_priors_to_one_over_t_before_the_noise():
    priors = [0.25, -1.0, 0.25, 0.5]
    t = tree_with_root([0, 0, 0, 0], [0, 0, 0, 0], priors)
    add_dirichlet_noise(t, np.array([0]), [np.random.default_rng(0)], 0.0, None, temperature=2.0)
    root = np.sqrt([0.25, 0.25, 0.5])
    np.testing.assert_allclose(t.P[0, 0], [*(root / root.sum())[:1], -1.0, *(root / root.sum())[1:]], rtol=1e-6)
    cold = tree_with_root([0, 0, 0, 0], [0, 0, 0, 0], priors)
    add_dirichlet_noise(cold, np.array([0]), [np.random.default_rng(0)], 0.0, None, temperature=0.5)
    np.testing.assert_allclose(cold.P[0, 0, [0, 2, 3]], np.array([1, 1, 4]) / 6, rtol=1e-6)
    # with noise: the tempered priors mixed with the same draw the untempered ones get
    noisy, plain = (tree_with_root([0, 0, 0, 0], [0, 0, 0, 0], priors) for _ in range(2))
    add_dirichlet_noise(noisy, np.array([0]), [np.random.default_rng(7)], 0.25, None, temperature=2.0)
    add_dirichlet_noise(plain, np.array([0]), [np.random.default_rng(7)], 0.25, None)
    noise = (plain.P[0, 0, [0, 2, 3]] - 0.75 * np.array([0.25, 0.25, 0.5])) / 0.25
    np.testing.assert_allclose(noisy.P[0, 0, [0, 2, 3]], 0.75 * root / root.sum() + 0.25 * noise, atol=1e-6)
    assert tempered(np.array([0.0, 0.0]), 2.0).tolist() == [0.0, 0.0]
    assert tempered(np.array([0.0, 1.0]), 3.0).tolist() == [0.0, 1.0]


def test_a_noisy_search_with_a_root_policy_temperature_spreads_its_visits():
    positions = _positions()[:1]
    spread = {}
    for temperature in (1.0, 3.0):
        game, batch = _batched(positions)
        config = SearchConfig(visits=200, dirichlet_weight=0.25, dirichlet_alpha=0.3,
                              root_policy_temperature=temperature)
        search = Search(game, FixedEvaluator(game.num_actions), 1, config)
        search.run(batch, np.array([0], np.int32), noise_rngs=[np.random.default_rng(5)])
        visits = search.tree.N[0, 0].astype(np.float64)
        assert visits.sum() == 200
        p = visits / visits.sum()
        spread[temperature] = -(p[p > 0] * np.log(p[p > 0])).sum()  # the entropy of the visit distribution
    assert spread[3.0] > spread[1.0] + 0.1


def test_network_evaluator_symmetry_is_consistent():
    """Evaluating under a random symmetry maps the policy back: a symmetric net gives identical priors."""
    import torch

    from zero.network import NetConfig, ZeroNet

    game = GomokuGame(6, 6, 4)
    torch.manual_seed(0)
    net = ZeroNet(NetConfig(4, 6, 6, 36, 1, 8))
    pos = GomokuPosition.initial(6, 6, 4).play("C3").play("D5")
    inputs = game.leaf_inputs(pos.batch, np.zeros(8, np.int32), np.zeros((8, 1), np.int32), np.zeros(8, np.int32))
    plain = NetworkEvaluator(net, None)
    sym = NetworkEvaluator(net, game.symmetries(), seed=1)
    p0, v0 = plain.evaluate(game, pos.batch, None, None, None, inputs)
    p1, v1 = sym.evaluate(game, pos.batch, None, None, None, inputs)
    # the same position under 8 random symmetries: each row is the net's view of a rotated board,
    # mapped back; rows under the identity equal the plain evaluation
    perms = game.symmetries()
    assert p1.shape == p0.shape
    assert np.allclose(p1.sum(1), 1, atol=1e-5)
    # check directly: evaluating the explicitly transformed planes and un-transforming gives p1's rows
    rng = np.random.default_rng(1)
    chosen = rng.integers(len(perms), size=8)
    flat = inputs.planes.reshape(8, 4, 36)
    for r, s in enumerate(chosen):
        transformed = np.empty_like(flat[r])
        transformed[:, perms[s]] = flat[r]
        logits, value = plain.forward(transformed.reshape(1, 4, 6, 6))
        expect = masked_softmax(logits[:, perms[s]], inputs.legal[r : r + 1])
        np.testing.assert_allclose(p1[r], expect[0], atol=1e-5)
        assert abs(v1[r] - value[0]) < 1e-5


class AsyncFixedEvaluator(FixedEvaluator):
    """FixedEvaluator with the submit/collect interface of a GPU evaluator; logs the order of calls."""

    def __init__(self, num_actions, seed=3):
        super().__init__(num_actions, seed)
        self.log = []

    def submit(self, game, batch, slots, paths, depth, inputs):
        self.log.append(("submit", int(slots[0])))
        return int(slots[0]), self.evaluate(game, batch, slots, paths.copy(), depth.copy(), inputs)

    def collect(self, handle):
        self.log.append(("collect", handle[0]))
        return handle[1]


def test_grouped_search_overlaps_the_groups_and_builds_the_trees_of_separate_searches():
    positions = _positions()
    game, batch = _batched(positions)
    config = SearchConfig(visits=40, dirichlet_weight=0.25, dirichlet_alpha=0.3)
    groups = [np.array([0, 1], np.int32), np.array([2, 3], np.int32)]

    def noise():
        return [np.random.default_rng(100 + j) for j in range(2)]

    grouped = Search(game, AsyncFixedEvaluator(game.num_actions), len(positions), config)
    grouped.run_groups(batch, [(groups[0], noise(), np.array([40, 25])), (groups[1], noise(), None)])
    apart = Search(game, FixedEvaluator(game.num_actions), len(positions), config)
    apart.run(batch, groups[0], noise_rngs=noise(), visits=np.array([40, 25]))
    apart.run(batch, groups[1], noise_rngs=noise())
    for name in ("N", "W", "P", "child", "num_nodes"):
        np.testing.assert_array_equal(getattr(grouped.tree, name), getattr(apart.tree, name), err_msg=name)
    assert list(grouped.tree.root_visits(np.arange(4, dtype=np.int32))) == [40, 25, 40, 40]
    log = grouped.evaluator.log
    # both groups' calls are in flight before the first result is taken, and stay so in turn
    assert log[:4] == [("submit", 0), ("submit", 2), ("collect", 0), ("submit", 0)]
    assert grouped.evaluations == apart.evaluations


def test_a_player_in_groups_plays_the_same_games_as_one_search():
    from zero.arena import ArenaRules, MCTSPlayer, play_arena

    game = GomokuGame(6, 6, 4)
    rules = ArenaRules(sample_moves=3, record=True)

    def play(groups):
        ev = AsyncFixedEvaluator(game.num_actions)
        p = MCTSPlayer("p", ev, SearchConfig(visits=16, dirichlet_weight=0.25, dirichlet_alpha=0.3,
                                             forced_playouts_k=2.0), noise=True, playout_cap=(0.5, 4),
                       groups=groups)
        return play_arena(game, p, p, 6, seed=4, concurrent=6, rules=rules).records, ev

    one, ev1 = play(1)
    three, ev3 = play(3)
    assert [r.moves for r in one] == [r.moves for r in three]
    for a, b in zip(one, three):
        np.testing.assert_array_equal(np.array(a.policies), np.array(b.policies))
    assert not any(kind == "submit" for kind, _ in ev1.log)  # one group: evaluate, not submit/collect
    assert sum(kind == "submit" for kind, _ in ev3.log) > 0


def test_network_evaluator_submit_and_collect_give_evaluate_s_answer():
    import torch

    from zero.config import load_params
    from zero.network import init_network

    params = load_params(None, ["game.name=gomoku", "game.height=6", "game.width=6", "game.k=4",
                                "network.size=b1c8"])
    game = GomokuGame(6, 6, 4)
    net = init_network(params, game, seed=1)
    _, batch = _batched(_positions())
    slots = np.arange(4, dtype=np.int32)
    zeros = np.zeros((4, 1), np.int32)
    inputs = game.leaf_inputs(batch, slots, zeros, np.zeros(4, np.int32))
    a = NetworkEvaluator(net, game.symmetries(), seed=5)
    b = NetworkEvaluator(net, game.symmetries(), seed=5, half=True)  # half is CUDA's (cpu_bf16 is the CPU's)
    first, second = b.submit(game, batch, slots, zeros, zeros[:, 0], inputs), None
    second = b.submit(game, batch, slots, zeros, zeros[:, 0], inputs)
    for handle in (first, second):
        pb, vb = b.collect(handle)
        pa, va = a.evaluate(game, batch, slots, zeros, zeros[:, 0], inputs)
        np.testing.assert_array_equal(pa, pb)
        np.testing.assert_array_equal(va, vb)
    assert b.nn_calls == 2 and b.nn_positions == 8 and b.nn_seconds > 0
    assert not b.half and torch.get_default_dtype() == torch.float32


def test_tree_and_board_work_on_several_threads_gives_the_one_thread_trees():
    import numba

    from zero.games.go import GoGame

    if numba.config.NUMBA_NUM_THREADS < 2:  # one core here: numba's pool was made with one thread
        import os
        import subprocess
        import sys

        name = "test_tree_and_board_work_on_several_threads_gives_the_one_thread_trees"
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"{__file__}::{name}"],
                              env={**os.environ, "NUMBA_NUM_THREADS": "2"}, capture_output=True, text=True)
        assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-3000:]
        return
    game = GoGame(9)
    rng = np.random.default_rng(0)
    batch = game.new_batch(96)
    for s in range(96):  # 96 different positions, a few random moves each
        for _ in range(int(rng.integers(0, 12))):
            legal = np.flatnonzero(game.legal_mask(batch, s))
            game.play(batch, s, int(rng.choice(legal[legal != game.num_actions - 1])))
    slots = np.arange(96, dtype=np.int32)
    config = SearchConfig(visits=24)
    trees = []
    before = numba.get_num_threads()
    try:
        for threads in (1, 2):
            numba.set_num_threads(threads)
            search = Search(game, FixedEvaluator(game.num_actions), 96, config)
            search.run(batch, slots)
            trees.append(search.tree)
    finally:
        numba.set_num_threads(before)
    for name in ("N", "W", "P", "child", "parent", "num_nodes", "terminal"):
        np.testing.assert_array_equal(getattr(trees[0], name), getattr(trees[1], name), err_msg=name)
    assert trees[0].root_visits(slots).min() == 24
