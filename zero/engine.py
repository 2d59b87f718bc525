"""A single-game engine for GTP and terminal play: a network plus search, one position at a time.

The engine keeps its search tree between moves: a search from a position
that follows the one searched last (the moves played since appended to it)
starts from the subtree of those moves, as in the paper. A search stops at
`visits` root visits (a reused subtree counts), at a time budget in seconds,
or when asked to, whichever comes first.

For Go the engine also has a view of the end of the game: `ownership` plays
the position out many times with uniformly random moves that never fill a
one-point eye of the mover's own (the rollout policy of the `mcts:N` player)
and averages who owns each point by Tromp-Taylor area at the end; a chain of
stones whose points end up more often in the opponent's area than in its
own is dead (`dead_stones`). Monte-Carlo ownership of this kind is how
rollout engines such as Fuego and Pachi answer `final_status_list`; it is
independent of the network, so it means the same for every checkpoint.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass
from typing import Callable

import numba
import numpy as np

from zero.config import GameConfig, NetworkConfig, Params, SearchConfig, usable_cores
from zero.evaluator import NetworkEvaluator
from zero.games import go_kernels as K
from zero.games import make_game
from zero.games.go import chains, liberties
from zero.mcts import Search
from zero.network import CheckpointError, init_network, load_checkpoint, pick_device, search_network, set_threads

LCB_Z = 1.96  # the lower confidence bound of a move's winrate is a 95% Wilson bound
PV_MOVES = 40  # longest principal variation reported for a move


@dataclass
class MoveInfo:
    """What the search thinks of one root move (the fields of Leela Zero's `lz-analyze`)."""

    action: int
    visits: int
    winrate: float  # in [0, 1], for the side to move: (Q + 1) / 2
    prior: float  # the network's P
    lcb: float  # Wilson lower bound of winrate over `visits` visits
    pv: list[int]  # the move, then the most visited reply at each level below it


@dataclass(frozen=True)
class EngineConfig:
    """What an engine needs: the rules, the search (its visits are the most a move ever gets), where to run."""

    game: GameConfig
    search: SearchConfig
    symmetries: bool = True  # evaluate each leaf in a random board symmetry
    device: str = "auto"
    resign_threshold: float = -0.9  # genmove resigns below this value (side to move's view)...
    # ... only from this move of the game on (None: half the board's points, 40 on 9x9), and only once
    # its searches have seen the value below the threshold on this many of its moves in a row.
    resign_min_move: int | None = None
    resign_moves: int = 3
    fast_inference: bool = False  # zero.inference's evaluation (gate.fast_inference)
    cpu_bf16: bool = False  # with it, the network in bfloat16 on the CPU (gate.cpu_bf16)
    score_utility: float = 0.0  # mcts.score_utility: the search's utility mixes in the score head
    score_utility_scale: float = 10.0
    network: NetworkConfig = NetworkConfig()  # the shape of a freshly initialised network (no checkpoint)

    @classmethod
    def from_params(cls, params: Params, visits: int | None = None) -> "EngineConfig":
        """The engine of a params file: its game and search, `gate.visits` unless `visits` is given."""
        return cls(game=params.game, search=params.mcts.search(visits or params.gate.visits),
                   symmetries=params.mcts.symmetries, device=params.gate.device,
                   resign_threshold=params.selfplay.resign_threshold, network=params.network,
                   fast_inference=params.gate.fast_inference, cpu_bf16=params.gate.cpu_bf16,
                   score_utility=params.mcts.score_utility, score_utility_scale=params.mcts.score_utility_scale)


class Engine:
    """Chooses moves for positions of a game.

    Args:
        config: the game, the search and the device (EngineConfig.from_params builds it from a params file).
        checkpoint: a network checkpoint, or None for a freshly initialised network.
        seed: seeds the fresh network, the symmetry draws and the ownership playouts.
        playouts: random playouts behind each ownership estimate (Go).

    With mcts.leaf_batches_in_flight F > 1 (and a leaf batch) on the CPU, the engine's network calls run on
    F worker threads and it sets torch's and numba's threads to this process's cores divided by F.
    """

    def __init__(self, config: EngineConfig, checkpoint: str | None = None, seed: int = 0, playouts: int = 256):
        self.config = config
        self.checkpoint = checkpoint
        self.visits = config.search.visits
        self.seed = seed
        self.playouts = playouts
        self.device = pick_device(config.device)
        self._net = None
        if checkpoint is not None:
            self._net, _ = load_checkpoint(checkpoint, self.device)
        self._configure(config.game)

    def _configure(self, game_config: GameConfig) -> None:
        game = make_game(game_config)
        net = self._net
        if self.checkpoint is None:
            net = init_network(Params(game=game_config, network=self.config.network), game, self.seed)
            net = net.to(self.device)
        c = net.config
        if (c.height, c.width, c.num_actions, c.in_planes) != (
            game.height, game.width, game.num_actions, game.num_planes
        ):
            raise CheckpointError(
                f"{self.checkpoint}: the network is for a {c.height}x{c.width} board, "
                f"not {game.height}x{game.width}"
            )
        self.game, self.game_config, self._net = game, game_config, net
        sym = game.symmetries() if self.config.symmetries else None
        searched = search_network(net, self.config.score_utility, self.config.score_utility_scale)
        flight = self.config.search.leaf_batches_in_flight if self.config.search.leaf_batch > 1 else 1
        if flight > 1 and self.device.type == "cpu":  # each batch in flight on its own share of the cores
            set_threads(max(1, usable_cores() // flight))
        self.evaluator = NetworkEvaluator(searched, sym, self.seed, self.device, fast=self.config.fast_inference,
                                          cpu_workers=flight, cpu_bf16=self.config.cpu_bf16)
        self._low = (0, 0)  # (moves of the last genmove's position, own moves in a row below resign_threshold)
        self._search: Search | None = None  # built for the game of the positions searched
        self._root: tuple[tuple[int, ...], np.ndarray] | None = None  # (moves, hashes) at the tree's root

    def set_board(self, **game_fields) -> None:
        """Change the board (e.g. size=13, komi=6.5); CheckpointError if the network cannot play it."""
        self._configure(self.game_config.model_copy(update=game_fields))

    def forget(self) -> None:
        """Drop the search tree: the next search starts from a fresh one (no reuse)."""
        self._search, self._root = None, None

    # --- search ----------------------------------------------------------------
    def _fit(self, position) -> None:
        """Make the network fit the position's board (Go: another size), or raise ValueError."""
        if (position.height, position.width) == (self.game.height, self.game.width):
            return
        if self.game.name != "go":
            raise ValueError(f"the engine plays {self.game.height}x{self.game.width}, "
                             f"not {position.height}x{position.width}")
        self.set_board(size=position.size, komi=position.komi)

    def _tree_for(self, position) -> Search:
        """The search with its root at `position`: the last tree advanced along the moves since, or a new one."""
        s = self._search
        if s is None or s.game is not position.game:
            s = self._search = Search(position.game, self.evaluator, 1, self.config.search)
            self._root = None
        moves = tuple(position.moves)
        hashes = _hashes(position)
        root = self._root
        if (root is not None and moves[: len(root[0])] == root[0] and len(hashes) >= len(root[1])
                and np.array_equal(hashes[: len(root[1])], root[1])):
            for a in moves[len(root[0]):]:
                s.tree.advance(0, a)
        else:
            s.tree.reset(0)
        if not np.isnan(s.tree.terminal[0, 0]):  # e.g. two passes, which end nothing on a GTP board
            s.tree.reset(0)
        self._root = (moves, hashes)
        return s

    def think(self, position, seconds: float | None = None, stop: Callable[[], bool] | None = None) -> Search:
        """Search `position` until its root has `visits` visits, `seconds` have passed, or `stop()` is true.

        At least one visit is always made, so there is always a move to choose.
        Returns the search, its tree rooted at `position`.
        """
        self._fit(position)
        s = self._tree_for(position)
        deadline = None if seconds is None else time.monotonic() + max(0.0, seconds)

        def halt() -> bool:  # asked between rounds, once the root is expanded (there is a move)
            return (deadline is not None and time.monotonic() >= deadline) or (stop is not None and stop())

        s.visits = self.visits
        s.run(position.batch, np.zeros(1, np.int32), stop=None if seconds is None and stop is None else halt)
        return s

    def analyse(self, position, seconds: float | None = None) -> tuple[np.ndarray, float]:
        """Search `position`: (visit distribution [A], root value for the side to move)."""
        s = self.think(position, seconds)
        slots = np.zeros(1, np.int32)
        root_v, best_q = s.tree.root_values(slots)
        return s.tree.root_policy(slots)[0], float(max(root_v[0], best_q[0]))

    def genmove(self, position, seconds: float | None = None, resign: bool = True) -> int | None:
        """The action for the side to move in `position` (the most visited, or with `mcts.lcb_stdevs` the
        search's lower-confidence-bound choice), or None to resign.

        Never in the opening (before `resign_min_move`), and only on a value that the searches of
        `resign_moves` own moves in a row put below `resign_threshold`.
        """
        policy, value = self.analyse(position, seconds)
        if resign and self._resigns(position, value):
            return None
        if not policy.any():  # a finished game: nothing was searched
            return self.game.pass_action if self.game.pass_action >= 0 else None
        c = self.config.search
        if c.lcb_stdevs <= 0:
            return int(policy.argmax())
        return int(self._search.tree.best_actions(np.zeros(1, np.int32), c.lcb_stdevs, c.lcb_min_visit_share)[0])

    def _resigns(self, position, value: float) -> bool:
        """Count this move toward a resignation: True once the confirmed-loss rule holds."""
        moves = len(position.moves)
        if moves < self._low[0]:  # an earlier move: a new game or an undo
            self._low = (0, 0)
        low = self._low[1] + 1 if value < self.config.resign_threshold else 0
        self._low = (moves, low)
        first = self.config.resign_min_move
        if first is None:
            first = position.height * position.width // 2
        return moves >= first and low >= max(1, self.config.resign_moves)

    def candidates(self, position) -> list[MoveInfo]:
        """The root moves searched so far from `position`, most visited first (ties: higher winrate)."""
        t = self._tree_for(position).tree
        found = []
        for a in np.flatnonzero(t.N[0, 0] > 0):
            n = int(t.N[0, 0, a])
            winrate = (float(t.W[0, 0, a]) / n + 1.0) / 2.0
            found.append(MoveInfo(int(a), n, winrate, float(t.P[0, 0, a]), _wilson_lower(winrate, n),
                                  _principal_variation(t, int(a))))
        found.sort(key=lambda m: (-m.visits, -m.winrate, m.action))
        return found

    # --- the end of a Go game ------------------------------------------------------
    def ownership(self, position) -> np.ndarray:
        """[N*N] float32 in [-1, 1]: the mean Tromp-Taylor owner of each point after random playouts.

        +1 is black, -1 white; the playouts start from `position` with its side
        to move, check positional superko against the whole game, never fill
        a one-point eye of the mover's own, and end at two passes.
        """
        playouts = self.playouts
        size = position.size
        nbrs, diags, zobrist = _tables(size)
        length = int(position.batch.length[0])
        board = position.batch.history[0, length].copy()
        total = np.zeros(size * size, np.float64)
        rng = K.rng_state(self.seed * 1_000_003 + length)
        _playout_ownership(board, np.int8(position.to_play), _hashes(position), playouts, 4 * size * size,
                           rng, zobrist, nbrs, diags, total)
        return (total / playouts).astype(np.float32)

    def dead_stones(self, position, ownership: np.ndarray | None = None) -> list[int]:
        """Points of the stones in chains that end up more often in the opponent's area than in their own."""
        own = self.ownership(position) if ownership is None else ownership
        board = position.board.reshape(-1)
        dead = []
        for chain in chains(board, position.size):
            if own[chain].mean() * board[chain[0]] < 0:
                dead += chain
        return sorted(dead)

    def cleanup_move(self, position, seconds: float | None = None) -> int:
        """A move that never passes while opponent stones the engine considers dead are on the board.

        The searched move unless it is a pass; then, if dead opponent chains
        remain, a legal move on one of their liberties: one that captures
        first, then one whose stone is not left in atari, then the chain with
        the fewest liberties, then the point the engine owns most surely.
        Never resigns.
        """
        pass_action = position.size * position.size
        action = self.genmove(position, seconds, resign=False)
        if action != pass_action:
            return action
        me = position.to_play
        own = self.ownership(position)
        board = position.board.reshape(-1)
        size = position.size
        legal = set(position.legal_actions())
        best, best_key = pass_action, None
        for chain in chains(board, size):
            if board[chain[0]] != -me or own[chain].mean() * board[chain[0]] >= 0:
                continue
            libs = liberties(board, size, chain)
            for p in libs:
                if p not in legal:
                    continue
                after = position.play(p).board.reshape(-1)
                captures = int(((board == -me) & (after == 0)).sum())
                mine = next(c for c in chains(after, size) if p in c)
                key = (captures > 0, len(liberties(after, size, mine)) >= 2, -len(libs), float(own[p]) * me, -p)
                if best_key is None or key > best_key:
                    best, best_key = p, key
        return best


def _hashes(position) -> np.ndarray:
    """uint64 [t+1]: the Zobrist hash of every position of the game so far (Go); empty for other games."""
    batch = position.batch
    if not hasattr(batch, "hashes"):
        return np.zeros(0, np.uint64)
    return batch.hashes[0, : int(batch.length[0]) + 1].copy()


def _wilson_lower(p: float, n: int, z: float = LCB_Z) -> float:
    """The lower end of the Wilson score interval for a rate p observed over n trials.

    Written out rather than scipy's `BinomTestResult.proportion_ci(method="wilson")`: a move's winrate is the
    mean of its visits' values, a fraction rather than a count of wins, and this runs for every move listed in
    each lz-analyze report."""
    if n <= 0:
        return 0.0
    z2 = z * z
    centre = p + z2 / (2 * n)
    spread = z * math.sqrt(max(p * (1 - p), 0.0) / n + z2 / (4 * n * n))
    return max(0.0, (centre - spread) / (1 + z2 / n))


def _principal_variation(tree, action: int) -> list[int]:
    pv = [action]
    node = int(tree.child[0, 0, action])
    while node >= 0 and len(pv) < PV_MOVES:
        n = tree.N[0, node]
        if n.max() <= 0:
            break
        a = int(n.argmax())
        pv.append(a)
        node = int(tree.child[0, node, a])
    return pv


@functools.lru_cache(maxsize=None)
def _tables(size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(neighbours, diagonals, Zobrist keys) of a board size, the same tables GoGame uses."""
    nbrs, diags = K.neighbour_tables(size)
    return nbrs, diags, K.zobrist_table(size)


# Cached like the kernels it calls (compiling takes seconds); the cache's directory changes with the
# go_kernels rules it inlines (zero/__init__.py), so a change there compiles it again.
@numba.njit(cache=True)
def _playout_ownership(board0, colour0, hashes, playouts, max_moves, rng, zobrist, nbrs, diags, total):
    """Add the Tromp-Taylor owner of every point (+1 black, -1 white, 0 neither) after each playout to total."""
    nn = board0.shape[0]
    n_hist = hashes.shape[0]
    hist = np.empty(n_hist + max_moves + 1, np.uint64)
    hist[:n_hist] = hashes
    board = np.empty(nn, np.int8)
    cand = np.empty(nn, np.int32)
    buf = np.empty(nn, np.int32)
    mark = np.zeros(nn, np.int64)
    gen = np.zeros(1, np.int64)
    for _ in range(playouts):
        board[:] = board0
        c = colour0
        h = hashes[n_hist - 1]
        t = n_hist
        passes = 0
        while passes < 2 and t < n_hist + max_moves:
            p, h = K.random_move(board, c, h, zobrist, nbrs, diags, hist, t, True, rng, cand, buf, mark, gen)
            passes = passes + 1 if p < 0 else 0
            hist[t] = h
            t += 1
            c = -c
        # area: a stone is its colour's; an empty region is the colour it alone reaches
        gen[0] += 1
        g = gen[0]
        for p in range(nn):
            v = board[p]
            if v != 0:
                total[p] += v
                continue
            if mark[p] == g:
                continue
            end, reach = K.empty_region(board, nbrs, p, buf, mark, g)
            owner = 1 if reach == 1 else (-1 if reach == 2 else 0)
            if owner != 0:
                for j in range(end):
                    total[buf[j]] += owner
