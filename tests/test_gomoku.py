"""Gomoku rules on ASCII boards in GTP coordinates, and the batch kernels' consistency."""

import numpy as np
import pytest

from zero.games.base import IllegalMove
from zero.games.gomoku import GomokuGame, GomokuPosition


def reference_winner(board: np.ndarray, k: int) -> int:
    """Brute force, independent of the engine: the colour with k in a row anywhere, else 0."""
    h, w = board.shape
    found = set()
    for r in range(h):
        for c in range(w):
            for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
                cells = [(r + i * dr, c + i * dc) for i in range(k)]
                if all(0 <= y < h and 0 <= x < w for y, x in cells):
                    colours = {int(board[y, x]) for y, x in cells}
                    if len(colours) == 1 and 0 not in colours:
                        found |= colours
    assert len(found) <= 1
    return found.pop() if found else 0


def leaves(game, batch, rows):
    """leaf_inputs for rows of (slot, [actions or GTP text])."""
    depth = np.array([len(path) for _, path in rows], np.int32)
    paths = np.full((len(rows), max(1, depth.max())), -1, np.int32)
    for l, (_, path) in enumerate(rows):
        paths[l, : len(path)] = [game.text_to_action(m) if isinstance(m, str) else m for m in path]
    slots = np.array([s for s, _ in rows], np.int32)
    return slots, paths, depth


def transform_planes(planes: np.ndarray, perm: np.ndarray) -> np.ndarray:
    """[C, H, W] planes moved by a symmetry: the value at point a goes to perm[a]."""
    c, h, w = planes.shape
    out = np.zeros((c, h * w), planes.dtype)
    out[:, perm] = planes.reshape(c, h * w)
    return out.reshape(c, h, w)


# --- wins ----------------------------------------------------------------------

WINS = [
    # (name, board, k, move, winner)
    ("horizontal middle", """
        . . . . . . .
        . . . . . . .
        O O O O . . .
        . X X . X X .
        . . . . . . .
        . . . . . . .
        . . . . . . .""", 5, "D4", 1),
    ("horizontal top edge from corner", """
        X X X X . . .
        . . . . . . .
        . . . . . . .
        . . . . . . .
        . . . . . . .
        . . . . . . .
        O O O . . . O""", 5, "E7", 1),
    ("vertical right edge to corner", """
        . . . . . . .
        . . . . . . .
        . . O . . . .
        . . O . . . X
        . . O . . . X
        . . O . . . X
        . . . . . . X""", 5, "G5", 1),
    ("vertical white wins", """
        . . . . . . .
        . O . . . . .
        . O . . . X .
        . O . . . X .
        . . . . . X .
        . O . . . . .
        X . . . . . X""", 5, "B3", -1),
    ("diagonal from top-left corner", """
        . . . . . . .
        . X . . . . .
        . . X . . . .
        . . . X . . .
        . . . . X . .
        . . . . . . .
        O O O O . . .""", 5, "A7", 1),
    ("diagonal into bottom-right corner", """
        . . . . . . .
        . . . . . . .
        . . X . . . .
        . . . X . . .
        . . . . X . .
        . . . . . X .
        . O O O O . .""", 5, "G1", 1),
    ("anti-diagonal from bottom-left corner", """
        . . . . . . .
        . . . . . . .
        . . . . X . O
        . . . X . . O
        . . X . . . O
        . X . . . . O
        . . . . . . .""", 5, "A1", 1),
    ("anti-diagonal white, gap in the middle", """
        . . . . . . O
        . . . . . O .
        . . . . . . .
        . . . O . . .
        . . O . . . .
        X X X X . . .
        . . . . X . .""", 5, "E5", -1),
    ("overline of six wins", """
        . . . . . . . .
        . . . . . . . .
        X X X . X X . .
        . . . . . . . .
        O O . O O . . .
        . . . . O . . .
        . . . . . . . .
        . . . . . . . .""", 5, "D6", 1),
    ("overline of seven wins", """
        . . . . . . . .
        . . . . . . . .
        X X X . X X X .
        . . . . . . . .
        O O . O O . . .
        . . . . O O . .
        . . . . . . . .
        . . . . . . . .""", 5, "D6", 1),
    ("k=4 on 6x6 diagonal", """
        X . . . . .
        . X . . . .
        . . X . . .
        . . . . . .
        O O O . . .
        . . . . . .""", 4, "D3", 1),
]


