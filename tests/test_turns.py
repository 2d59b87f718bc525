"""flows.turns: where a player's Go games turned, read off a network with no search."""

import json

import numpy as np
import pytest
import torch

from flows.turns import GameTurn, evaluate, game_turn, main, summarise
from zero.config import load_params
from zero.games.go import GoGame, GoPosition
from zero.network import init_checkpoint, load_checkpoint
from zero.sgf import game_to_sgf, parse_sgf, write_collection

GAME = GoGame(5)
MOVES = ["C3", "B3", "C2", "B2", "C4", "B4", "D3", "C1", "pass", "B1"]


def _sgf(moves=MOVES, result="W+3.5", black="zero", white="pachi", size=5):
    game = GoGame(size)
    return game_to_sgf([game.text_to_action(m) for m in moves], size=size, komi=0.5, result=result, black=black,
                       white=white)


@pytest.fixture
def go5_checkpoint(tmp_path):
    params = load_params(None, ["game.name=go", "game.size=5", "game.liberty_planes=true", "network.size=b1c8",
                                "network.aux_heads=true"])
    path = tmp_path / "go5.pt"
    init_checkpoint(params, path, seed=3)
    return path


def test_values_and_priors_are_the_networks_own(go5_checkpoint):
    net, _ = load_checkpoint(go5_checkpoint)
    turn = game_turn(parse_sgf(_sgf()), "zero", "g", net, opening=2)
    assert turn.colour == 1 and turn.won is False and turn.moves == len(MOVES)
    assert len(turn.values) == len(MOVES) + 1 and len(turn.priors) == len(turn.ranks) == len(MOVES)

    # every position read again, one at a time, straight through the network: the same value and prior
    position = GoPosition.initial(5, komi=0.5, open_ended=True, liberty_planes=True)
    for i, move in enumerate(MOVES):
        action = GAME.text_to_action(move)
        legal = np.zeros(GAME.num_actions, np.bool_)
        legal[position.legal_actions()] = True
        with torch.no_grad():
            logits, value = net(torch.from_numpy(position.planes()[None]).float())
        p = torch.softmax(logits[0].masked_fill(~torch.from_numpy(legal), -float("inf")), 0).numpy()
        mine = float(value[0]) * (1 if position.to_play == turn.colour else -1)
        assert turn.values[i] == pytest.approx(mine, abs=1e-3)
        assert turn.priors[i] == pytest.approx(float(p[action]), abs=1e-4)
        assert turn.ranks[i] == 1 + int((p[legal] > p[action]).sum())
        position = position.play(action)

    # the turn: the opponent's move (white's, after the opening) with the largest fall of black's value
    falls = {i + 1: turn.values[i] - turn.values[i + 1] for i in range(2, len(MOVES)) if i % 2 == 1}
    assert turn.turn == max(falls, key=falls.get) and turn.drop == pytest.approx(max(falls.values()), abs=1e-3)
    at = turn.at_turn()
    assert at["prior"] == turn.priors[turn.turn - 1] and at["value_before"] == turn.values[turn.turn - 1]
    assert at["own_prior"] == turn.priors[turn.turn - 2] and at["own_rank"] == turn.ranks[turn.turn - 2]

    as_white = game_turn(parse_sgf(_sgf(black="pachi", white="zero")), "zero", "g", net, opening=2)
    assert as_white.won is True and as_white.turn % 2 == 1  # black's moves: 1, 3, 5...
    assert as_white.values == pytest.approx([-v for v in turn.values], abs=1e-3)


def test_summary_counts_blind_spots_and_misjudged_turns():
    def game(won, priors, values, turn, colour=1):
        return GameTurn("g", colour, won, len(priors), values, priors, [1] * len(priors), turn,
                        values[turn - 1] - values[turn])

    # black's games: white's moves are the 2nd, 4th, 6th (indices 1, 3, 5); the opening is the first 2 moves
    lost = game(False, [0.5, 0.5, 0.2, 0.005, 0.3, 0.4], [0.1, 0.2, 0.3, 0.4, -0.6, -0.5, -0.7], 4)
    lost2 = game(False, [0.5, 0.5, 0.2, 0.2, 0.3, 0.002], [0.0, -0.1, -0.2, -0.3, -0.3, -0.2, -0.9], 6)
    won = game(True, [0.5, 0.5, 0.2, 0.3, 0.3, 0.5], [0.0, 0.1, 0.2, 0.1, 0.2, 0.3, 0.9], 4)
    summary = summarise([lost, lost2, won], opening=2, low=0.01)
    assert summary["losses"]["games"] == 2 and summary["losses"]["turns_below_prior_0.01"] == 2
    assert summary["losses"]["turns_misjudged_before"] == 1  # only the first was above 0 before its turn
    assert summary["losses"]["opponent_moves_below_prior_0.01"] == 0.5  # 2 of the 4 white moves after the opening
    assert summary["losses"]["turn_move_median"] == 5 and summary["losses"]["own_move_before_rank_median"] == 1
    assert summary["wins"]["turns_below_prior_0.01"] == 0 and "draws" not in summary


