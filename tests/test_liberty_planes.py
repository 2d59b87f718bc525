"""game.liberty_planes: KataGo's liberty features as a Go switch, and the widened network a line starts from."""

import numpy as np
import pytest
import torch

from zero.config import board_shape, params_from_dict
from zero.games import make_game
from zero.games.go import BLACK, WHITE, GoGame, GoPosition
from zero.network import (
    CheckpointError, NetConfig, ZeroNet, check_network_fits, load_checkpoint, save_checkpoint, widen_inputs,
)
from zero.sgf import read_collection


def _root_planes(game, batch, slot=0):
    return game.leaf_inputs(batch, np.array([slot], np.int32), np.zeros((1, 1), np.int32),
                            np.zeros(1, np.int32)).planes[0]


def _reference_liberty_planes(board: np.ndarray, to_play: int) -> np.ndarray:
    """The six planes by a plain flood fill over an [N, N] board."""
    n = board.shape[0]
    out = np.zeros((6, n, n), np.float32)
    seen = np.zeros_like(board, bool)
    for r in range(n):
        for c in range(n):
            if board[r, c] == 0 or seen[r, c]:
                continue
            colour, group, libs, todo = board[r, c], [], set(), [(r, c)]
            seen[r, c] = True
            while todo:
                y, x = todo.pop()
                group.append((y, x))
                for yy, xx in ((y - 1, x), (y + 1, x), (y, x - 1), (y, x + 1)):
                    if 0 <= yy < n and 0 <= xx < n:
                        if board[yy, xx] == 0:
                            libs.add((yy, xx))
                        elif board[yy, xx] == colour and not seen[yy, xx]:
                            seen[yy, xx] = True
                            todo.append((yy, xx))
            k = (0 if colour == to_play else 3) + min(len(libs), 3) - 1
            for y, x in group:
                out[k, y, x] = 1.0
    return out


def test_liberty_planes_on_a_known_board():
    position = GoPosition.from_ascii("""
        X O . . .
        X O . X X
        . . . X O
        . . . . O
        . . . . .
    """, to_play=BLACK)
    game = GoGame(5, liberty_planes=True)
    assert game.num_planes == 23 and GoGame(5).num_planes == 17
    batch = game.new_batch(1)
    game.set_position(batch, 0, position.board, BLACK)
    planes = _root_planes(game, batch)
    assert planes.shape == (23, 5, 5)

    def points(k):
        return sorted(game.action_to_text(int(a)) for a in np.flatnonzero(planes[17 + k].reshape(-1)))

    # black (to move): A5-A4 has one liberty (A3); D4-E4-D3 five
    assert points(0) == ["A4", "A5"] and points(1) == [] and points(2) == ["D3", "D4", "E4"]
    # white: E3-E2 has two (D2, E1); B5-B4 three (C5, C4, B3)
    assert points(3) == [] and points(4) == ["E2", "E3"] and points(5) == ["B4", "B5"]
    # from white's side the two halves swap
    game.set_position(batch, 0, position.board, WHITE)
    swapped = _root_planes(game, batch)
    np.testing.assert_array_equal(swapped[17:20], planes[20:23])
    np.testing.assert_array_equal(swapped[20:23], planes[17:20])


@pytest.mark.parametrize("size, seed", [(7, 1), (9, 2)])
def test_liberty_planes_match_a_flood_fill_and_leave_the_paper_planes_alone(size, seed):
    rng = np.random.default_rng(seed)
    plain, wide = GoGame(size), GoGame(size, liberty_planes=True)
    batch_p, batch_w = plain.new_batch(1), wide.new_batch(1)
    checked = 0
    for move in range(3 * size * size):
        if plain.is_over(batch_p, 0):
            break
        p, w = _root_planes(plain, batch_p), _root_planes(wide, batch_w)
        np.testing.assert_array_equal(w[:17], p)  # the paper's planes, byte for byte
        board = plain.board(batch_p, 0)
        np.testing.assert_array_equal(w[17:], _reference_liberty_planes(board, plain.to_play(batch_p, 0)))
        checked += int((board != 0).sum() > 0)
        legal = np.flatnonzero(plain.legal_mask(batch_p, 0))
        action = int(rng.choice(legal[:-1])) if len(legal) > 1 and rng.random() > 0.03 else plain.pass_action
        plain.play(batch_p, 0, action)
        wide.play(batch_w, 0, action)
    assert checked > 20
    # every stone is on exactly one liberty plane
    np.testing.assert_array_equal(w[17:].sum(axis=0), (board != 0).astype(np.float32))