@pytest.mark.parametrize("name,board,k,move,winner", WINS, ids=[w[0] for w in WINS])
def test_win(name, board, k, move, winner):
    position = GomokuPosition.from_ascii(board, k=k)
    assert not position.is_over and position.winner is None
    assert position.to_play == winner
    after = position.play(move)
    assert after.is_over
    assert after.winner == winner
    assert reference_winner(after.board, k) == winner
    assert after.legal_actions() == []
    assert after.game.outcome(after.batch, 0) == winner == after.game.score(after.batch, 0)


NO_WINS = [
    ("four of five", """
        . . . . . . .
        . . . . . . .
        . X X . X . .
        . . . . . . .
        . O O . O . .
        . . . . . . .
        . . . . . . .""", 5, "D5"),
    ("broken line does not count", """
        . . . . . . .
        . . . . . . .
        X X . X X . .
        . . . . . . .
        . O O O O . .
        . . . . . . .
        . . . . . . .""", 5, "F5"),
    ("other colour filling the gap", """
        . . . . . . .
        . . . . . . .
        X X . X X . .
        . . . . . . .
        . O O . . . .
        . . . . O . .
        O . . . . . X""", 5, "C5"),
    ("k-1 for k=4 on the edge", """
        X X . . . .
        . . . . . .
        . . . . . .
        . . . . . .
        . . . . . .
        . . . . O O""", 4, "C6"),
]


@pytest.mark.parametrize("name,board,k,move", NO_WINS, ids=[w[0] for w in NO_WINS])
def test_no_win(name, board, k, move):
    after = GomokuPosition.from_ascii(board, k=k).play(move)
    assert not after.is_over and after.winner is None
    assert reference_winner(after.board, k) == 0


def test_line_through_the_gap_is_white_when_white_fills_it():
    position = GomokuPosition.from_ascii("""
        . . . . . . .
        . . . . . . .
        O O . O O . .
        . . . . . . .
        X X . X X X .
        . . . . . . .
        . . . . . . .""", k=5)
    assert position.to_play == -1
    after = position.play("C5")
    assert after.winner == -1


# --- draws ---------------------------------------------------------------------


