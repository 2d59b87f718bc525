"""Matches between two players, many games at once, and the 400-game gate.

Player a plays black in even-numbered games and white in odd ones. Games
differ because the first `opening_moves` moves of each game are sampled in
proportion to the search's visits (temperature 1) from a per-game seed;
after that both sides play their most visited move. Each side keeps its own
search tree and reuses it across moves, its own and the opponent's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from zero.evaluator import NetworkEvaluator, RolloutEvaluator
from zero.games import Game, make_game
from zero.mcts import Search
from zero.network import init_network, load_checkpoint, pick_device, set_threads
from zero.selfplay import GameRecord, choose_moves, game_seed, write_sgfs
from zero.stats import MatchResult, gate_status


# c_puct of `mcts:N` (equal priors 1/A, rollout values in [-1, 1]); on Gomoku 6x6 k=4 at 1,000
# rollouts, c from 2 to 6 played evenly with 3; from 2.5 to 6 they blocked one-move threats
# about equally often, 2 less often.
ROLLOUT_C_PUCT = 3.0


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

    def choose(self, slots: np.ndarray, sample: np.ndarray, rngs: list) -> tuple[np.ndarray, np.ndarray]:
        actions = np.empty(len(slots), np.int64)
        for i, s in enumerate(slots):
            legal = np.flatnonzero(self.game.legal_mask(self.batch, int(s)))
            actions[i] = self._rng.choice(legal)
        return actions, np.zeros(len(slots), np.float32)


class MCTSPlayer:
    """Batched PUCT search with a given evaluator (a network, or random rollouts)."""

    def __init__(self, name: str, evaluator, visits: int, c_puct: float = 1.5, fpu_reduction: float = 0.25,
                 fpu_value: float | None = None):
        self.name = name
        self.evaluator = evaluator
        self.visits = visits
        self.c_puct, self.fpu_reduction, self.fpu_value = c_puct, fpu_reduction, fpu_value

    def start(self, game: Game, batch, slots_n: int) -> None:
        self.game, self.batch = game, batch
        self.search = Search(game, self.evaluator, slots_n, self.visits, self.c_puct, self.fpu_reduction,
                             self.fpu_value)

    def reset(self, slot: int) -> None:
        self.search.tree.reset(slot)

    def observe(self, slot: int, action: int) -> None:
        self.search.tree.advance(slot, action)

    def choose(self, slots: np.ndarray, sample: np.ndarray, rngs: list) -> tuple[np.ndarray, np.ndarray]:
        """Actions for the side to move in each slot, and the resign statistic (max of root and best child value)."""
        self.search.run(self.batch, slots)
        policy = self.search.tree.root_policy(slots)
        root_v, best_q = self.search.tree.root_values(slots)
        return choose_moves(policy, sample, rngs), np.maximum(root_v, best_q)


def make_player(spec: str, params, game: Game, visits: int, seed: int = 0):
    """A player from a spec.

    Specs: a checkpoint path; `init` (a freshly initialised network); `random`;
    `mcts:<rollouts>` (pure MCTS: random rollouts, every move tried once before
    any twice); `gtp:<command line>`
    (an external GTP engine such as `gtp:gnugo --mode gtp --level 1`).
    """
    mc = params.mcts
    if spec.startswith("gtp:"):
        from zero.gtp_player import GtpPlayer

        return GtpPlayer(spec[4:], params.game.komi)
    if spec == "random":
        return RandomPlayer(seed)
    if spec.startswith("mcts:"):
        n = int(spec.split(":", 1)[1])
        return MCTSPlayer(spec, RolloutEvaluator(seed), n, ROLLOUT_C_PUCT, fpu_value=1.0)
    device = pick_device(params.gate.device)
    if spec == "init":
        net = init_network(params, game, seed).to(device)
    else:
        net, _ = load_checkpoint(spec, device)
        if net.config.num_actions != game.num_actions or net.config.in_planes != game.num_planes:
            raise ValueError(f"{spec}: network is for another game or board than {params.game.tag}")
    sym = game.symmetries() if mc.symmetries else None
    return MCTSPlayer(Path(spec).name, NetworkEvaluator(net, sym, seed, device), visits, mc.c_puct, mc.fpu_reduction)


@dataclass
class MatchGames:
    """A match's result and its game records (for SGF)."""

    result: MatchResult
    records: list[GameRecord]