def test_searched_leaves_get_the_planes_of_the_board_they_reach():
    game = GoGame(5, liberty_planes=True)
    batch = game.new_batch(1)
    a = game.text_to_action
    path = [a("C3"), a("C4"), a("D4")]
    leaf = game.leaf_inputs(batch, np.array([0], np.int32), np.array([path], np.int32), np.array([3], np.int32))
    after = GoPosition.initial(5).play("C3").play("C4").play("D4")
    expected = _reference_liberty_planes(after.board, WHITE)
    np.testing.assert_array_equal(leaf.planes[0, 17:], expected)


def test_positions_keep_the_switch_as_the_game_grows():
    position = GoPosition.initial(5, open_ended=True, liberty_planes=True)
    assert position.game.num_planes == 23
    for _ in range(60):  # past 2*N*N moves: the open-ended game is rebuilt with a longer horizon
        position = position.play("pass")
    assert position.game.liberty_planes and position.game.num_planes == 23
    assert GoPosition.initial(5).game.num_planes == 17


def test_the_switch_is_off_by_default_and_keeps_params_hashes():
    default = params_from_dict({"game": {"name": "go", "size": 9}})
    off = params_from_dict({"game": {"name": "go", "size": 9, "liberty_planes": False}})
    on = params_from_dict({"game": {"name": "go", "size": 9, "liberty_planes": True}})
    assert default.digest() == off.digest() != on.digest()
    assert "liberty_planes" not in default.model_dump()["game"]
    assert make_game(on.game).num_planes == 23 == board_shape(on.game)[0]
    assert make_game(default.game).num_planes == 17 == board_shape(default.game)[0]
    with pytest.raises(ValueError, match="Gomoku has no liberties"):
        params_from_dict({"game": {"name": "gomoku", "height": 6, "width": 6, "k": 4, "liberty_planes": True}})


def _net(in_planes, seed=0):
    torch.manual_seed(seed)
    net = ZeroNet(NetConfig(in_planes=in_planes, height=5, width=5, num_actions=26, blocks=2, filters=16,
                            value_hidden=16, pooling_every=1, pooling_channels=4, aux_heads=True))
    for m in net.modules():  # batch norms with statistics of their own, so that a wrong copy would show
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 1.5)
    return net.eval()


def test_widened_network_computes_what_it_was_whatever_the_new_planes_hold():
    net = _net(17)
    wide = widen_inputs(net, 23)
    assert wide.config.in_planes == 23
    x = (torch.rand(8, 23, 5, 5) < 0.4).float()
    with torch.no_grad():
        for got, want in zip(wide.forward_aux(x), net.forward_aux(x[:, :17])):
            torch.testing.assert_close(got, want, rtol=0, atol=0)
    assert wide.stem[0].weight[:, 17:].abs().sum() == 0
    with pytest.raises(ValueError, match="does not narrow"):
        widen_inputs(wide, 17)


def test_a_checkpoint_for_the_other_setting_is_refused_with_the_switch_named(tmp_path):
    path = tmp_path / "wide.pt"
    save_checkpoint(_net(23), path, checksum=True)
    net, _ = load_checkpoint(path)
    with pytest.raises(CheckpointError, match=r"game.liberty_planes: true \(--set game.liberty_planes=true\)"):
        check_network_fits(net, GoGame(5), path, "go-5")
    check_network_fits(net, GoGame(5, liberty_planes=True), path, "go-5")
    with pytest.raises(CheckpointError, match="game.liberty_planes: false"):
        check_network_fits(_net(17), GoGame(5, liberty_planes=True), path, "go-5")


