"""The fast recipe's pipeline switches: a sequential gate across parts, always-promote, resignation
calibrated on the previous generation, playout cap randomization and a visit schedule."""

import json

import numpy as np
import pytest
from conftest import TINY
from pipeline_support import smoke_line
from test_train_recipe import kill_value_head

from flows import stages
from zero.arena import RandomPlayer
from zero.config import ConfigError, load_params
from zero.games import make_game
from zero.match import gate_decided, run_match
from zero.network import load_checkpoint, save_checkpoint
from zero.selfplay import (
    calibrate_resign_threshold,
    play_shard,
    resign_false_positive_rate,
)
from zero.shards import read_shard


def make_line(tmp_path, overrides):
    return smoke_line(tmp_path, ["pipeline.selfplay_shards=2", "selfplay.games_per_shard=4", "train.steps=3",
                                 *overrides], generations=3)


# --- the gate ------------------------------------------------------------------------------------


def test_gate_decided_at_the_boundary():
    # 400 games at 55%: 220 points pass whatever follows; 219.5 do not yet
    assert gate_decided(400, 0.55, 220, 0, 0)
    assert not gate_decided(400, 0.55, 219, 0, 1)
    # failing: the candidate can no longer reach 220 points even by winning every remaining game
    assert gate_decided(400, 0.55, 0, 181, 0)  # 219 games left: 219 < 220
    assert not gate_decided(400, 0.55, 0, 180, 0)  # 220 games left
    assert gate_decided(400, 0.55, 1, 180, 1)  # 1.5 points + 218 games left: 219.5 at best
    assert not gate_decided(400, 0.55, 2, 178, 0)  # 2 points + 220 games left: 222 at best


def test_a_gate_in_parts_stops_when_all_parts_together_are_decided(tmp_path):
    params, (g0, g1, _) = make_line(tmp_path, ["pipeline.gate_shards=2"])
    a = stages.GateTallies(g1, 0, 2, games=400, threshold=0.55)
    b = stages.GateTallies(g1, 1, 2, games=400, threshold=0.55)
    assert not a(100, 0, 0)  # part 1 has reported nothing yet
    assert not b(119, 0, 0)  # 219 together
    assert b(120, 0, 0)  # 220 together: passed whatever the other 180 games do
    assert a(100, 0, 0)  # part 0 sees it too
    # a finished part counts by its result file, not by its last running score
    g1.gate_part(1).parent.mkdir(parents=True, exist_ok=True)
    g1.gate_part(1).write_text(json.dumps({"wins": 10, "losses": 0, "draws": 0}))
    assert not a(100, 0, 0)


def test_a_match_stops_starting_games_once_its_stop_rule_says_so():
    game = make_game(load_params(None, TINY).game)
    calls = []

    def stop(w, l, d):
        calls.append(w + l + d)
        return w + l + d >= 5

    out = run_match(game, RandomPlayer(1), RandomPlayer(2), 40, seed=0, concurrent=2, opening_moves=0, stop=stop)
    played = out.result.wins + out.result.losses + out.result.draws
    assert 5 <= played <= 6  # the game in progress in the other slot still finishes
    assert len(out.records) == played


def _gate_parts(gen, scores):
    gen.gate_dir.mkdir(parents=True, exist_ok=True)
    for j, (w, l) in enumerate(scores):
        gen.gate_part(j).write_text(json.dumps({"part": j, "seed": j, "wins": w, "losses": l, "draws": 0}))


def test_gate_combine_refuses_an_undecided_early_stop_and_always_promote_promotes(tmp_path):
    params, (g0, g1, _) = make_line(tmp_path, ["pipeline.gate_shards=2", "gate.games=40", "gate.promote=always"])
    stages.selfplay(g1, workers=1)
    stages.dataset(g1)
    stages.train(g1)
    _gate_parts(g1, [(5, 6), (4, 5)])  # 20 of 40 games, 9-11: undecided
    with pytest.raises(RuntimeError, match="stopped after 20 of 40 games undecided"):
        stages.gate_combine(g1)
    _gate_parts(g1, [(2, 18), (2, 18)])  # 4-36 over all 40: failed
    result = stages.gate_combine(g1)
    assert not result["passed"] and result["promoted"] and result["promote_rule"] == "always"
    chosen = stages.champion(g1)
    assert chosen["sha256"] == stages.file_sha256(g1.candidate)  # promoted although it failed


