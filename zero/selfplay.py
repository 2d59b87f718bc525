"""Self-play: many games at once, one batched search, records written as shards and SGF.

Every slot of a game batch plays one game at a time; when a game ends the
slot starts the next one until the shard's games are played. Each game has
its own seed (derived from the shard's seed and the game's index) for its
Dirichlet noise, temperature moves and whether it is played out without
resignation (the calibration share). A shard is a pure function of
(network weights, params, seed) on a given machine.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from zero.evaluator import NetworkEvaluator
from zero.fileio import atomic_write_text
from zero.games import Game, make_game
from zero.mcts import Search
from zero.network import load_checkpoint, pick_device, set_threads
from zero.notation import result_text
from zero.shards import SHARD_FORMAT, Shard, pack_planes, shard_summary, write_shard


@dataclass
class GameRecord:
    """One self-play game: its positions' training targets and how it went."""

    index: int
    seed: int
    no_resign: bool
    planes: list = field(default_factory=list)  # packed planes of each position
    policies: list = field(default_factory=list)  # [A] float32 visit distribution of each position
    to_play: list = field(default_factory=list)  # +1/-1 side to move at each position
    moves: list = field(default_factory=list)
    result: int = 0  # black's view
    resigned: bool = False
    score: float = 0.0  # Go: Tromp-Taylor score when played out
    resign_value: list = field(default_factory=lambda: [1.0, 1.0])  # lowest resign statistic, black / white

    def result_text(self) -> str:
        """SGF RE value: `B+R`, `W+3.5`, `0`, `B+` (Gomoku)."""
        return result_text(self.result, self.score, self.resigned)


def game_seed(seed: int, index: int) -> int:
    """The seed of game `index` of a shard seeded `seed`."""
    return int(np.random.SeedSequence([seed, index]).generate_state(1, np.uint32)[0])


def choose_moves(policy: np.ndarray, sample: np.ndarray, rngs: list) -> np.ndarray:
    """Sample ∝ visits (temperature 1) where `sample`, else the most visited action."""
    actions = policy.argmax(axis=1)
    for i in np.flatnonzero(sample):
        p = policy[i].astype(np.float64)
        actions[i] = rngs[i].choice(len(p), p=p / p.sum())
    return actions


def play_games(game: Game, evaluator, params, num_games: int, seed: int,
               progress=None, deadline: float | None = None) -> list[GameRecord]:
    """Play `num_games` self-play games, `params.selfplay.concurrent_games` at a time.

    With a deadline (a time.perf_counter() value), stops after the move in
    progress at that time and returns the games as they stand (for benchmarks).
    `progress` is called as progress(games_done, num_games, positions) each time
    a game ends (positions: those recorded in the games done so far).
    """
    sp, mc = params.selfplay, params.mcts
    slots_n = min(sp.concurrent_games, num_games)
    batch = game.new_batch(slots_n)
    search = Search(game, evaluator, slots_n, sp.visits, mc.c_puct, mc.fpu_reduction)
    records: list[GameRecord] = []
    slot_record: list[GameRecord | None] = [None] * slots_n
    rngs: list[np.random.Generator | None] = [None] * slots_n

    def start(slot: int) -> None:
        if len(records) >= num_games:
            slot_record[slot] = None
            return
        s = game_seed(seed, len(records))
        rng = np.random.default_rng(s)
        rec = GameRecord(index=len(records), seed=s, no_resign=bool(rng.random() < sp.resign_playout_share))
        records.append(rec)
        slot_record[slot], rngs[slot] = rec, rng
        game.reset(batch, slot)
        search.tree.reset(slot)

    for slot in range(slots_n):
        start(slot)
    no_path = np.zeros((slots_n, 1), np.int32)
    done = positions = 0
    while True:
        active = np.array([s for s in range(slots_n) if slot_record[s] is not None], np.int32)
        if len(active) == 0 or (deadline is not None and time.perf_counter() > deadline):
            break
        active_rngs = [rngs[s] for s in active]
        search.run(batch, active, noise_rngs=active_rngs, noise_weight=mc.dirichlet_weight,
                   noise_alpha=mc.dirichlet_alpha)
        planes = game.leaf_inputs(batch, active, no_path[: len(active)], np.zeros(len(active), np.int32)).planes
        packed = pack_planes(planes)
        policy = search.tree.root_policy(active)
        root_v, best_q = search.tree.root_values(active)
        counts = np.array([game.move_count(batch, s) for s in active])
        actions = choose_moves(policy, counts < sp.temperature_moves, active_rngs)
        for i, slot in enumerate(active):
            rec = slot_record[slot]
            color = game.to_play(batch, slot)
            stat = float(max(root_v[i], best_q[i]))
            side = 0 if color == 1 else 1
            rec.resign_value[side] = min(rec.resign_value[side], stat)
            if not rec.no_resign and stat < sp.resign_threshold:
                rec.result, rec.resigned = -color, True
                start(slot)
                done, positions = done + 1, positions + len(rec.planes)
                if progress:
                    progress(done, num_games, positions)
                continue
            rec.planes.append(packed[i])
            rec.policies.append(policy[i])
            rec.to_play.append(color)
            a = int(actions[i])
            game.play(batch, slot, a)
            rec.moves.append(a)
            if sp.reuse_tree:
                search.tree.advance(slot, a)
            else:
                search.tree.reset(slot)
            if game.is_over(batch, slot):
                rec.result = int(game.outcome(batch, slot))
                rec.score = float(game.score(batch, slot)) if game.name == "go" else 0.0
                start(slot)
                done, positions = done + 1, positions + len(rec.planes)
                if progress:
                    progress(done, num_games, positions)
    return records


