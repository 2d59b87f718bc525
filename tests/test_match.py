"""Matches: colours alternate, openings vary, baselines order as they should, the sequential gate stops early."""

import json


from zero.games import make_game
from zero.arena import MCTSPlayer, RandomPlayer
from zero.config import SearchConfig
from zero.match import make_player, play_match, run_match
from zero.evaluator import RolloutEvaluator


def test_pure_mcts_beats_random(tiny_params):
    game = make_game(tiny_params.game)
    a = make_player("mcts:200", tiny_params, game, visits=0, seed=1)
    b = RandomPlayer(seed=2)
    out = run_match(game, a, b, num_games=20, seed=0, concurrent=10, opening_moves=0)
    assert out.result.games == 20
    assert out.result.wins >= 17, out.result


def test_colours_alternate_and_openings_differ(tiny_params, tiny_checkpoint):
    game = make_game(tiny_params.game)
    a = make_player(str(tiny_checkpoint), tiny_params, game, visits=40, seed=0)
    b = make_player(str(tiny_checkpoint), tiny_params, game, visits=40, seed=0)
    out = run_match(game, a, b, num_games=8, seed=5, concurrent=8, opening_moves=3)
    openings = {tuple(r.moves[:3]) for r in out.records}
    assert len(openings) >= 5  # sampled openings make the games differ


class ColourRecorder(RandomPlayer):
    """A random player that notes which colour it moved for in which game."""

    def __init__(self, seed, log):
        super().__init__(seed)
        self.log = log

    def choose(self, slots, sample, rngs):
        for s in slots:
            self.log.append((id(rngs), int(s), self.game.to_play(self.batch, int(s)), self.game.move_count(self.batch, int(s))))
        return super().choose(slots, sample, rngs)


def test_player_a_is_black_in_even_games():
    from zero.config import load_params

    params = load_params(None, ["game.name=gomoku", "game.height=6", "game.width=6", "game.k=4"])
    game = make_game(params.game)
    log_a, log_b = [], []
    out = run_match(game, ColourRecorder(1, log_a), ColourRecorder(2, log_b), num_games=6, seed=0,
                    concurrent=6, opening_moves=0)
    # slot i plays game i first: a opens (black) in games 0, 2, 4, b in 1, 3, 5
    first_moves_a = {slot for _, slot, colour, count in log_a if count == 0}
    first_moves_b = {slot for _, slot, colour, count in log_b if count == 0}
    assert first_moves_a == {0, 2, 4} and first_moves_b == {1, 3, 5}
    assert all(colour == 1 for _, _, colour, count in log_a + log_b if count == 0)
    r = out.result
    assert r.wins + r.losses + r.draws == 6


def test_sequential_gate_stops_once_decided(tiny_params):
    game = make_game(tiny_params.game)
    strong = MCTSPlayer("mcts", RolloutEvaluator(1), SearchConfig(visits=200))
    weak = RandomPlayer(3)
    out = run_match(game, strong, weak, num_games=40, seed=0, concurrent=2, opening_moves=0,
                    stop_early=(40, 0.55))
    r = out.result
    assert r.games < 40
    # it stopped because 22 points (55% of 40) were in hand
    assert r.wins + r.draws / 2 >= 22


def test_play_match_writes_sgf_and_json(tiny_params, tiny_checkpoint, tmp_path):
    result = play_match(tiny_params, str(tiny_checkpoint), "random", num_games=4, seed=1, sgf_dir=tmp_path)
    d = result.to_dict()
    json.dumps(d)
    assert d["games"] == 4 and d["wins"] + d["losses"] + d["draws"] == 4
    assert [p.name for p in tmp_path.iterdir() if p.suffix != ".pt"] == ["match.sgf.gz"]


def test_match_sgfs_name_the_players_by_colour(tiny_params, tmp_path):
    from zero.sgf import read_collection

    result = play_match(tiny_params, "random", "mcts:8", 4, seed=3, sgf_dir=tmp_path)
    games = read_collection(tmp_path / "match.sgf.gz")
    assert [(g.black, g.white) for g in games] == [("random", "mcts:8"), ("mcts:8", "random")] * 2
    a_won = sum((g.result[0] == "B") == (i % 2 == 0) for i, g in enumerate(games) if g.result[0] in "BW")
    assert a_won == result.wins and all(g.properties["C"][0].startswith("zero match, seed ") for g in games)


