"""The arena: many games at once between two players, the one game loop of self-play and matches.

A player owns the moves of one colour in each game (in self-play one player
owns both). Every slot of a game batch plays one game at a time; when a game
ends the slot starts the next until all are played. Game `index` has its own
seed (derived from the arena's seed and the index) for the moves sampled in
proportion to the search's visits (temperature 1) during its first
`sample_moves` moves, for root noise, and, in self-play, for whether it is
played out without resignation (the calibration share). Player a is black in
even-numbered games and white in odd ones.

Self-play is `play_arena(player, player, record=True)`: positions are kept
with their search policy as training targets. A match is two players, the
first `opening_moves` moves sampled, optionally from fixed openings, and
optionally stopped once a sequential gate is decided (zero.match).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, NamedTuple

import numpy as np

from zero.config import GameConfig, SearchConfig
from zero.games import Game
from zero.games.base import central_points
from zero.mcts import Search, pruned_policy
from zero.notation import result_text
from zero.shards import pack_planes


@dataclass
class GameRecord:
    """One game: its moves, how it ended and, in self-play, its positions' training targets."""

    index: int
    seed: int
    no_resign: bool
    planes: list = field(default_factory=list)  # packed planes of each recorded position
    policies: list = field(default_factory=list)  # [A] float32 visit distribution of each recorded position
    to_play: list = field(default_factory=list)  # +1/-1 side to move at each recorded position
    moves: list = field(default_factory=list)
    result: int = 0  # black's view
    resigned: bool = False
    score: float = 0.0  # Go: Tromp-Taylor score when played out
    resign_value: list = field(default_factory=lambda: [1.0, 1.0])  # lowest resign statistic, black / white
    root_values: list = field(default_factory=list)  # the search's root value of each recorded position (Choice.value)
    final_board: np.ndarray | None = None  # Go, with ArenaRules.final_board: the board a played-out game ended on
    decided_at: int = -1  # with ArenaRules.play_out_decided: the move at which the side to move would have resigned

    def result_text(self) -> str:
        """SGF RE value: `B+R`, `W+3.5`, `0`, `B+` (Gomoku)."""
        return result_text(self.result, self.score, self.resigned)


class Choice(NamedTuple):
    """A player's moves for a set of slots."""

    actions: np.ndarray  # [L] int
    resign: np.ndarray  # [L] float: resign statistic (below the arena's threshold: the mover resigns)
    policy: np.ndarray | None = None  # [L, A] float32 search policy, the training target in self-play
    record: np.ndarray | None = None  # [L] bool: positions to keep as training targets (None: all)
    done: np.ndarray | None = None  # [L] bool: slots whose search has ended and that move now (None: all)
    value: np.ndarray | None = None  # [L] float32: the search's root value by the value head, mover's view
    #                                  (Tree.root_head_values), the q of a q/z value target (None: no search)


def game_seed(seed: int, index: int) -> int:
    """The seed of game `index` of an arena seeded `seed`."""
    return int(np.random.SeedSequence([seed, index]).generate_state(1, np.uint32)[0])


def choose_moves(policy: np.ndarray, sample: np.ndarray, rngs: list, best: np.ndarray | None = None) -> np.ndarray:
    """Sample ∝ visits (temperature 1) where `sample`, else `best` (the search's choice, Tree.best_actions),
    or without it the most visited action."""
    actions = policy.argmax(axis=1) if best is None else np.array(best, np.int64)
    for i in np.flatnonzero(sample):
        p = policy[i].astype(np.float64)
        actions[i] = rngs[i].choice(len(p), p=p / p.sum())
    return actions


def sgf_records(records: list[GameRecord], g: GameConfig, event: str = "self-play",
                players: tuple[str, str] | None = None) -> list[str]:
    """The SGF record of each game, in index order; `event` names the games in their comment.

    players: the names of a match's players a and b (PB/PW follow the colours: a is black in even-numbered
    games); without them both colours are `zero`, as in self-play.
    """
    from zero.sgf import game_to_sgf

    size = {"size": g.size, "komi": g.komi} if g.name == "go" else {"height": g.height, "width": g.width}
    texts = []
    for rec in sorted(records, key=lambda r: r.index):
        names = {}
        if players is not None:
            black, white = players if rec.index % 2 == 0 else players[::-1]
            names = {"black": black, "white": white}
        texts.append(game_to_sgf(rec.moves, game=g.name, result=rec.result_text(),
                                 comment=f"zero {event}, seed {rec.seed}", **size, **names))
    return texts


