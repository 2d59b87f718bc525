"""Self-play: one noisy search playing both sides of many games in the arena, written as shards and SGF.

Each game has its own seed (derived from the shard's seed and the game's
index) for its Dirichlet noise, temperature moves and whether it is played
out without resignation (the calibration share); see zero.arena. A shard is
a pure function of (network weights, params, seed) on a given machine.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import torch

from zero.arena import ArenaRules, GameRecord, play_arena, write_sgf_collection
from zero.config import SearchConfig, SelfPlayConfig
from zero.evaluator import NetworkEvaluator
from zero.games import Game, make_game
from zero.gumbel import search_player
from zero.network import load_checkpoint, pick_device, search_network, set_threads
from zero.shards import SHARD_FORMAT, Shard, padded_moves, shard_summary, write_shard


def play_games(game: Game, evaluator, selfplay: SelfPlayConfig, search: SearchConfig, num_games: int, seed: int,
               progress=None, deadline: float | None = None, final_board: bool = False) -> list[GameRecord]:
    """Play `num_games` self-play games, `selfplay.concurrent_games` at a time: one noisy search plays both sides.

    With a deadline (a time.perf_counter() value), stops after the move in
    progress at that time and returns the games as they stand (for benchmarks).
    `progress` is called as progress(games_done, num_games, positions) each time
    a game ends (positions: those recorded in the games done so far). With
    final_board (Go), each played-out game keeps its final board for the auxiliary targets.
    """
    cap = (selfplay.full_search_share, selfplay.fast_visits) if selfplay.full_search_share < 1 else None
    player = search_player("self-play", evaluator, search, noise=True, reuse_tree=selfplay.reuse_tree,
                           playout_cap=cap, groups=selfplay.search_groups, step_rounds=selfplay.step_rounds,
                           decided_visits=selfplay.decided_visits)
    rules = ArenaRules(sample_moves=selfplay.temperature_moves, resign_threshold=selfplay.resign_threshold,
                       resign_min_move=selfplay.resign_min_move,
                       playout_share=selfplay.resign_playout_share, play_out_decided=selfplay.decided_visits > 0,
                       record=True, final_board=final_board,
                       random_opening_moves=selfplay.random_opening_moves,
                       random_opening_share=selfplay.random_opening_share)
    return play_arena(game, player, player, num_games, seed, selfplay.concurrent_games, rules,
                      progress=progress, deadline=deadline).records


def records_to_shard(records: list[GameRecord], game: Game, params, seed: int, aux: bool = False) -> Shard:
    """Pack game records into a Shard (positions of all games, in game order).

    With aux (Go), the shard carries each position's final ownership and score
    (zero.targets), from the games played out; resigned games carry none.
    """
    planes, policy, value, game_index, root_value = [], [], [], [], []
    for g, rec in enumerate(records):
        planes.extend(rec.planes)
        policy.extend(rec.policies)
        root_value.extend(rec.root_values)
        value.extend(rec.result * p for p in rec.to_play)
        game_index.extend([g] * len(rec.planes))
    nbytes = (game.num_planes * game.height * game.width + 7) // 8
    targets = {}
    if aux:
        from zero.targets import aux_targets, no_aux_targets, stack_aux_targets

        if records:
            targets = stack_aux_targets([aux_targets(r.final_board, game.komi, np.array(r.to_play))
                                         if r.final_board is not None
                                         else no_aux_targets(len(r.to_play), game.height * game.width)
                                         for r in records])
    if params.selfplay.decided_visits:
        targets["decided_at"] = np.array([r.decided_at for r in records], np.int16)
    if params.selfplay.root_values:
        if len(root_value) != len(value):
            raise ValueError(f"selfplay.root_values: {len(root_value)} root values for {len(value)} positions")
        targets["root_value"] = np.clip(np.array(root_value, np.float32), -1.0, 1.0)
    return Shard(
        **targets,
        planes=np.array(planes, np.uint8).reshape(-1, nbytes),
        policy=np.array(policy, np.float16).reshape(-1, game.num_actions),
        value=np.array(value, np.int8),
        game_index=np.array(game_index, np.int32),
        moves=padded_moves([r.moves for r in records]),
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


# Rounds of further games a shard plays at most to reach selfplay.min_positions_per_shard.
MAX_TOP_UPS = 16


def top_up_seed(seed: int, top_up: int) -> int:
    """The seed of a shard's `top_up`-th round of further games: its own games, reproducible."""
    return int(np.random.SeedSequence([seed, top_up]).generate_state(1, np.uint64)[0] >> np.uint64(1))