def test_a_network_spec_sets_its_leaf_batch_batches_in_flight_and_visits(tiny_params, tiny_checkpoint):
    import pytest

    game = make_game(tiny_params.game)
    player = make_player(f"{tiny_checkpoint}@lb8@f2@v30", tiny_params, game, visits=40, seed=0)
    assert (player.config.leaf_batch, player.config.leaf_batches_in_flight, player.config.visits) == (8, 2, 30)
    plain = make_player(str(tiny_checkpoint), tiny_params, game, visits=40, seed=0)
    assert (plain.config.leaf_batch, plain.config.leaf_batches_in_flight, plain.config.visits) == (1, 1, 40)
    for bad in ("@f0", "@f17", "@x3", "@lb"):
        with pytest.raises(ValueError, match="is not an option"):
            make_player(f"{tiny_checkpoint}{bad}", tiny_params, game, visits=40)
    # a match of the batched search (two batches in flight) against the plain one plays to the end
    out = run_match(game, player, plain, num_games=4, seed=1, concurrent=4, opening_moves=2)
    assert out.result.games == 4


def test_a_network_spec_chooses_its_precision_on_the_cpu(tiny_params, tiny_checkpoint):
    import pytest
    import torch

    game = make_game(tiny_params.game)
    bf16 = make_player(f"{tiny_checkpoint}@bf1", tiny_params, game, visits=8, seed=0)
    assert bf16.evaluator.leaf_net is not None and bf16.evaluator.leaf_net.dtype == torch.bfloat16
    on = tiny_params.model_copy(update={"gate": tiny_params.gate.model_copy(
        update={"fast_inference": True, "cpu_bf16": True})})
    assert make_player(str(tiny_checkpoint), on, game, visits=8).evaluator.leaf_net.dtype == torch.bfloat16
    fp32 = make_player(f"{tiny_checkpoint}@bf0", on, game, visits=8, seed=0)
    assert fp32.evaluator.leaf_net.dtype == torch.float32  # bf0 keeps the fast path, in float32
    for bad in ("@bf2", "@bf"):
        with pytest.raises(ValueError, match="@bf<0-1>"):
            make_player(f"{tiny_checkpoint}{bad}", tiny_params, game, visits=8)
    out = run_match(game, bf16, fp32, num_games=2, seed=1, concurrent=2, opening_moves=2)
    assert out.result.games == 2


def test_a_network_spec_sets_its_own_search_constants(tiny_params, tmp_path):
    import pytest

    from zero.network import ScoreUtilityNet, init_checkpoint

    params = tiny_params.model_copy(update={"network": tiny_params.network.model_copy(update={"aux_heads": True})})
    path = tmp_path / "aux.pt"
    init_checkpoint(params, path, seed=0)
    game = make_game(params.game)
    tuned = make_player(f"{path}@cp2.5@fpu0.1@su0.3@sd0.85@svb0.35@v12", params, game, visits=40, seed=0)
    c = tuned.config
    assert (c.c_puct, c.fpu_reduction, c.visits, c.c_puct_stdev_scale, c.subtree_bias_factor) == (2.5, 0.1, 12, 0.85,
                                                                                                 0.35)
    assert isinstance(tuned.evaluator.net, ScoreUtilityNet) and tuned.evaluator.net.weight == 0.3
    plain = make_player(str(path), params, game, visits=40, seed=0)
    assert (plain.config.c_puct, plain.config.fpu_reduction) == (params.mcts.c_puct, params.mcts.fpu_reduction)
    assert not isinstance(plain.evaluator.net, ScoreUtilityNet)  # the params' score_utility, 0 here
    for bad in ("@cp0", "@cp11", "@cp-1", "@cp2.5.1", "@cp", "@fpu3", "@su1e2", "@cpx", "@sd1.5", "@svb2"):
        with pytest.raises(ValueError, match=r"is not an option .*@cp<0.1-10.0> mcts.c_puct"):
            make_player(f"{path}{bad}", params, game, visits=8)
    out = run_match(game, tuned, plain, num_games=2, seed=1, concurrent=2, opening_moves=2)
    assert out.result.games == 2