def write_sgf_collection(records: list[GameRecord], g: GameConfig, path: str | Path, event: str = "match",
                         players: tuple[str, str] | None = None) -> Path:
    """Games (a match's, a self-play shard's) as one gzip-compressed SGF collection `path` (`<name>.sgf.gz`),
    in index order, written atomically; see sgf_records."""
    from zero.sgf import write_collection

    return write_collection(path, sgf_records(records, g, event, players))


class RandomPlayer:
    """Uniformly random legal moves."""

    def __init__(self, seed: int = 0):
        self.name = "random"
        self._rng = np.random.default_rng(seed)

    def start(self, game: Game, batch, slots_n: int) -> None:
        self.game, self.batch = game, batch

    def reset(self, slot: int) -> None:
        pass

    def observe(self, slot: int, action: int) -> None:
        pass

    def choose(self, slots: np.ndarray, sample: np.ndarray, rngs: list) -> Choice:
        actions = np.empty(len(slots), np.int64)
        for i, s in enumerate(slots):
            legal = np.flatnonzero(self.game.legal_mask(self.batch, int(s)))
            actions[i] = self._rng.choice(legal)
        return Choice(actions, np.zeros(len(slots), np.float32))


class MCTSPlayer:
    """Batched PUCT search with a given evaluator (a network, or random rollouts).

    Args:
        name: how results and SGF name the player.
        evaluator: the search's evaluator (zero.mcts.Search).
        config: visits, PUCT constants and root noise.
        noise: mix Dirichlet noise into every root (self-play), drawn from each game's generator;
            with config.forced_playouts_k > 0 the search also makes forced playouts, and the
            policy returned (the training target, and what temperature moves are sampled from)
            is the pruned one (zero.mcts.pruned_policy), so moves whose visits were forced are
            neither learned nor played for them; the most visited move is the same either way.
        reuse_tree: keep the subtree of the move played (the paper); else search each move afresh.
        decided_visits: the visits of every search in a game after `decide(slot)` (self-play's decided games,
            played out rather than resigned): no noise, not kept as a training target. 0: no game is decided.
        playout_cap: (full_share, fast_visits): playout cap randomization (Wu 2019, KataGo). Each
            move is a full search (config.visits, noise, kept as a training target) with
            probability full_share, drawn from the game's generator, else a fast one
            (fast_visits, no noise, not kept). None: every move is a full search.
        groups: the slots choosing at once are split into this many groups searched by
            Search.run_groups, one group's network call in flight while the next group's tree
            work runs (a GPU's evaluator); 1: one search over all of them.
        step_rounds: 0: `choose` searches every slot to its visits and all of them move (lockstep).
            N: `choose` runs N search rounds and only the slots whose searches reached their visits
            move (Choice.done); the others search on in the next call, so that a round's network call
            holds every game in progress even when searches differ in length (playout cap randomization).
    """

    def __init__(self, name: str, evaluator, config: SearchConfig, noise: bool = False, reuse_tree: bool = True,
                 playout_cap: tuple[float, int] | None = None, groups: int = 1, step_rounds: int = 0,
                 decided_visits: int = 0):
        self.name = name
        self.evaluator = evaluator
        self.config = config
        self.noise, self.reuse_tree, self.playout_cap = noise, reuse_tree, playout_cap
        self.groups = groups
        self.step_rounds = step_rounds
        self.decided_visits = decided_visits

    @property
    def evaluations(self) -> int:
        """Leaves sent to the evaluator so far (0 before the first game)."""
        return getattr(getattr(self, "search", None), "evaluations", 0)

    def start(self, game: Game, batch, slots_n: int) -> None:
        self.game, self.batch = game, batch
        self.search = Search(game, self.evaluator, slots_n, self.config)
        self._target = np.zeros(slots_n, np.int64)  # step_rounds: each slot's search in progress (0: none)
        self._full = np.ones(slots_n, bool)  # ... and whether it is a full search
        self._decided = np.zeros(slots_n, bool)  # games played out at decided_visits

    def reset(self, slot: int) -> None:
        self.search.tree.reset(slot)
        self._target[slot] = 0
        self._decided[slot] = False

    def decide(self, slot: int) -> None:
        """The game in `slot` is decided: its searches from the next on get decided_visits, no noise, no record."""
        if not self.decided_visits:
            raise ValueError(f"{self.name}: a game was decided, but the player has no decided_visits")
        self._decided[slot] = True

    @property
    def _caps(self) -> bool:
        """Whether searches differ in visits and record (playout cap randomization, decided games)."""
        return self.playout_cap is not None or self.decided_visits > 0

    def observe(self, slot: int, action: int) -> None:
        if self.reuse_tree:
            self.search.tree.advance(slot, action)
        else:
            self.search.tree.reset(slot)
        self._target[slot] = 0

    def choose(self, slots: np.ndarray, sample: np.ndarray, rngs: list) -> Choice:
        """Actions for the side to move in each slot, the resign statistic (max of root and best child value)."""
        if self.step_rounds:
            return self._step(slots, sample, rngs)
        noise = rngs if self.noise else None
        full = visits = None
        if self._caps:
            full, visits = self._draw_caps(slots, rngs)
            noise = None if noise is None else [r if f else None for r, f in zip(noise, full)]
        self._search(slots, noise, visits)
        return self._choice(slots, sample, rngs, full)

    def _draw_caps(self, slots: np.ndarray, rngs: list) -> tuple[np.ndarray, np.ndarray]:
        """Each new search's (full search?, visits): playout cap randomization's draw (every search full
        without it), then decided games' searches fast at decided_visits."""
        if self.playout_cap is not None:
            share, fast_visits = self.playout_cap
            full = np.array([rng.random() < share for rng in rngs], bool)
            visits = np.where(full, self.config.visits, fast_visits)
        else:
            full, visits = np.ones(len(rngs), bool), np.full(len(rngs), self.config.visits)
        decided = self._decided[slots]
        full[decided] = False
        visits[decided] = self.decided_visits
        return full, visits

    def _search(self, slots: np.ndarray, noise: list | None, visits: np.ndarray | None,
                max_rounds: int | None = None) -> None:
        if self.groups > 1 and len(slots) >= 2 * self.groups:
            parts = np.array_split(np.arange(len(slots)), self.groups)
            self.search.run_groups(self.batch, [
                (slots[p], None if noise is None else [noise[i] for i in p], None if visits is None else visits[p])
                for p in parts], max_rounds=max_rounds)
        else:
            self.search.run(self.batch, slots, noise_rngs=noise, visits=visits, max_rounds=max_rounds)

    def _choice(self, slots: np.ndarray, sample: np.ndarray, rngs: list, full: np.ndarray | None) -> Choice:
        if self.noise and self.config.forced_playouts_k > 0:
            policy = pruned_policy(self.search.tree, slots, self.config)
        else:
            policy = self.search.tree.root_policy(slots)
        root_v, best_q = self.search.tree.root_values(slots)
        c = self.config
        best = self.search.tree.best_actions(slots, c.lcb_stdevs, c.lcb_min_visit_share) if c.lcb_stdevs > 0 else None
        return Choice(choose_moves(policy, sample, rngs, best), np.maximum(root_v, best_q), policy, full,
                      value=self.search.tree.root_head_values(slots))

    def _step(self, slots: np.ndarray, sample: np.ndarray, rngs: list) -> Choice:
        """step_rounds rounds of the slots' searches, those that start here drawing their caps and noise;
        the Choice of the slots whose searches have ended (the others: done False, action -1)."""
        new = self._target[slots] == 0
        if new.any():
            idx = np.flatnonzero(new)
            full, visits = self._draw_caps(slots[idx], [rngs[i] for i in idx])
            self._full[slots[idx]], self._target[slots[idx]] = full, visits
        # noise once, when a search starts; a search going on keeps its root's noisy priors
        noise = [r if n and f else None for r, n, f in zip(rngs, new, self._full[slots])] if self.noise else None
        self._search(slots, noise, self._target[slots], max_rounds=self.step_rounds)
        done = self.search.tree.searched(slots, self._target[slots])
        L, A = len(slots), self.game.num_actions
        out = Choice(np.full(L, -1, np.int64), np.ones(L, np.float32), np.zeros((L, A), np.float32),
                     self._full[slots].copy() if self._caps else None, done, np.zeros(L, np.float32))
        idx = np.flatnonzero(done)
        if len(idx):
            part = self._choice(slots[idx], sample[idx], [rngs[i] for i in idx],
                                None if out.record is None else out.record[idx])
            out.actions[idx], out.resign[idx], out.policy[idx] = part.actions, part.resign, part.policy
            out.value[idx] = part.value
        return out


