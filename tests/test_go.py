"""Go rules tests on ASCII boards in GTP coordinates (X black, O white, top row first)."""

import numpy as np
import pytest

from zero.games.base import IllegalMove, square_symmetries
from zero.games.go import BLACK, WHITE, GoGame, GoPosition

EMPTY_5 = "\n".join(["....."] * 5)


def pos(text, to_play=BLACK, komi=7.5):
    return GoPosition.from_ascii(text, komi=komi, to_play=to_play)


def stones(p, colour):
    """GTP names of the points holding `colour`, sorted."""
    game = p.game
    return sorted(game.action_to_text(int(a)) for a in np.flatnonzero(p.board.reshape(-1) == colour))


# --- captures ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "board, to_play, move, captured",
    [
        # single stone in the middle
        ("""
         .....
         ..X..
         .XO..
         ..X..
         .....""", BLACK, "D3", ["C3"]),
        # corner stone
        ("""
         .....
         .....
         .....
         .....
         OX...""", BLACK, "A2", ["A1"]),
        # chain along the edge
        ("""
         .....
         .....
         .....
         OX...
         OX...""", BLACK, "A3", ["A1", "A2"]),
        # bent chain of four, white capturing
        ("""
         .O...
         OXO..
         OXXO.
         .OXO.
         .....""", WHITE, "C1", ["B3", "B4", "C2", "C3"]),
        # two separate groups at once
        ("""
         .X.X.
         XO.OX
         .X.X.
         .....
         .....""", BLACK, "C4", ["B4", "D4"]),
    ],
)
def test_captures(board, to_play, move, captured):
    before = pos(board, to_play)
    after = before.play(move)
    opponent = -to_play
    assert sorted(set(stones(before, opponent)) - set(stones(after, opponent))) == sorted(captured)
    assert stones(after, to_play) == sorted(stones(before, to_play) + [move])
    assert after.to_play == opponent


# --- suicide ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "board, to_play, move",
    [
        ("""
         .....
         .....
         .....
         X....
         .X...""", WHITE, "A1"),  # single stone
        ("""
         .....
         .....
         X....
         OX...
         .X...""", WHITE, "A1"),  # a group of two
        ("""
         .....
         .....
         .O...
         OXO..
         X.XO.""", BLACK, "B1"),  # connecting into a group with no liberty left (black)
        ("""
         .O.O.
         ..O..
         .....
         .....
         .....""", BLACK, "C5"),  # an eye in the middle of the edge
    ],
)
def test_suicide_is_illegal(board, to_play, move):
    p = pos(board, to_play)
    with pytest.raises(IllegalMove, match="suicide"):
        p.play(move)
    assert p.game.text_to_action(move) not in p.legal_actions()


@pytest.mark.parametrize(
    "board, move, captured",
    [
        # A1 has no empty neighbour but captures both black stones
        ("""
         .....
         .....
         O....
         XO...
         .XO..""", "A1", ["A2", "B1"]),
        # filling the last liberty of a surrounded group from inside its only eye
        ("""
         .....
         OOO..
         XXO..
         .XO..
         XXO..""", "A2", ["A1", "A3", "B1", "B2", "B3"]),
    ],
)
def test_capturing_into_suicide_point_is_legal(board, move, captured):
    p = pos(board, WHITE)
    after = p.play(move)
    assert sorted(set(stones(p, BLACK)) - set(stones(after, BLACK))) == sorted(captured)
    assert move in stones(after, WHITE)


# --- ko and superko ---------------------------------------------------------------------
KO = """
.....
.....
.XO..
XO.O.
.XO..
"""


def test_simple_ko_illegal_immediately_then_legal_after_elsewhere():
    p = pos(KO).play("C2")  # black takes B2
    assert stones(p, WHITE) == ["C1", "C3", "D2"]
    with pytest.raises(IllegalMove, match="superko"):
        p.play("B2")
    p = p.play("E5").play("A5")  # ko threat elsewhere and an answer
    q = p.play("B2")
    assert "C2" not in stones(q, BLACK) and "B2" in stones(q, WHITE)
    # now black may not retake at once
    with pytest.raises(IllegalMove, match="superko"):
        q.play("C2")


# Three kos at A (B8/C8), B (G8/H8), C (B4/C4); in each, black takes on the right
# point of the mouth and white on the left one.
TRIPLE_KO = """
.XO...XO.
XO.OX.XO.
.XO...XO.
.........
.XO......
XO.O.....
.XO......
.........
.........
"""