def test_command_line_and_bad_input(tmp_path, go5_checkpoint, capsys):
    games = write_collection(tmp_path / "games.sgf.gz", [_sgf(), _sgf(result="B+2.5", black="pachi", white="zero")])
    assert main([str(games), "--player", "zero", "--model", str(go5_checkpoint), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [g["won"] for g in out["games"]] == [False, False] and out["summary"]["losses"]["games"] == 2
    assert out["games"][0]["turn"]["move"] == game_turn(
        parse_sgf(_sgf()), "zero", "g", load_checkpoint(go5_checkpoint)[0]).turn

    assert main([str(games), "--player", "gnugo", "--model", str(go5_checkpoint)]) == 2
    assert "'gnugo' is neither player" in capsys.readouterr().err
    nine = write_collection(tmp_path / "nine.sgf.gz", [_sgf(["E5", "D5"], size=9)])
    assert main([str(nine), "--player", "zero", "--model", str(go5_checkpoint)]) == 2
    assert "a 9x9 game, but the network is for 5x5" in capsys.readouterr().err
    illegal = write_collection(tmp_path / "illegal.sgf.gz", [_sgf(["C3", "C3"])])
    assert main([str(illegal), "--player", "zero", "--model", str(go5_checkpoint)]) == 2
    assert "move 2 (C3) is not legal" in capsys.readouterr().err
    broken = tmp_path / "broken.pt"
    broken.write_bytes(b"not a checkpoint")
    assert main([str(games), "--player", "zero", "--model", str(broken)]) == 2
    assert "broken.pt" in capsys.readouterr().err


def test_a_loss_searched_before_its_turn(tmp_path, go5_checkpoint, capsys):
    go5 = ["--set", "game.name=go", "--set", "game.size=5", "--set", "game.komi=0.5", "--set",
           "game.liberty_planes=true", "--set", "network.size=b1c8", "--set", "network.aux_heads=true"]
    games = write_collection(tmp_path / "games.sgf.gz", [_sgf(), _sgf(result="B+2.5")])
    argv = [str(games), "--player", "zero", "--model", str(go5_checkpoint), "--visits", "8", "--before", "6",
            "--opening", "0", "--json", *go5]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    lost, won = out["games"]
    assert won["searched"] is None  # only losses are searched
    turn = lost["turn"]["move"]
    # black's positions (even indices) among the 6 moves before the turn, keyed by how far before it they stood
    assert sorted(map(int, lost["searched"])) == [k for k in range(1, 7) if (turn - 1 - k) % 2 == 0
                                                  and turn - 1 - k >= 0]
    assert all(-1 <= v <= 1 for v in lost["searched"].values())
    rows = out["summary"]["losses_searched"]
    assert {int(k): r["losses"] for k, r in rows.items()} == {int(k): 1 for k in lost["searched"]}
    assert all(r["search_above_0"] == (lost["searched"][k] > 0) for k, r in rows.items())
    assert main([*argv[:-len(go5) - 1], "--set", "mcts.c_puct=0"]) == 2  # a bad override is named
    assert "c_puct" in capsys.readouterr().err


def test_evaluate_keeps_priors_on_legal_moves(go5_checkpoint):
    net, _ = load_checkpoint(go5_checkpoint)
    position = GoPosition.initial(5, komi=0.5, open_ended=True, liberty_planes=True).play("C3")
    legal = np.zeros((1, GAME.num_actions), np.bool_)
    legal[0, position.legal_actions()] = True
    priors, values = evaluate(net, position.planes()[None], legal)
    assert priors[0, GAME.text_to_action("C3")] == 0 and priors.sum() == pytest.approx(1, abs=1e-5)
    assert -1 <= values[0] <= 1