def _whole_shard(progress, games: int, positions: int):
    """`progress` for a further round of games, counted over the whole shard: the games and positions already
    played come first, so the progress line goes on from them rather than starting again at 0."""
    if progress is None:
        return None

    def report(done: int, total: int | None = None, more_positions: int | None = None) -> None:
        progress(games + done, None if total is None else games + total,
                 None if more_positions is None else positions + more_positions)

    return report


def play_shard(params, checkpoint: str | Path, out_path: str | Path, seed: int,
               num_games: int | None = None, sgf_dir: str | Path | None = None, progress=None,
               load_network=None) -> dict:
    """Play one shard of self-play games with the network in `checkpoint` and write it.

    `load_network(checkpoint, device) -> ZeroNet` (eval mode) replaces reading
    the file, for a long-lived player that keeps the network it loaded once;
    the shard is the same either way. With selfplay.min_positions_per_shard, the shard plays
    further rounds of games (seeds from `top_up_seed`) until its games recorded that many positions.
    With `sgf_dir`, the games also go into `<sgf_dir>/<out_path's stem>.sgf.gz`, one collection.
    Returns a summary: games, positions, resignations, calibration games, sha256 of the shard,
    seconds, and network evaluations per second.
    """
    game = make_game(params.game)
    set_threads(params.selfplay.threads)
    device = pick_device(params.selfplay.device)
    net = load_network(checkpoint, device) if load_network else load_checkpoint(checkpoint, device)[0]
    torch.manual_seed(seed)
    net = search_network(net, params.mcts.score_utility, params.mcts.score_utility_scale,
                         head_value=params.selfplay.root_values)
    evaluator = NetworkEvaluator(net, game.symmetries() if params.mcts.symmetries else None,
                                 seed=seed, device=device, half=params.selfplay.half_precision,
                                 fast=params.selfplay.fast_inference, cpu_bf16=params.selfplay.cpu_bf16)
    num_games = num_games or params.selfplay.games_per_shard
    start = time.perf_counter()
    search = params.mcts.search(params.selfplay.visits)
    aux = params.network.aux_heads and game.name == "go"
    records = play_games(game, evaluator, params.selfplay, search, num_games, seed, progress=progress,
                         final_board=aux)
    target = params.selfplay.min_positions_per_shard
    for top_up in range(1, MAX_TOP_UPS + 1):
        have = sum(len(r.planes) for r in records)
        if have >= target:
            break
        more = min(num_games, math.ceil((target - have) * len(records) / max(1, have)))
        records += play_games(game, evaluator, params.selfplay, search, more, top_up_seed(seed, top_up),
                              progress=_whole_shard(progress, len(records), have), final_board=aux)
    shard = records_to_shard(records, game, params, seed, aux=aux)
    sha = write_shard(out_path, shard)
    if sgf_dir is not None:  # one collection: one file for DVC to hash and push, not one a game
        sgf_path = Path(sgf_dir) / f"{Path(out_path).stem}.sgf.gz"
        write_sgf_collection(records, params.game, sgf_path, event="self-play")
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


def calibrate_resign_threshold(shards: list[Shard], max_false_positive: float = 0.05, highest: float = 0.0) -> float:
    """The highest threshold, at most `highest`, whose false-positive rate on calibration games stays under
    the limit (thresholds are tried in steps of 0.05 from `highest` down to -1)."""
    for t in np.round(np.arange(highest, -1.0001, -0.05), 2):
        rate, total = resign_false_positive_rate(shards, float(t))
        if total and rate <= max_false_positive:
            return float(t)
    return -1.0