def test_the_gates_guards_keep_a_broken_candidate_out_whatever_the_rule(tmp_path):
    params, (g0, g1, _) = make_line(tmp_path, ["pipeline.gate_shards=2", "gate.games=40", "gate.promote=always",
                                               "gate.min_score=0.25", "gate.min_value_std=0.001"])
    stages.selfplay(g1, workers=1)
    stages.dataset(g1)
    stages.train(g1)
    assert load_checkpoint(g1.candidate)[1]["final"]["value_std"] > 0.001
    _gate_parts(g1, [(2, 18), (2, 18)])  # 4-36: 0.1 of the points
    result = stages.gate_combine(g1)
    assert not result["passed"] and not result["promoted"]
    assert result["refused"] == "scored 0.100 of the gate's points (gate.min_score 0.25)"
    assert stages.champion(g1)["sha256"] == stages.file_sha256(g0.champion)  # the champion stays
    _gate_parts(g1, [(5, 15), (5, 15)])  # 10-30: 0.25, promoted as the rule says
    result = stages.gate_combine(g1)
    assert result["promoted"] and "refused" not in result

    # the same generation trained from a champion whose value head is dead (generation 89's): refused even
    # when it passes the gate
    net, meta = load_checkpoint(g0.champion)
    save_checkpoint(kill_value_head(net), g0.champion, meta, checksum=True)
    g1.candidate.unlink()
    stages.train(g1)
    assert load_checkpoint(g1.candidate)[1]["final"]["value_std"] == 0.0
    _gate_parts(g1, [(15, 5), (15, 5)])
    result = stages.gate_combine(g1)
    assert result["passed"] and not result["promoted"]
    assert result["refused"].startswith("dead value head: its outputs spread 0.0000")
    assert stages.champion(g1)["sha256"] == stages.file_sha256(g0.champion)


def test_the_guards_are_off_by_default_and_keep_the_params_hash():
    plain = load_params(None, TINY)
    assert (plain.gate.min_score, plain.gate.min_value_std) == (0.0, 0.0)
    guarded = load_params(None, [*TINY, "gate.min_score=0.25", "gate.min_value_std=0.05"])
    assert load_params(None, [*TINY, "gate.min_score=0.0"]).digest() == plain.digest() != guarded.digest()
    with pytest.raises(ConfigError, match="gate.min_score"):
        load_params(None, [*TINY, "gate.min_score=1.5"])


# --- resignation calibrated by the pipeline -----------------------------------------------------------


def test_each_generation_resigns_at_the_threshold_calibrated_on_the_previous_ones_games(tmp_path):
    params, (g0, g1, g2) = make_line(tmp_path, ["selfplay.resign_calibration_rate=0.05",
                                                "selfplay.resign_playout_share=1.0"])
    same, facts1 = stages.generation_params(g1, params)
    assert same.selfplay.resign_threshold == params.selfplay.resign_threshold  # nothing to calibrate on yet
    assert "resign_calibration_games" not in facts1
    stages.selfplay(g1, workers=1)
    calibrated, facts2 = stages.generation_params(g2, params)
    played = [read_shard(p) for p in sorted(g1.games_dir.glob("shard-*.npz"))]
    expected = calibrate_resign_threshold(played, 0.05)
    assert calibrated.selfplay.resign_threshold == facts2["resign_threshold"] == expected
    assert facts2["resign_calibration_games"] == 8 and facts2["resign_calibrated_on"] == g1.key
    rate, games = resign_false_positive_rate(played, expected)
    assert rate <= 0.05 and games == 8
    # the threshold is the highest that keeps the rate: 0.05 higher would exceed it (or be above 0)
    if expected < 0:
        assert resign_false_positive_rate(played, expected + 0.05)[0] > 0.05
    assert calibrated.digest() != params.digest()  # it goes into generation 2's params snapshot
    # with a bound, the calibration chooses nothing above it
    bounded = params.model_copy(update={"selfplay": params.selfplay.model_copy(
        update={"resign_calibration_max": -0.8})})
    capped, facts3 = stages.generation_params(g2, bounded)
    assert capped.selfplay.resign_threshold == facts3["resign_threshold"] == calibrate_resign_threshold(
        played, 0.05, -0.8) <= -0.8


