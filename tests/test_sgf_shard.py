"""zero.sgf_shard and `zero sgf shard`: Go games in SGF become a shard whose targets are the games' own."""

import numpy as np
import pytest

from flows.readout import main as readout_main
from zero.cli import main
from zero.config import load_params
from zero.network import init_checkpoint
from zero.notation import sgf_to_point
from zero.sgf import write_collection
from zero.sgf_shard import sgf_shard
from zero.shards import read_shard

GO_5 = ["game.size=5", "game.komi=0.5", "network.size=b1c8", "network.aux_heads=true"]
# Black walls off columns a-c, white d-e; white's stone at bc is captured at move 15: on the final board black
# has 15 points, white 10, so B+4.5 at komi 0.5 (Tromp-Taylor, as zero's ladder referee counts).
MOVES = ("B[ca];W[da];B[cb];W[db];B[cc];W[dc];B[cd];W[dd];B[ce];W[de];"
         "B[bb];W[bc];B[bd];W[];B[ac];W[];B[]")


def _game(result: str, moves: str = MOVES, size: int = 5) -> str:
    return f"(;GM[1]FF[4]SZ[{size}]KM[0.5]PB[zero]PW[other]RE[{result}];{moves})"


def _actions(moves: str = MOVES) -> list[int]:
    points = [m[2:-1] for m in moves.split(";")]  # B[ca] -> ca, W[] -> a pass
    return [sgf_to_point(p, 5, 5) if p else 25 for p in points]


@pytest.fixture
def params():
    return load_params(None, GO_5)


def test_a_counted_game_gives_the_moves_its_result_and_its_final_board_as_targets(tmp_path, params):
    path = write_collection(tmp_path / "games.sgf.gz", [_game("B+4.5"), _game("W+R"), _game("B+10.5")])
    shard, summary = sgf_shard([path], params, opening=2)
    moves = _actions()
    per_game = len(moves) - 2
    assert (summary.games, summary.positions) == (3, 3 * per_game)
    assert (summary.counted, summary.resigned, summary.count_differs) == (1, 1, 1)
    # the policy target is the move played, the value the result from the side to move's view (black moves first)
    assert [int(a) for a in shard.policy[:per_game].astype(np.float32).argmax(axis=1)] == moves[2:]
    black_to_move = np.arange(2, len(moves)) % 2 == 0
    assert list(shard.value[:per_game]) == [1 if b else -1 for b in black_to_move]
    assert list(shard.value[per_game: 2 * per_game]) == [-1 if b else 1 for b in black_to_move]  # W+R
    assert list(shard.result) == [1, -1, 1] and list(shard.resigned) == [False, True, False]
    # ownership and score only for the game whose count its final board gives
    assert shard.aux_mask.tolist() == [True] * per_game + [False] * (2 * per_game)
    columns = np.arange(25) % 5
    black_owns = np.where(columns <= 2, 1, -1)
    for i, b in enumerate(black_to_move):
        assert list(shard.ownership[i]) == list(black_owns if b else -black_owns)
        assert shard.score[i] == pytest.approx(4.5 if b else -4.5)
    # the white stone at bc is on the board from move 12 to move 15 and its point is black's at the end: dead
    bc = sgf_to_point("bc", 5, 5)
    c = shard.plane_shape[0]
    planes = shard.unpacked_planes().reshape(-1, c, 25)
    on_board = [i for i in range(per_game) if planes[i, 0, bc] + planes[i, 8, bc] > 0]
    assert on_board == [12 - 2, 13 - 2, 14 - 2]  # the positions before moves 13, 14 and 15
    assert all(shard.ownership[i, bc] == (1 if black_to_move[i] else -1) for i in on_board)


def test_the_command_writes_a_shard_flows_readout_reads(tmp_path, capsys):
    path = write_collection(tmp_path / "games.sgf.gz", [_game("B+4.5"), _game("W+R")])
    sets = [a for s in GO_5 for a in ("--set", s)]
    assert main(["sgf", "shard", str(path), "--out", str(tmp_path / "s.npz"), "--opening", "0", *sets]) == 0
    said = capsys.readouterr().out
    assert "34 positions of 2 games" in said and "1 games counted" in said and "1 resigned" in said
    shard = read_shard(tmp_path / "s.npz")
    assert len(shard.value) == 34 and int(shard.aux_mask.sum()) == 17
    init_checkpoint(load_params(None, GO_5), tmp_path / "net.pt", 0)
    assert readout_main([str(tmp_path / "s.npz"), "--model", f"n={tmp_path / 'net.pt'}",
                         "--json", str(tmp_path / "r.json")]) == 0
    table = capsys.readouterr().out
    assert "34 positions (17 with ownership targets)" in table
    assert "of 3" in table  # the one white stone, dead on the board in 3 positions


@pytest.mark.parametrize("game, says", [
    (_game("B+4.5", MOVES.replace("B[cb]", "B[ca]", 1)), "games.sgf.gz#1: move 3 (C5) is not legal"),
    (_game("", MOVES), "games.sgf.gz#1: no result a value target can come from"),
    (_game("B+4.5", "B[ca];W[da]", size=7), "games.sgf.gz#1: a go game on 7x7, not Go on 5x5"),
])
def test_a_game_that_cannot_be_read_is_refused_naming_it_and_no_shard_is_written(tmp_path, capsys, game, says):
    path = write_collection(tmp_path / "games.sgf.gz", [game])
    sets = [a for s in GO_5 for a in ("--set", s)]
    assert main(["sgf", "shard", str(path), "--out", str(tmp_path / "s.npz"), *sets]) == 2
    assert says in capsys.readouterr().err
    assert not (tmp_path / "s.npz").exists()
