"""selfplay.decided_visits: games that would resign are played out cheaply, so every game ends on a counted board."""

import numpy as np
import pytest

from zero.arena import ArenaRules, MCTSPlayer, play_arena
from zero.config import SearchConfig, load_params
from zero.evaluator import UniformEvaluator
from zero.games import make_game
from zero.games.gomoku import GomokuGame
from zero.selfplay import play_shard
from zero.shards import ShardError, read_shard, shard_summary, write_shard

GO_5 = ["game.size=5", "network.size=b1c8", "network.aux_heads=true", "selfplay.visits=8",
        "selfplay.concurrent_games=4", "selfplay.games_per_shard=8", "selfplay.resign_playout_share=0",
        "selfplay.resign_min_move=4"]


def test_a_decided_game_searches_on_at_its_visits_without_noise_or_record():
    game = GomokuGame(6, 6, 4)
    player = MCTSPlayer("self", UniformEvaluator(), SearchConfig(visits=64), noise=True, reuse_tree=False,
                        decided_visits=4)
    player.start(game, game.new_batch(2), 2)
    slots = np.array([0, 1])
    rngs = [np.random.default_rng(0), np.random.default_rng(1)]
    player.decide(1)
    choice = player.choose(slots, np.zeros(2, bool), rngs)
    visits = player.search.tree.root_visits(slots)
    assert visits[0] >= 64 and 4 <= visits[1] < 64
    assert choice.record.tolist() == [True, False]  # the decided game's position is no training target
    player.reset(1)  # a new game in the slot is not decided
    player.choose(slots, np.zeros(2, bool), rngs)
    assert (player.search.tree.root_visits(slots) >= 64).all()
    with pytest.raises(ValueError, match="no decided_visits"):
        MCTSPlayer("p", UniformEvaluator(), SearchConfig(visits=8)).decide(0)


def test_the_arena_plays_a_decided_game_to_its_end_instead_of_resigning():
    game = GomokuGame(5, 5, 4)
    player = MCTSPlayer("self", UniformEvaluator(), SearchConfig(visits=8), noise=True, decided_visits=2)
    rules = ArenaRules(resign_threshold=1.0, resign_min_move=3, playout_share=0.0, play_out_decided=True,
                       record=True)  # every mover is below +1: each game is decided at move 3
    out = play_arena(game, player, player, num_games=6, seed=5, concurrent=3, rules=rules)
    for rec in out.records:
        assert not rec.resigned and rec.decided_at == 3
        assert len(rec.moves) >= 7  # four in a row: played on to the end
        assert len(rec.planes) == 4  # the moves searched in full, the deciding one included; none after it


def test_a_go_shard_of_decided_games_carries_ownership_and_score_for_every_position(tmp_path):
    from zero.network import init_checkpoint

    params = load_params(None, GO_5 + ["selfplay.resign_threshold=1.0", "selfplay.decided_visits=2"])
    init_checkpoint(params, tmp_path / "net.pt", 0)
    summary = play_shard(params, tmp_path / "net.pt", tmp_path / "d.npz", seed=1)
    shard = read_shard(tmp_path / "d.npz")
    game = make_game(params.game)
    assert summary["resigned"] == 0 and summary["decided"] == 8 and (shard.decided_at == 4).all()
    assert shard.aux_mask.all()  # every game ended on the board, so every position has its targets
    for g in range(len(shard.length)):
        rows = np.flatnonzero(shard.game_index == g)
        assert len(rows) == 5  # moves 0-4: the deciding move is the last recorded
        batch = game.new_batch(1)
        for action in shard.moves[g, : shard.length[g]]:
            game.play(batch, 0, int(action))
        assert game.is_over(batch, 0) and game.outcome(batch, 0) == shard.result[g]
        assert (shard.value[rows] == shard.result[g] * np.where(np.arange(len(rows)) % 2 == 0, 1, -1)).all()
    # black was to move at move 4: a reversal is a decided game black went on to win
    assert summary["decided_reversed"] == int((shard.result == 1).sum())
    # the same games resign without the switch, and give no targets
    plain = load_params(None, GO_5 + ["selfplay.resign_threshold=1.0"])
    play_shard(plain, tmp_path / "net.pt", tmp_path / "r.npz", seed=1)
    resigned = read_shard(tmp_path / "r.npz")
    assert resigned.resigned.all() and not resigned.aux_mask.any() and resigned.decided_at is None
    assert "decided" not in shard_summary(resigned)


def test_a_shard_whose_decided_moves_are_out_of_range_is_refused(tmp_path):
    from zero.network import init_checkpoint

    params = load_params(None, GO_5 + ["selfplay.resign_threshold=1.0", "selfplay.decided_visits=2",
                                       "selfplay.games_per_shard=2", "selfplay.concurrent_games=2"])
    init_checkpoint(params, tmp_path / "net.pt", 0)
    play_shard(params, tmp_path / "net.pt", tmp_path / "d.npz", seed=3)
    shard = read_shard(tmp_path / "d.npz")
    shard.decided_at = shard.length.astype(np.int16)
    write_shard(tmp_path / "bad.npz", shard)
    with pytest.raises(ShardError, match="bad.npz.*decided_at outside"):
        read_shard(tmp_path / "bad.npz")


def test_the_switch_is_checked_and_off_by_default():
    assert load_params(None, ["selfplay.decided_visits=0"]).digest() == load_params(None, []).digest()
    with pytest.raises(ValueError, match="decided_visits=300"):
        load_params(None, ["selfplay.visits=200", "selfplay.decided_visits=300"])
    with pytest.raises(ValueError, match="decided_visits"):
        load_params(None, ["mcts.root=gumbel", "selfplay.decided_visits=8"])


def test_the_generation_counts_its_decided_games():
    from flows.tracking import selfplay_metrics

    shards = [{"games": 10, "positions": 50, "moves": 300, "resigned": 0, "black_wins": 6, "decided": 8,
               "decided_reversed": 1}, {"games": 10, "positions": 40, "moves": 280, "resigned": 0,
                                        "black_wins": 4, "decided": 2, "decided_reversed": 1}]
    m = selfplay_metrics(shards, {"window_positions": 90, "window_shards": 2})
    assert m["selfplay_decided"] == pytest.approx(0.5) and m["selfplay_decided_reversed"] == pytest.approx(0.2)
    for s in shards:
        del s["decided"], s["decided_reversed"]
    assert "selfplay_decided" not in selfplay_metrics(shards, {"window_positions": 90, "window_shards": 2})