@dataclass(frozen=True)
class ArenaRules:
    """How the games of an arena are played.

    sample_moves: moves at the start of a game chosen ∝ visits (self-play's temperature
        moves, a match's opening moves); the rest take the most visited move.
    resign_threshold: a mover whose resign statistic falls below it resigns (-1: never).
    resign_min_move: ... but not before this move of the game.
    playout_share: self-play's share of games played out without resignation, drawn
        from each game's generator; None (matches) draws nothing.
    play_out_decided: self-play (one player with `decide`): a mover below the resign threshold does not
        resign; the game is decided (GameRecord.decided_at), the player's `decide(slot)` makes its further
        searches cheap and unrecorded, and the game ends on the board, its outcome counted.
    record: keep each position's planes and search policy (self-play's training targets).
    final_board: keep the board each played-out game ends on (Go's ownership and score targets).
    random_opening_moves: self-play's random openings: a game starts, with probability
        random_opening_share drawn from its generator, with this many stones on distinct random central
        points (zero.games.base.central_points), played before any player chooses (0: none, nothing drawn).
    """

    sample_moves: int = 0
    resign_threshold: float = -1.0
    resign_min_move: int = 0
    playout_share: float | None = None
    play_out_decided: bool = False
    record: bool = False
    final_board: bool = False
    random_opening_moves: int = 0
    random_opening_share: float = 1.0