def block_board(height, width):
    """2x2 blocks in a checkerboard: no three in a row in any direction."""
    r, c = np.indices((height, width))
    return np.where((r + c // 2) % 2 == 0, 1, -1).astype(np.int8)


@pytest.mark.parametrize("height,width,k", [(4, 4, 3), (6, 6, 4), (6, 6, 3), (6, 8, 4)])
def test_full_board_without_a_line_is_a_draw(height, width, k):
    full = block_board(height, width)
    assert reference_winner(full, k) == 0 and (full == 1).sum() == (full == -1).sum()
    blacks = [int(a) for a in np.flatnonzero(full.reshape(-1) == 1)]
    whites = [int(a) for a in np.flatnonzero(full.reshape(-1) == -1)]
    position = GomokuPosition.initial(height, width, k)
    for b, w in zip(blacks, whites):
        position = position.play(b)
        assert not position.is_over
        position = position.play(w)
    assert position.is_over
    assert position.winner == 0
    assert position.game.outcome(position.batch, 0) == 0
    assert position.legal_actions() == []
    assert (position.board == full).all()
    assert position.game.move_count(position.batch, 0) == height * width


def test_from_ascii_full_board_is_a_draw():
    position = GomokuPosition.from_ascii("""
        X X O O
        O O X X
        X X O O
        O O X X""", k=3)
    assert position.is_over and position.winner == 0


ALMOST_FULL = """
    X X . O
    O O X X
    X X O O
    O O X X"""  # the block board missing white's C4


def test_last_stone_on_a_full_board_can_still_win():
    position = GomokuPosition.from_ascii(ALMOST_FULL, k=3)
    assert position.to_play == -1
    assert position.play("C4").winner == 0
    # had black the last stone instead, C4 would make X X X
    after = GomokuPosition.from_ascii(ALMOST_FULL, k=3, to_play=1).play("C4")
    assert after.is_over and after.winner == 1


# --- illegal moves ---------------------------------------------------------------


def test_occupied_point_is_illegal_and_changes_nothing():
    position = GomokuPosition.initial(7, 7, 5).play("D4").play("C3")
    board, to_play, moves = position.board, position.to_play, position.moves
    with pytest.raises(IllegalMove) as info:
        position.play("D4")
    assert info.value.move == "D4" and info.value.reason == "occupied"
    assert "D4" in str(info.value) and "occupied" in str(info.value)
    assert position.render() in str(info.value)
    assert (position.board == board).all() and position.to_play == to_play and position.moves == moves


def test_move_after_the_game_is_over_is_illegal():
    position = GomokuPosition.from_ascii("""
        . . . . .
        X X X . .
        O O . . .
        . . . . .
        . . . . O""", k=4)
    over = position.play("D4")
    assert over.is_over
    for move in ("A1", "B4"):  # empty and occupied: the game being over comes first
        with pytest.raises(IllegalMove, match="game is over") as info:
            over.play(move)
        assert info.value.move == move and over.render() in str(info.value)
    assert over.is_over and over.winner == 1 and len(over.legal_actions()) == 0


@pytest.mark.parametrize("move", ["Z99", "H1", "A8", "pass", 49, -1, -5])
def test_off_the_board_and_pass_are_illegal(move):
    position = GomokuPosition.initial(7, 7, 5)
    with pytest.raises(IllegalMove) as info:
        position.play(move)
    assert info.value.reason in ("off the board", "gomoku has no pass")
    assert position.render() in str(info.value)


def test_batch_play_illegal_leaves_slot_unchanged():
    game = GomokuGame(6, 6, 4)
    batch = game.new_batch(2)
    game.play(batch, 1, game.text_to_action("C3"))
    before = {f: getattr(batch, f).copy() for f in ("board", "to_play", "length", "last_move", "winner", "over")}
    with pytest.raises(IllegalMove, match="C3: occupied"):
        game.play(batch, 1, game.text_to_action("C3"))
    for f, v in before.items():
        assert (getattr(batch, f) == v).all(), f


# --- batches -------------------------------------------------------------------------


def test_batch_slots_are_independent_and_copy_reset_work():
    game = GomokuGame(6, 6, 4)
    batch = game.new_batch(3)
    for m in ("A1", "B2", "A2", "B3", "A3", "B4", "A4"):
        game.play(batch, 0, game.text_to_action(m))
    game.play(batch, 2, game.text_to_action("F6"))
    assert game.is_over(batch, 0) and game.outcome(batch, 0) == 1
    assert not game.is_over(batch, 1) and game.move_count(batch, 1) == 0 and game.to_play(batch, 1) == 1
    assert game.move_count(batch, 2) == 1 and game.to_play(batch, 2) == -1
    assert not game.legal_mask(batch, 0).any()
    other = game.new_batch(1)
    game.copy_slot(batch, 2, other, 0)
    assert game.render(other, 0) == game.render(batch, 2)
    assert game.legal_mask(other, 0).sum() == 35
    game.reset(batch, 0)
    assert not game.is_over(batch, 0) and game.legal_mask(batch, 0).all() and game.to_play(batch, 0) == 1


def test_text_round_trip_and_render():
    game = GomokuGame(6, 8, 4)
    assert [game.text_to_action(game.action_to_text(a)) for a in range(game.num_actions)] == list(range(48))
    assert game.action_to_text(0) == "A6" and game.action_to_text(47) == "H1"
    assert game.text_to_action("h1") == 47
    for off in ("J1", "A7", "A0"):
        with pytest.raises(ValueError, match=off):
            game.text_to_action(off)
    wide = GomokuGame(6, 9, 4)  # columns skip I
    assert wide.action_to_text(8) == "J6" and wide.text_to_action("j1") == 53
    position = GomokuPosition.initial(6, 8, 4).play("A6").play("H1")
    lines = position.render().splitlines()
    assert lines[0].split() == list("ABCDEFGH") == lines[-1].split()
    assert lines[1].split() == ["6", "X"] + ["."] * 7 + ["6"]
    assert lines[6].split() == ["1"] + ["."] * 7 + ["O", "1"]


def test_game_attributes():
    game = GomokuGame()
    assert (game.name, game.height, game.width, game.k) == ("gomoku", 15, 15, 5)
    assert game.num_actions == game.max_moves == 225 and game.num_planes == 4 and game.pass_action == -1
    with pytest.raises(ValueError, match="k=7"):
        GomokuGame(6, 6, 7)


# --- leaf_inputs ---------------------------------------------------------------------


def test_leaf_inputs_planes_for_a_known_position_and_path():
    game = GomokuGame(5, 5, 4)
    batch = game.new_batch(2)
    game.play(batch, 1, game.text_to_action("C3"))  # black
    before = batch.board.copy()
    slots, paths, depth = leaves(game, batch, [(1, ["D4", "B2"]), (0, []), (1, ["D4"])])
    inputs = game.leaf_inputs(batch, slots, paths, depth)
    assert (batch.board == before).all()  # the scratch board is a copy

    planes = inputs.planes
    assert planes.shape == (3, 4, 5, 5) and planes.dtype == np.uint8
    # leaf 0: black C3, white D4, black B2; white to move
    own = np.zeros((5, 5)); own[1, 3] = 1  # D4 is row 1, col 3
    opp = np.zeros((5, 5)); opp[2, 2] = 1; opp[3, 1] = 1  # C3, B2
    last = np.zeros((5, 5)); last[3, 1] = 1
    assert (planes[0, 0] == own).all() and (planes[0, 1] == opp).all()
    assert (planes[0, 2] == last).all() and (planes[0, 3] == 0).all()
    # leaf 1: the empty board, black to move, no last move
    assert (planes[1, :3] == 0).all() and (planes[1, 3] == 1).all()
    # leaf 2: black C3, white D4; black to move
    assert planes[2, 0, 2, 2] == 1 and planes[2, 1, 1, 3] == 1 and planes[2, 0].sum() == planes[2, 1].sum() == 1
    assert planes[2, 2, 1, 3] == 1 and planes[2, 2].sum() == 1 and (planes[2, 3] == 1).all()

    legal = inputs.legal
    assert legal.shape == (3, 25) and legal.dtype == np.bool_
    assert set(np.flatnonzero(~legal[0])) == {game.text_to_action(m) for m in ("C3", "D4", "B2")}
    assert legal[1].all() and legal[2].sum() == 23
    assert np.isnan(inputs.terminal_value).all()

    without = game.leaf_inputs(batch, slots, paths, depth, want_planes=False)
    assert without.planes is None and (without.legal == legal).all()


def test_leaf_inputs_after_a_winning_path_is_a_loss_for_the_side_to_move():
    position = GomokuPosition.from_ascii("""
        . . . . .
        X X X . .
        O O . . .
        . . . . .
        . . . . O""", k=4)
    game, batch = position.game, position.batch
    rows = [(0, ["D4"]), (0, ["A1", "C3", "E2", "D3"]), (0, ["D3", "D4"]), (0, [])]
    inputs = game.leaf_inputs(batch, *leaves(game, batch, rows))
    assert inputs.terminal_value.dtype == np.float32
    assert inputs.terminal_value[0] == -1  # black made four; white, to move, has lost
    assert inputs.terminal_value[1] == -1  # white made four; black, to move, has lost
    assert np.isnan(inputs.terminal_value[2:]).all()  # white blocked at D4
    assert not inputs.legal[:2].any()
    assert inputs.legal[2].sum() == 25 - 8 and inputs.legal[3].sum() == 25 - 6
    assert not game.is_over(batch, 0)


def test_leaf_inputs_draw_and_finished_slot():
    position = GomokuPosition.from_ascii(ALMOST_FULL, k=3)
    game = position.game
    inputs = game.leaf_inputs(position.batch, *leaves(game, position.batch, [(0, ["C4"])]))
    assert inputs.terminal_value[0] == 0 and not inputs.legal.any()
    won = GomokuPosition.initial(4, 4, 3)
    for m in ("A1", "B3", "A2", "C3", "A3"):
        won = won.play(m)
    inputs = game.leaf_inputs(won.batch, *leaves(game, won.batch, [(0, [])]))
    assert won.is_over and inputs.terminal_value[0] == -1 and not inputs.legal.any()


def test_leaf_inputs_match_positions_played_move_by_move():
    rng = np.random.default_rng(0)
    game = GomokuGame(6, 6, 4)
    batch = game.new_batch(1)
    game.play(batch, 0, 14)
    start = GomokuPosition(game, batch, (14,))
    rows, expected = [], []
    for _ in range(20):
        position, path = start, []
        for _ in range(rng.integers(0, 12)):
            if position.is_over:
                break
            a = int(rng.choice(position.legal_actions()))
            position, path = position.play(a), path + [a]
        rows.append((0, path))
        expected.append(position)
    inputs = game.leaf_inputs(batch, *leaves(game, batch, rows))
    for l, position in enumerate(expected):
        assert (inputs.planes[l] == position.planes()).all()
        assert (inputs.legal[l] == game.legal_mask(position.batch, 0)).all()
        if position.is_over:
            assert inputs.terminal_value[l] == position.winner * position.to_play
        else:
            assert np.isnan(inputs.terminal_value[l])


# --- random games against the brute-force referee ---------------------------------------


@pytest.mark.parametrize("height,width,k,seed", [(6, 6, 4, 0), (6, 8, 4, 1), (5, 7, 3, 2), (8, 8, 5, 3)])
def test_random_games_agree_with_reference(height, width, k, seed):
    rng = np.random.default_rng(seed)
    for _ in range(15):
        position = GomokuPosition.initial(height, width, k)
        while not position.is_over:
            position = position.play(int(rng.choice(position.legal_actions())))
            ref = reference_winner(position.board, k)
            full = (position.board != 0).all()
            assert position.is_over == (ref != 0 or full)
            if position.is_over:
                assert position.winner == ref


# --- symmetries ---------------------------------------------------------------------------


@pytest.mark.parametrize("height,width,count", [(7, 7, 8), (6, 8, 4), (8, 6, 4)])
def test_symmetries_are_permutations_identity_first(height, width, count):
    perms = GomokuGame(height, width, 4).symmetries()
    assert perms.shape == (count, height * width)
    assert (perms[0] == np.arange(height * width)).all()
    for perm in perms:
        assert sorted(perm) == list(range(height * width))
    assert len({tuple(p) for p in perms}) == count


@pytest.mark.parametrize("height,width,k", [(7, 7, 4), (6, 8, 4)])
def test_planes_of_a_transformed_position_are_the_transformed_planes(height, width, k):
    game = GomokuGame(height, width, k)
    rng = np.random.default_rng(5)
    position = GomokuPosition.initial(height, width, k)
    while len(position.moves) < 9 and not position.is_over:
        position = position.play(int(rng.choice(position.legal_actions())))
    for perm in game.symmetries():
        moved = GomokuPosition.initial(height, width, k)
        for a in position.moves:
            moved = moved.play(int(perm[a]))
        assert (moved.planes() == transform_planes(position.planes(), perm)).all()
        legal = np.zeros(game.num_actions, bool)
        legal[perm] = game.legal_mask(position.batch, 0)
        assert (game.legal_mask(moved.batch, 0) == legal).all()


@pytest.mark.parametrize("name,board,k,move,winner", WINS, ids=[w[0] for w in WINS])
def test_wins_are_wins_under_every_symmetry(name, board, k, move, winner):
    position = GomokuPosition.from_ascii(board, k=k)
    game = position.game
    for perm in game.symmetries():
        flat = np.zeros(game.num_actions, np.int8)
        flat[perm] = position.board.reshape(-1)
        text = "\n".join("".join(".XO"[v] for v in row) for row in flat.reshape(game.height, game.width))
        moved = GomokuPosition.from_ascii(text, k=k)
        assert not moved.is_over
        after = moved.play(int(perm[game.text_to_action(move)]))
        assert after.winner == winner


def test_rectangular_board_wins_vertically_and_diagonally():
    position = GomokuPosition.from_ascii("""
        . . . . . . . .
        . . . . . . . X
        . . . . . . X .
        . . . . . X . .
        . . . . . . . .
        O O O . . . . .""", k=4)
    assert position.game.symmetries().shape == (4, 48)
    assert position.play("E2").winner == 1
    column = GomokuPosition.initial(6, 8, 4)
    for m in ("H6", "A1", "H5", "A2", "H4", "A3", "B1", "A4"):
        column = column.play(m)
    assert column.winner == -1


# --- rollouts -----------------------------------------------------------------------------


def test_rollout_values_are_results_and_deterministic_per_seed():
    game = GomokuGame(6, 6, 4)
    batch = game.new_batch(2)
    game.play(batch, 1, game.text_to_action("C3"))
    rows = [(i % 2, [] if i % 3 else ["D4"]) for i in range(64)]
    slots, paths, depth = leaves(game, batch, rows)
    before = batch.board.copy()
    a = game.rollout_values(batch, slots, paths, depth, seed=7)
    b = game.rollout_values(batch, slots, paths, depth, seed=7)
    c = game.rollout_values(batch, slots, paths, depth, seed=8)
    assert a.dtype == np.float32 and a.shape == (64,)
    assert set(np.unique(a)) <= {-1.0, 0.0, 1.0}
    assert (a == b).all()
    assert not (a == c).all()
    assert len(set(a.tolist())) > 1  # playouts from one leaf differ from leaf to leaf
    assert (batch.board == before).all()


def test_rollout_values_of_decided_leaves():
    draw = GomokuPosition.from_ascii(ALMOST_FULL, k=3)
    game = draw.game
    assert game.rollout_values(draw.batch, *leaves(game, draw.batch, [(0, [])]), seed=1)[0] == 0
    forced = GomokuPosition.from_ascii(ALMOST_FULL, k=3, to_play=1)  # the last stone makes X X X
    assert game.rollout_values(forced.batch, *leaves(game, forced.batch, [(0, [])]), seed=1)[0] == 1
    won = GomokuPosition.initial(4, 4, 3)
    for m in ("A1", "B3", "A2", "C3", "A3"):
        won = won.play(m)
    assert game.rollout_values(won.batch, *leaves(game, won.batch, [(0, [])]), seed=1)[0] == -1


def test_rollouts_favour_the_side_about_to_win():
    position = GomokuPosition.from_ascii("""
        . . . . . . .
        . . . . . . .
        . X X X X . .
        . . . . . . .
        . O O O . . .
        . . . . . . O
        . . . . . . .""", k=5)
    game = position.game
    values = game.rollout_values(position.batch, *leaves(game, position.batch, [(0, [])] * 400), seed=3)
    assert values.mean() > 0.2  # black to move: either end of the four wins at once