def test_a_line_with_the_switch_starts_from_a_champion_without_it(tmp_path):
    from flows.stages import _start_from
    from zero.shards import file_sha256

    champion = tmp_path / "champion.pt"
    save_checkpoint(_net(17), champion, {"generation": 11}, checksum=True)
    params = params_from_dict({"game": {"name": "go", "size": 5, "liberty_planes": True}})
    out = tmp_path / "g0.pt"
    _start_from(params, champion, out)
    net, meta = load_checkpoint(out)  # its checksum verified
    assert net.config.in_planes == 23 and meta["widened_from"] == file_sha256(champion)
    assert meta["generation"] == 11
    assert not list(tmp_path.glob("*.tmp"))
    plain = params_from_dict({"game": {"name": "go", "size": 5}})
    with pytest.raises(ValueError, match=r"\(23 input planes\) and the params' game has 17: set game.liberty_planes: true"):
        _start_from(plain, out, tmp_path / "again.pt")
    with pytest.raises(ValueError, match="another game or board"):
        _start_from(params_from_dict({"game": {"name": "go", "size": 7}}), out, tmp_path / "again.pt")


def _small_params(**game):
    return params_from_dict({"game": {"name": "go", "size": 5, **game}, "network": {"size": "b1c8", "value_hidden": 8},
                             "gate": {"games": 2, "visits": 8, "concurrent_games": 2, "opening_moves": 2,
                                      "threads": 1}})


def test_a_match_between_a_network_with_the_planes_and_one_without(tmp_path):
    from zero.match import make_player, params_for_players, play_match
    from zero.network import init_network

    plain_params, wide_params = _small_params(), _small_params(liberty_planes=True)
    plain, wide = tmp_path / "plain.pt", tmp_path / "wide.pt"
    save_checkpoint(init_network(plain_params, make_game(plain_params.game), 1), plain, checksum=True)
    save_checkpoint(init_network(wide_params, make_game(wide_params.game), 2), wide, checksum=True)

    assert not params_for_players(plain_params, [str(plain), "mcts:10", "random"]).game.liberty_planes
    assert params_for_players(plain_params, [str(plain), f"{wide}@v4"]).game.liberty_planes
    # the network without the planes plays in the wider game as itself: its evaluations are the same
    game, wide_game = make_game(plain_params.game), make_game(wide_params.game)
    x = (torch.rand(4, 23, 5, 5) < 0.4).float()
    own = make_player(str(plain), plain_params, game, 8).evaluator.net
    widened = make_player(str(plain), wide_params, wide_game, 8).evaluator.net
    with torch.no_grad():
        for got, want in zip(widened(x), own(x[:, :17])):
            torch.testing.assert_close(got, want)
    result = play_match(plain_params, str(wide), str(plain), 2, seed=3, sgf_dir=tmp_path / "sgf")
    assert result.wins + result.losses + result.draws == 2
    assert len(read_collection(tmp_path / "sgf" / "match.sgf.gz")) == 2  # the match's games, one collection


def test_zero_match_between_the_two_kinds_from_the_command_line(tmp_path, capsys):
    import json

    import yaml

    from zero.cli import main
    from zero.network import init_network

    plain_params, wide_params = _small_params(), _small_params(liberty_planes=True)
    save_checkpoint(init_network(plain_params, make_game(plain_params.game), 1), tmp_path / "plain.pt", checksum=True)
    save_checkpoint(init_network(wide_params, make_game(wide_params.game), 2), tmp_path / "wide.pt", checksum=True)
    params_file = tmp_path / "p.yaml"
    params_file.write_text(yaml.safe_dump(plain_params.model_dump(mode="json")))
    code = main(["match", "--params", str(params_file), "--a", str(tmp_path / "wide.pt"), "--b",
                 str(tmp_path / "plain.pt"), "--games", "2", "--visits", "4"])
    out = capsys.readouterr()
    assert code == 0, out.err
    result = json.loads(out.out)
    assert result["wins"] + result["losses"] + result["draws"] == 2
    # a checkpoint that needs the switch still names it where nothing widens (self-play plays one network)
    code = main(["selfplay", "--params", str(params_file), "--model", str(tmp_path / "wide.pt"), "--out",
                 str(tmp_path / "s.npz"), "--games", "2"])
    assert code != 0 and "game.liberty_planes: true" in capsys.readouterr().err