def records_to_shard(records: list[GameRecord], game: Game, params, seed: int) -> Shard:
    """Pack game records into a Shard (positions of all games, in game order)."""
    planes, policy, value, game_index = [], [], [], []
    for g, rec in enumerate(records):
        planes.extend(rec.planes)
        policy.extend(rec.policies)
        value.extend(rec.result * p for p in rec.to_play)
        game_index.extend([g] * len(rec.planes))
    width = max([len(r.moves) for r in records] + [1])
    moves = np.full((len(records), width), -1, np.int16)
    for g, rec in enumerate(records):
        moves[g, : len(rec.moves)] = rec.moves
    nbytes = (game.num_planes * game.height * game.width + 7) // 8
    return Shard(
        planes=np.array(planes, np.uint8).reshape(-1, nbytes),
        policy=np.array(policy, np.float16).reshape(-1, game.num_actions),
        value=np.array(value, np.int8),
        game_index=np.array(game_index, np.int32),
        moves=moves,
        length=np.array([len(r.moves) for r in records], np.int32),
        seed=np.array([r.seed for r in records], np.int64),
        result=np.array([r.result for r in records], np.int8),
        resigned=np.array([r.resigned for r in records], np.bool_),
        no_resign=np.array([r.no_resign for r in records], np.bool_),
        resign_value=np.array([r.resign_value for r in records], np.float32).reshape(-1, 2),
        header={
            "format": SHARD_FORMAT,
            "game": params.game.tag,
            "plane_shape": [game.num_planes, game.height, game.width],
            "num_actions": game.num_actions,
            "seed": seed,
            # only the sections self-play reads, so no other key changes a shard's bytes
            "params": params.model_dump(mode="json", include={"game", "mcts", "selfplay"}),
        },
    )


def write_sgfs(records: list[GameRecord], params, sgf_dir: str | Path, prefix: str) -> list[Path]:
    """One SGF file per game, named `<prefix>-<index>.sgf`."""
    from zero.sgf import game_to_sgf

    sgf_dir = Path(sgf_dir)
    sgf_dir.mkdir(parents=True, exist_ok=True)
    g = params.game
    size = {"size": g.size, "komi": g.komi} if g.name == "go" else {"height": g.height, "width": g.width}
    paths = []
    for rec in records:
        text = game_to_sgf(rec.moves, game=g.name, result=rec.result_text(),
                           comment=f"zero self-play, seed {rec.seed}", **size)
        path = sgf_dir / f"{prefix}-{rec.index:04d}.sgf"
        atomic_write_text(path, text)
        paths.append(path)
    return paths


def play_shard(params, checkpoint: str | Path, out_path: str | Path, seed: int,
               num_games: int | None = None, sgf_dir: str | Path | None = None, progress=None) -> dict:
    """Play one shard of self-play games with the network in `checkpoint` and write it.

    Returns a summary: games, positions, resignations, calibration games,
    sha256 of the shard, seconds, and network evaluations per second.
    """
    game = make_game(params.game)
    set_threads(params.selfplay.threads)
    device = pick_device(params.selfplay.device)
    net, _ = load_checkpoint(checkpoint, device)
    torch.manual_seed(seed)
    evaluator = NetworkEvaluator(net, game.symmetries() if params.mcts.symmetries else None,
                                 seed=seed, device=device)
    num_games = num_games or params.selfplay.games_per_shard
    start = time.perf_counter()
    records = play_games(game, evaluator, params, num_games, seed, progress=progress)
    shard = records_to_shard(records, game, params, seed)
    sha = write_shard(out_path, shard)
    if sgf_dir is not None:
        write_sgfs(records, params, sgf_dir, Path(out_path).stem)
    seconds = time.perf_counter() - start
    return {
        **shard_summary(shard),
        "sha256": sha,
        "seconds": seconds,
        "nn_evals": evaluator.nn_positions,
    }


def resign_false_positive_rate(shards: list[Shard], threshold: float) -> tuple[float, int]:
    """Share of calibration games a resignation at `threshold` would have lost, and their number.

    A calibration game is a false positive when a side whose resign statistic
    fell below the threshold went on to win it.
    """
    wrong = total = 0
    for s in shards:
        for g in np.flatnonzero(s.no_resign):
            total += 1
            for side, color in ((0, 1), (1, -1)):
                if s.resign_value[g, side] < threshold and s.result[g] == color:
                    wrong += 1
    return (wrong / total if total else 0.0), total


def calibrate_resign_threshold(shards: list[Shard], max_false_positive: float = 0.05) -> float:
    """The highest threshold whose false-positive rate on calibration games stays under the limit."""
    for t in np.round(np.arange(0.0, -1.0001, -0.05), 2):
        rate, total = resign_false_positive_rate(shards, float(t))
        if total and rate <= max_false_positive:
            return float(t)
    return -1.0