def _triple_ko_board():
    # ko B starts with black holding it: black stone on H8, G8 empty
    rows = [list(r) for r in TRIPLE_KO.split()]
    rows[0][5:9] = list(".XO.")
    rows[1][5:9] = list("X.XO")
    rows[2][5:9] = list(".XO.")
    return "\n".join("".join(r) for r in rows)


def test_positional_superko_triple_ko_cycle():
    p = pos(_triple_ko_board(), komi=0.5)
    # each move takes a ko; none repeats the position of two plies before
    for move in ["C8", "G8", "C4", "B8", "H8"]:
        p = p.play(move)
    # white taking ko C recreates the starting position, six plies back: superko, not simple ko
    with pytest.raises(IllegalMove, match="superko") as err:
        p.play("B4")
    assert "B4" in str(err.value)
    assert p.game.text_to_action("B4") not in p.legal_actions()
    # the same board without its history allows the move
    board_text = "\n".join("".join({1: "X", -1: "O", 0: "."}[int(v)] for v in row) for row in p.board)
    fresh = pos(board_text, to_play=WHITE, komi=0.5)
    assert "B4" in stones(fresh.play("B4"), WHITE)


# --- scoring -------------------------------------------------------------------------------
SEKI = """
.X.O.
XX.OO
OOOXX
..OX.
..OX.
"""


@pytest.mark.parametrize(
    "board, komi, expected_score, result",
    [
        (EMPTY_5, 7.5, -7.5, "W+7.5"),
        (EMPTY_5, 0.0, 0.0, "0"),
        # one stone owns the whole board
        ("\n".join(["....."] * 2 + ["..X.."] + ["....."] * 2), 7.5, 25 - 7.5, "B+17.5"),
        # dame: the middle column reaches both colours and counts for nobody
        ("\n".join([".X.O."] * 5), 0.5, -0.5, "W+0.5"),
        ("\n".join([".X.O."] * 5), 0.0, 0.0, "0"),
        # seki in the top: C5, C4 are shared liberties (neutral); black 7 stones + 3, white 8 + 5
        (SEKI, 0.5, -3.5, "W+3.5"),
            # dead stones are not removed: the lone white stone still counts for white
        ("""
         .....
         .XXX.
         .XOX.
         .XXX.
         .....""", 0.0, 24 - 1, "B+23"),
        # ... and a dead stone touching black's area turns it neutral
        ("""
         .....
         .XXX.
         .X.X.
         .XXX.
         ....O""", 0.0, 9 - 1, "B+8"),
    ],
)
def test_tromp_taylor_score(board, komi, expected_score, result):
    p = pos(board, komi=komi)
    assert p.score() == pytest.approx(expected_score)
    assert p.result_text() == result
    game, batch = p.game, p.batch
    assert game.outcome(batch, 0) == np.sign(expected_score)


# --- end of game ----------------------------------------------------------------------------
def test_two_passes_end_the_game():
    p = GoPosition.initial(5, komi=0.5).play("C3").play("pass")
    assert not p.is_over
    p = p.play("pass")
    assert p.is_over
    assert p.legal_actions() == []
    assert p.result_text() == "B+24.5"
    with pytest.raises(IllegalMove, match="game is over"):
        p.play("A1")
    # a pass between other moves does not end it
    q = GoPosition.initial(5).play("pass").play("C3").play("pass")
    assert not q.is_over


def test_move_cap_ends_the_game():
    game = GoGame(5, komi=0.5)
    batch = game.new_batch(1)
    rng = np.random.default_rng(3)
    while not game.is_over(batch, 0):
        legal = np.flatnonzero(game.legal_mask(batch, 0)[:-1])
        game.play(batch, 0, rng.choice(legal) if len(legal) else game.pass_action)
    assert game.move_count(batch, 0) == game.max_moves == 50
    assert batch.passes[0] < 2
    assert not game.legal_mask(batch, 0).any()
    assert game.outcome(batch, 0) in (-1.0, 1.0)


@pytest.mark.parametrize("move, reason", [("C3", "occupied"), ("A1", "suicide")])
def test_illegal_move_leaves_slot_unchanged(move, reason):
    game = GoGame(5)
    batch = game.new_batch(2)
    for m in ["pass", "A2", "C3", "B1"]:  # black to move; A1 is surrounded by white
        game.play(batch, 0, game.text_to_action(m))
    before = [a.copy() for a in batch.arrays()]
    with pytest.raises(IllegalMove) as err:
        game.play(batch, 0, game.text_to_action(move))
    assert err.value.move == move and err.value.reason == reason
    assert f"illegal move {move}: {reason}" in str(err.value)
    assert game.render(batch, 0) in str(err.value)
    for a, b in zip(before, batch.arrays()):
        np.testing.assert_array_equal(a, b)