@dataclass
class ArenaResult:
    """The records of the games played, in index order, and player a's score."""

    records: list[GameRecord]
    wins: int = 0
    losses: int = 0
    draws: int = 0


def play_arena(game: Game, a, b, num_games: int, seed: int, concurrent: int, rules: ArenaRules,
               first_index: int = 0, openings: list[list[int]] | None = None,
               stop: Callable[[int, int, int], bool] | None = None,
               progress: Callable[[int, int, int], None] | None = None,
               deadline: float | None = None, indices: list[int] | None = None,
               on_game: Callable[[GameRecord], None] | None = None) -> ArenaResult:
    """Play `num_games` games between players a and b (the same object in self-play), `concurrent` at a time.

    Args:
        first_index: index of the first game in a larger series (colours and seeds follow
            the global index, so parts of a match or of self-play compose).
        openings: fixed opening moves, one list per colour-swapped pair of games (game i
            starts with openings[(i // 2) % len(openings)], played before either player chooses).
        stop: called as stop(wins, losses, draws) of player a before each new game; true
            starts no more (a sequential gate whose outcome is certain).
        progress: called as progress(games_done, num_games, positions) as each game ends
            (positions: recorded positions with `rules.record`, else moves played).
        deadline: a time.perf_counter() value; past it, stop after the moves in progress
            and return the games as they stand (benchmarks).
        indices: the indices of the games to play, ascending, in place of first_index ... first_index +
            num_games - 1 (a match resumed with the games it had not finished); num_games is their count.
        on_game: called with each game's record as it ends (a ladder keeps it, so an interrupted pairing
            resumes with the games it finished).
    """
    if indices is not None:
        if any(b <= a for a, b in zip(indices, indices[1:])) or (indices and indices[0] < 0):
            raise ValueError(f"game indices must be ascending and non-negative: {indices[:10]}")
        num_games = len(indices)
        if num_games == 0:
            return ArenaResult(records=[])
    arena = _Arena(game, a, b, num_games, seed, max(1, min(concurrent, num_games)), rules, first_index,
                   openings, stop, progress, indices, on_game)
    try:
        for p in arena.players:
            p.start(game, arena.batch, arena.slots_n)
        for slot in range(arena.slots_n):
            arena.start(slot)
        while arena.round(deadline):
            pass
    finally:
        for p in arena.players:
            if hasattr(p, "close"):
                p.close()
    return arena.out