def run_match(game: Game, a, b, num_games: int, seed: int, concurrent: int = 64, opening_moves: int = 6,
              resign_threshold: float = -1.0, stop_early: tuple[int, float] | None = None,
              first_index: int = 0, openings: list[list[int]] | None = None, progress=None) -> MatchGames:
    """Play `num_games` games between players a and b.

    Args:
        progress: called as progress(games_done, num_games, positions) each time a game
            ends (positions: moves played in the games done so far).
        openings: fixed opening moves, one list per colour-swapped pair of games
            (game i starts with openings[(i // 2) % len(openings)], played for
            both sides before either player chooses a move).
        stop_early: (total_games, threshold) of a sequential gate: stop starting
            new games once the gate's outcome is certain whatever the rest do.
        first_index: index of this match's first game in a larger match (colours
            and seeds follow the global index, so shards of a match compose).
    """
    slots_n = max(1, min(concurrent, num_games))
    batch = game.new_batch(slots_n)
    records: list[GameRecord] = []
    slot_rec: list[GameRecord | None] = [None] * slots_n
    rngs: list = [None] * slots_n
    a_color = np.zeros(slots_n, np.int8)
    wins = losses = draws = positions = 0

    def decided() -> bool:
        if stop_early is None:
            return False
        return gate_status(wins, losses, draws, *stop_early) != "undecided"

    def start(slot: int) -> None:
        if len(records) >= num_games or decided():
            slot_rec[slot] = None
            return
        index = first_index + len(records)
        rec = GameRecord(index=index, seed=game_seed(seed, index), no_resign=False)
        records.append(rec)
        slot_rec[slot], rngs[slot] = rec, np.random.default_rng(rec.seed)
        a_color[slot] = 1 if index % 2 == 0 else -1
        game.reset(batch, slot)
        a.reset(slot)
        b.reset(slot)
        for act in openings[(index // 2) % len(openings)] if openings else ():
            game.play(batch, slot, int(act))
            rec.moves.append(int(act))
            a.observe(slot, int(act))
            b.observe(slot, int(act))

    def finish(slot: int) -> None:
        nonlocal wins, losses, draws, positions
        rec = slot_rec[slot]
        mine = int(rec.result) * int(a_color[slot])
        wins, losses, draws = wins + int(mine > 0), losses + int(mine < 0), draws + int(mine == 0)
        positions += len(rec.moves)
        start(slot)
        if progress is not None:
            progress(wins + losses + draws, num_games, positions)

    try:
        a.start(game, batch, slots_n)
        b.start(game, batch, slots_n)
        for slot in range(slots_n):
            start(slot)
        _play_rounds(game, batch, a, b, slots_n, slot_rec, rngs, a_color, opening_moves, resign_threshold, finish)
    finally:
        for player in (a, b):
            if hasattr(player, "close"):
                player.close()
    return MatchGames(MatchResult(wins=wins, losses=losses, draws=draws), records)


def _play_rounds(game, batch, a, b, slots_n, slot_rec, rngs, a_color, opening_moves, resign_threshold, finish):
    """Until every slot is idle: each side to move in each slot chooses, and the moves are played."""
    while True:
        active = np.array([s for s in range(slots_n) if slot_rec[s] is not None], np.int32)
        if len(active) == 0:
            break
        to_move = np.array([game.to_play(batch, s) for s in active])
        for player, side in ((a, to_move == a_color[active]), (b, to_move != a_color[active])):
            slots = active[side]
            if len(slots) == 0:
                continue
            counts = np.array([game.move_count(batch, s) for s in slots])
            actions, stats = player.choose(slots, counts < opening_moves, [rngs[s] for s in slots])
            for slot, act, stat in zip(slots, actions, stats):
                rec = slot_rec[slot]
                color = game.to_play(batch, slot)
                if stat < resign_threshold:
                    rec.result, rec.resigned = -color, True
                    finish(slot)
                    continue
                game.play(batch, slot, int(act))
                rec.moves.append(int(act))
                a.observe(slot, int(act))
                b.observe(slot, int(act))
                if game.is_over(batch, slot):
                    rec.result = int(game.outcome(batch, slot))
                    rec.score = float(game.score(batch, slot)) if game.name == "go" else 0.0
                    finish(slot)


def play_match(params, a: str, b: str, num_games: int, seed: int, sgf_dir: str | Path | None = None,
               visits: int | None = None, first_index: int = 0, sequential: bool = False,
               progress=None) -> MatchResult:
    """Play a match between two player specs (checkpoint paths, `random`, `mcts:N`, `init`).

    With sequential, stops early once a `params.gate` gate of `num_games` games is decided.
    `progress` is run_match's: progress(games_done, num_games, positions) as each game ends.
    """
    game = make_game(params.game)
    g = params.gate
    set_threads(g.threads)
    visits = visits or g.visits
    pa = make_player(a, params, game, visits, seed)
    pb = make_player(b, params, game, visits, seed + 1)
    stop = (num_games, g.threshold) if sequential else None
    out = run_match(game, pa, pb, num_games, seed, g.concurrent_games, g.opening_moves,
                    params.selfplay.resign_threshold, stop, first_index, progress=progress)
    if sgf_dir is not None:
        write_sgfs(out.records, params, sgf_dir, "match")
    return out.result