def test_position_is_a_value():
    p = GoPosition.initial(9)
    q = p.play("E5")
    assert p.board.sum() == 0 and p.moves == [] and p.to_play == BLACK
    assert q.board[4, 4] == BLACK and q.moves == [40] and q.to_play == WHITE
    board = q.board
    board[0, 0] = WHITE  # a copy
    assert q.board[0, 0] == 0


def test_text_and_render():
    game = GoGame(9)
    assert game.action_to_text(0) == "A9" and game.action_to_text(80) == "J1"
    assert game.action_to_text(81) == "pass" and game.text_to_action("PASS") == 81
    assert game.text_to_action("d4") == 5 * 9 + 3
    with pytest.raises(ValueError, match="K1"):
        game.text_to_action("K1")
    text = GoPosition.initial(9).play("D4").play("E5").render()
    lines = text.splitlines()
    assert lines[0].split() == list("ABCDEFGHJ")
    assert lines[5].split() == ["5", ".", ".", ".", ".", "O", ".", ".", ".", ".", "5"]
    assert lines[6].split()[4] == "X"


# --- leaves --------------------------------------------------------------------------------
def _leaf(game, batch, slot, path, want_planes=True):
    paths = np.array([path + [0] * (4 - len(path))], np.int32)
    return game.leaf_inputs(batch, np.array([slot]), paths, np.array([len(path)]), want_planes)


def test_leaf_planes_history_order_and_colour():
    game = GoGame(9)
    batch = game.new_batch(2)
    a = game.text_to_action
    for m in ["D4", "E5"]:
        game.play(batch, 1, a(m))
    inputs = _leaf(game, batch, 1, [a("C3")])  # leaf: after D4 E5 C3, white to move
    planes = inputs.planes[0]
    assert planes.shape == (17, 9, 9) and planes.dtype == np.uint8

    def at(*names):
        board = np.zeros((9, 9), np.float32)
        for n in names:
            board.flat[a(n)] = 1
        return board

    own = [at("E5"), at("E5"), at(), at()]  # white at t, t-1, t-2 (before E5), t-3 (empty board)
    opp = [at("D4", "C3"), at("D4"), at("D4"), at()]
    for k in range(4):
        np.testing.assert_array_equal(planes[k], own[k])
        np.testing.assert_array_equal(planes[8 + k], opp[k])
    assert not planes[4:8].any() and not planes[12:16].any()
    assert not planes[16].any()  # white to move
    black = _leaf(game, batch, 1, [a("C3"), a("F6")]).planes[0]
    assert black[16].all()
    np.testing.assert_array_equal(black[0], at("D4", "C3"))
    np.testing.assert_array_equal(black[8], at("E5", "F6"))
    # slot 0 is untouched: empty board, black to move
    empty = _leaf(game, batch, 0, []).planes[0]
    assert not empty[:16].any() and empty[16].all()


def test_leaf_planes_keep_eight_boards():
    game = GoGame(9)
    batch = game.new_batch(1)
    moves = ["A1", "A5", "B1", "B5", "C1", "C5", "D1", "D5", "E1", "E5"]
    for m in moves[:7]:
        game.play(batch, 0, game.text_to_action(m))
    planes = _leaf(game, batch, 0, [game.text_to_action(m) for m in moves[7:]]).planes[0]
    # leaf after 10 moves, black to move; planes k and 8 + k hold the board after 10 - k moves
    for k in range(8):
        n = 10 - k
        white = [m for i, m in enumerate(moves[:n]) if i % 2 == 1]
        black = [m for i, m in enumerate(moves[:n]) if i % 2 == 0]
        assert sorted(game.action_to_text(int(i)) for i in np.flatnonzero(planes[k])) == sorted(black)
        assert sorted(game.action_to_text(int(i)) for i in np.flatnonzero(planes[8 + k])) == sorted(white)
    assert planes[16].all()