class _Arena:
    """The state of one play_arena call: the game batch, the record of each slot, the score."""

    def __init__(self, game, a, b, num_games, seed, slots_n, rules, first_index, openings, stop, progress,
                 indices=None, on_game=None):
        self.game, self.a, self.b = game, a, b
        self.indices, self.on_game = indices, on_game
        self.players = [a] if a is b else [a, b]
        self.num_games, self.seed, self.slots_n, self.rules = num_games, seed, slots_n, rules
        self.first_index, self.openings, self.stop, self.progress = first_index, openings, stop, progress
        self.batch = game.new_batch(slots_n)
        self.out = ArenaResult(records=[])
        self.slot_rec: list[GameRecord | None] = [None] * slots_n
        self.rngs: list = [None] * slots_n
        self.a_color = np.zeros(slots_n, np.int8)  # player a's colour in each slot's game
        self.positions = 0
        self._root_path = np.zeros((slots_n, 1), np.int32)
        self._central = central_points(game.height, game.width) if rules.random_opening_moves else None

    def decided(self) -> bool:
        o = self.out
        return self.stop is not None and self.stop(o.wins, o.losses, o.draws)

    def start(self, slot: int) -> None:
        """Start the next game in `slot`, or leave it idle when none is left to play."""
        if len(self.out.records) >= self.num_games or self.decided():
            self.slot_rec[slot] = None
            return
        n = len(self.out.records)
        index = self.indices[n] if self.indices is not None else self.first_index + n
        seed = game_seed(self.seed, index)
        rng = np.random.default_rng(seed)
        share = self.rules.playout_share
        rec = GameRecord(index=index, seed=seed, no_resign=share is not None and bool(rng.random() < share))
        self.out.records.append(rec)
        self.slot_rec[slot], self.rngs[slot] = rec, rng
        self.a_color[slot] = 1 if index % 2 == 0 else -1
        self.game.reset(self.batch, slot)
        for p in self.players:
            p.reset(slot)
        for act in self.openings[(index // 2) % len(self.openings)] if self.openings else ():
            self.play(slot, int(act))
        k = self.rules.random_opening_moves
        if k and rng.random() < self.rules.random_opening_share:
            points = self._central
            for act in rng.choice(points, size=min(k, len(points)), replace=False):
                self.play(slot, int(act))

    def play(self, slot: int, action: int) -> None:
        self.game.play(self.batch, slot, action)
        self.slot_rec[slot].moves.append(action)
        for p in self.players:
            p.observe(slot, action)

    def finish(self, slot: int) -> None:
        """Score the game in `slot` for player a, start the slot's next game, report progress."""
        rec, o = self.slot_rec[slot], self.out
        mine = int(rec.result) * int(self.a_color[slot])
        o.wins, o.losses, o.draws = o.wins + (mine > 0), o.losses + (mine < 0), o.draws + (mine == 0)
        self.positions += len(rec.planes) if self.rules.record else len(rec.moves)
        if self.on_game is not None:
            self.on_game(rec)
        self.start(slot)
        if self.progress is not None:
            self.progress(o.wins + o.losses + o.draws, self.num_games, self.positions)

    def round(self, deadline: float | None) -> bool:
        """One move in every game in progress; False once no game is left (or the deadline has passed)."""
        game, batch = self.game, self.batch
        active = np.array([s for s in range(self.slots_n) if self.slot_rec[s] is not None], np.int32)
        if len(active) == 0 or (deadline is not None and time.perf_counter() > deadline):
            return False
        if self.a is self.b:
            groups = [(self.a, active)]
        else:
            a_moves = np.array([game.to_play(batch, s) for s in active]) == self.a_color[active]
            groups = [(self.a, active[a_moves]), (self.b, active[~a_moves])]
        for player, slots in groups:
            if len(slots):
                self.move(player, slots)
        return True

    def move(self, player, slots: np.ndarray) -> None:
        """The player chooses in each of `slots` (its side to move); record, resign or play."""
        game, batch, rules = self.game, self.batch, self.rules
        counts = np.array([game.move_count(batch, s) for s in slots])
        choice = Choice(*player.choose(slots, counts < rules.sample_moves, [self.rngs[s] for s in slots]))
        if choice.done is not None:  # a player that searches on in some slots: only the others move
            idx = np.flatnonzero(choice.done)
            slots, counts = slots[idx], counts[idx]
            choice = Choice(choice.actions[idx], choice.resign[idx], choice.policy[idx],
                            None if choice.record is None else choice.record[idx],
                            value=None if choice.value is None else choice.value[idx])
            if len(slots) == 0:
                return
        if rules.record:
            n = len(slots)
            packed = pack_planes(game.leaf_inputs(batch, slots, self._root_path[:n], np.zeros(n, np.int32)).planes)
        for i, slot in enumerate(slots):
            rec = self.slot_rec[slot]
            color = game.to_play(batch, slot)
            stat = float(choice.resign[i])
            side = 0 if color == 1 else 1
            may_resign = counts[i] >= rules.resign_min_move
            if may_resign:  # the statistic the calibration reads: moves where a resignation could happen
                rec.resign_value[side] = min(rec.resign_value[side], stat)
            if not rec.no_resign and may_resign and stat < rules.resign_threshold and rec.decided_at < 0:
                if not rules.play_out_decided:
                    rec.result, rec.resigned = -color, True
                    self.finish(slot)
                    continue
                rec.decided_at = int(counts[i])
                for p in self.players:
                    p.decide(slot)
            if rules.record and (choice.record is None or choice.record[i]):
                rec.planes.append(packed[i])
                rec.policies.append(choice.policy[i])
                rec.to_play.append(color)
                if choice.value is not None:
                    rec.root_values.append(float(choice.value[i]))
            self.play(slot, int(choice.actions[i]))
            if game.is_over(batch, slot):
                rec.result = int(game.outcome(batch, slot))
                rec.score = float(game.score(batch, slot)) if game.name == "go" else 0.0
                if rules.final_board:
                    rec.final_board = np.array(game.board(batch, slot), np.int8).reshape(-1)
                self.finish(slot)