def test_resign_calibration_bound_worked_by_hand():
    from types import SimpleNamespace

    # 20 played-out games that white wins; black's lowest resign statistic is -0.3 in 16, -0.85 in 4.
    # Nobody who fell below any threshold went on to win: unbounded, the calibration picks 0.0.
    low = np.array([[-0.3, 0.5]] * 16 + [[-0.85, 0.5]] * 4, np.float32)
    shard = SimpleNamespace(no_resign=np.ones(20, bool), resign_value=low, result=np.full(20, -1, np.int8))
    assert calibrate_resign_threshold([shard], 0.05) == 0.0
    assert calibrate_resign_threshold([shard], 0.05, highest=-0.8) == -0.8
    # now the 4 games that dipped to -0.85 are black wins: 4/20 = 20% false positives at -0.8,
    # none at -0.85 (strictly below resigns), so the bounded calibration steps down to -0.85
    shard.result[16:] = 1
    assert resign_false_positive_rate([shard], -0.8) == (0.2, 20)
    assert calibrate_resign_threshold([shard], 0.05, highest=-0.8) == -0.85


# --- playout cap randomization and the visit schedule ----------------------------------------------------


def test_playout_cap_randomization_records_only_full_searches(tiny_checkpoint, tmp_path):
    full = load_params(None, TINY)
    capped = load_params(None, TINY + ["selfplay.full_search_share=0.25", "selfplay.fast_visits=3"])
    a = play_shard(full, tiny_checkpoint, tmp_path / "full.npz", seed=4)
    b = play_shard(capped, tiny_checkpoint, tmp_path / "capped.npz", seed=4)
    again = play_shard(capped, tiny_checkpoint, tmp_path / "again.npz", seed=4)
    assert again["sha256"] == b["sha256"]  # a pure function of the seed
    shard = read_shard(tmp_path / "capped.npz")
    moves = int(shard.length.sum())
    assert a["positions"] == int(read_shard(tmp_path / "full.npz").length.sum())  # every move recorded
    share = len(shard.value) / moves
    assert 0.1 < share < 0.45, (len(shard.value), moves)
    assert np.allclose(shard.policy.astype(np.float32).sum(axis=1), 1.0, atol=1e-2)


def test_fast_visits_must_be_below_visits_when_the_cap_is_on():
    with pytest.raises(ConfigError, match="fast_visits"):
        load_params(None, TINY + ["selfplay.full_search_share=0.25"])
    with pytest.raises(ConfigError, match="fast_visits"):
        load_params(None, TINY + ["selfplay.full_search_share=0.25", "selfplay.fast_visits=12"])


def test_the_visit_schedule_and_switches_left_off_keep_the_params_hash():
    base = load_params(None, TINY)
    explicit = load_params(None, TINY + ["selfplay.full_search_share=1.0", "selfplay.visits_schedule=[]",
                                         "gate.promote=gate", "selfplay.resign_calibration_rate=0"])
    assert explicit.digest() == base.digest()
    scheduled = load_params(None, TINY + ["selfplay.visits_schedule=[[0, 8], [3, 16], [6, 32]]"])
    assert [scheduled.selfplay.for_generation(g).visits for g in (1, 2, 3, 5, 6, 9)] == [8, 8, 16, 16, 32, 32]
    assert scheduled.digest() != base.digest()


def test_go_self_play_with_aux_heads_records_ownership_and_score_of_played_out_games(tmp_path):
    from zero.network import init_checkpoint

    params = load_params(None, ["game.name=go", "game.size=5", "network.size=b1c8", "network.aux_heads=true",
                                "selfplay.visits=8", "selfplay.games_per_shard=4", "selfplay.concurrent_games=4",
                                "selfplay.resign_playout_share=0.5"])
    init_checkpoint(params, tmp_path / "net.pt", seed=0)
    play_shard(params, tmp_path / "net.pt", tmp_path / "s.npz", seed=2)
    shard = read_shard(tmp_path / "s.npz")
    assert shard.has_aux and shard.ownership.shape == (len(shard.value), 25)
    for g in range(len(shard.length)):
        rows = shard.game_index == g
        assert shard.aux_mask[rows].all() == (not shard.resigned[g])
        if shard.resigned[g]:
            continue
        to_play = np.where(np.arange(rows.sum()) % 2 == 0, 1, -1)
        black_score = shard.score[rows] * to_play
        assert np.allclose(black_score, black_score[0])  # one final count, seen from each side
        assert np.sign(black_score[0]) == shard.result[g]
        black_own = shard.ownership[rows] * to_play[:, None]
        assert (black_own == black_own[0]).all()
        assert black_own[0].sum() - params.game.komi == pytest.approx(black_score[0])  # area difference - komi