def test_leaf_terminal_value_after_two_passes():
    game = GoGame(9)
    batch = game.new_batch(1)
    game.play(batch, 0, game.text_to_action("E5"))  # black owns the board; white to move
    p = game.pass_action
    over = _leaf(game, batch, 0, [p, p], want_planes=False)
    assert over.planes is None
    assert over.terminal_value[0] == -1.0  # white to move at the leaf, and black won
    assert not over.legal[0].any()
    one = _leaf(game, batch, 0, [p])
    assert np.isnan(one.terminal_value[0]) and one.legal[0, p]
    # the value is from the view of the side to move at the leaf, who may be the winner
    for komi, value in [(-7.5, 1.0), (7.5, -1.0), (0.0, 0.0)]:
        game = GoGame(9, komi=komi)
        leaf = _leaf(game, game.new_batch(1), 0, [p, p], want_planes=False)  # black to move
        assert leaf.terminal_value[0] == value


def _random_positions(game, count, length, seed):
    """Positions reached by random legal play (with some passes): a batch and the move lists."""
    rng = np.random.default_rng(seed)
    batch = game.new_batch(count)
    for i in range(count):
        for _ in range(rng.integers(0, length)):
            if game.is_over(batch, i):
                break
            legal = np.flatnonzero(game.legal_mask(batch, i))
            game.play(batch, i, game.pass_action if rng.random() < 0.05 else rng.choice(legal[:-1] if len(legal) > 1 else legal))
    return batch


@pytest.mark.parametrize("size", [5, 7])
def test_leaf_legal_mask_matches_positions(size):
    game = GoGame(size, komi=0.5)
    batch = _random_positions(game, 6, 3 * size * size, seed=size)
    rng = np.random.default_rng(0)
    for i in range(len(batch)):
        # walk a few moves from slot i both as a path and through GoPosition
        p = GoPosition(game, _one_slot(game, batch, i))
        path = []
        for _ in range(3):
            if p.is_over:
                break
            a = int(rng.choice(p.legal_actions()))
            path.append(a)
            p = p.play(a)
        inputs = _leaf(game, batch, i, path)
        assert np.flatnonzero(inputs.legal[0]).tolist() == p.legal_actions()
        assert np.isnan(inputs.terminal_value[0]) != p.is_over


def _one_slot(game, batch, i):
    one = game.new_batch(1)
    game.copy_slot(batch, i, one, 0)
    return one


def test_symmetric_positions_have_symmetric_features():
    game = GoGame(7)
    perms = square_symmetries(7, 7, extra_actions=1)
    np.testing.assert_array_equal(perms, game.symmetries())
    rng = np.random.default_rng(1)
    moves = []
    p = GoPosition(game, game.new_batch(1))
    for _ in range(30):
        a = int(rng.choice(p.legal_actions()[:-1]))
        moves.append(a)
        p = p.play(a)
    batch = game.new_batch(len(perms))
    for s, perm in enumerate(perms):
        for a in moves[:-3]:
            game.play(batch, s, int(perm[a]))
    slots = np.arange(len(perms))
    paths = np.array([[perm[a] for a in moves[-3:]] for perm in perms], np.int32)
    inputs = game.leaf_inputs(batch, slots, paths, np.full(len(perms), 3))
    planes = inputs.planes.reshape(len(perms), 17, 49)
    for s, perm in enumerate(perms):
        np.testing.assert_array_equal(planes[s][:, perm[:49]], planes[0])
        np.testing.assert_array_equal(inputs.legal[s][perm], inputs.legal[0])


def test_batch_slots_do_not_leak():
    game = GoGame(5)
    batch = game.new_batch(3)
    game.play(batch, 1, game.text_to_action("C3"))
    assert game.move_count(batch, 0) == 0 and game.to_play(batch, 0) == BLACK
    assert game.to_play(batch, 1) == WHITE
    game.copy_slot(batch, 1, batch, 2)
    game.play(batch, 2, game.text_to_action("B2"))
    assert game.move_count(batch, 1) == 1 and game.move_count(batch, 2) == 2
    game.reset(batch, 2)
    assert game.move_count(batch, 2) == 0 and game.legal_mask(batch, 2).all()
    assert game.board(batch, 1).sum() == BLACK


# --- playouts -----------------------------------------------------------------------------------
def test_rollout_values_are_results_and_deterministic():
    game = GoGame(7)
    batch = _random_positions(game, 4, 20, seed=5)
    slots = np.array([0, 1, 2, 3, 0, 0], np.int32)
    paths = np.zeros((6, 2), np.int32)
    paths[5] = [game.pass_action, game.pass_action]
    depth = np.array([0, 0, 0, 0, 0, 2], np.int32)
    v1 = game.rollout_values(batch, slots, paths, depth, seed=11)
    v2 = game.rollout_values(batch, slots, paths, depth, seed=11)
    assert v1.dtype == np.float32 and v1.shape == (6,)
    assert set(v1.tolist()) <= {-1.0, 0.0, 1.0}
    np.testing.assert_array_equal(v1, v2)
    # a leaf that is already over returns its result
    assert v1[5] == _leaf(game, batch, 0, [game.pass_action] * 2).terminal_value[0]
    game = GoGame(7, komi=0.5)
    batch = game.new_batch(1)
    many = game.rollout_values(batch, np.zeros(64, np.int32), np.zeros((64, 0), np.int32), np.zeros(64, np.int32), seed=3)
    assert len(set(many.tolist())) > 1  # random playouts do differ


def test_random_moves_per_second_runs():
    stats = GoGame(9).random_moves_per_second(seconds=0.1, games=8)
    assert stats["moves"] > 0 and stats["moves_per_s"] > 0


# --- against a plain reference implementation -----------------------------------------------------
def _reference_play(board, colour, point, size, seen):
    """Plain-Python rules: the new board (tuple) or None if the move is illegal."""
    if board[point] != 0:
        return None
    b = list(board)
    b[point] = colour

    def nbrs(p):
        r, c = divmod(p, size)
        return [(r + dr) * size + c + dc for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1))
                if 0 <= r + dr < size and 0 <= c + dc < size]

    def group(p):
        todo, found, libs = [p], {p}, set()
        while todo:
            q = todo.pop()
            for n in nbrs(q):
                if b[n] == 0:
                    libs.add(n)
                elif b[n] == b[p] and n not in found:
                    found.add(n)
                    todo.append(n)
        return found, libs

    for n in nbrs(point):
        if b[n] == -colour:
            g, libs = group(n)
            if not libs:
                for q in g:
                    b[q] = 0
    if not group(point)[1]:
        return None
    b = tuple(b)
    return None if b in seen else b


@pytest.mark.parametrize("size, seed", [(5, 6), (5, 19), (7, 2)])  # the 5x5 games meet superko
def test_random_games_agree_with_reference(size, seed):
    game = GoGame(size)
    batch = game.new_batch(1)
    rng = np.random.default_rng(seed)
    board = tuple([0] * size * size)
    seen = {board}
    colour = BLACK
    while not game.is_over(batch, 0):
        expected = [a for a in range(size * size) if _reference_play(board, colour, a, size, seen) is not None]
        mask = game.legal_mask(batch, 0)
        assert np.flatnonzero(mask[:-1]).tolist() == expected
        a = int(rng.choice(expected)) if expected and rng.random() > 0.03 else game.pass_action
        game.play(batch, 0, a)
        if a != game.pass_action:
            board = _reference_play(board, colour, a, size, seen)
            seen.add(board)
        colour = -colour
        np.testing.assert_array_equal(game.board(batch, 0).reshape(-1), board)


@pytest.mark.parametrize("size", [9, 13, 19])
def test_leaf_legality_agrees_with_try_play_on_every_point(size):
    """The leaves' legal moves (read from each group's liberties, no fill a point) are exactly the points
    where try_play, the rules of a move actually played, allows a stone: suicides, captures, superko."""
    from zero.games import go_kernels as K

    game = GoGame(size)
    batch = game.new_batch(24)
    nn = game.num_points
    buf, mark, gen = np.empty(nn, np.int32), np.zeros(nn, np.int64), np.zeros(1, np.int64)
    rng = K.rng_state(size)
    checked = captures = 0
    for _ in range(12):  # random play to many lengths: dense boards, groups in atari, captures
        K.random_games(*batch.arrays(), int(batch.length.size) * 7, game.max_moves, rng, game._zobrist,
                       game._nbrs, game._diags)
        for i in range(len(batch.length)):
            if game.is_over(batch, i):
                continue
            t, c = int(batch.length[i]), int(batch.to_play[i])
            board, h = batch.history[i, t], batch.hashes[i, t]
            expected = []
            for p in range(nn):
                status, after = K.try_play(board.copy(), p, c, h, game._zobrist, game._nbrs, batch.hashes[i],
                                           t + 1, False, buf, mark, gen)
                if status == K.LEGAL:
                    expected.append(p)
                    stones_after = np.count_nonzero(board) + 1
                    b2 = board.copy()
                    K.try_play(b2, p, c, h, game._zobrist, game._nbrs, batch.hashes[i], 0, True, buf, mark, gen)
                    captures += np.count_nonzero(b2) < stones_after
            assert np.flatnonzero(game.legal_mask(batch, i)[:-1]).tolist() == expected
            checked += 1
    assert checked > 100 and captures > 10  # the boards exercised capturing moves, not only quiet ones
