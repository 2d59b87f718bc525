"""Where a player's Go games turned, in a network's own eyes: the value of every position and the prior of every
move played, read off the network with no search, from the games' SGFs.

Each game of an SGF collection is replayed and every position it passed through evaluated once by the network
(the player's own, or any other of the same board), in float32 and without symmetries. A game's turn is the
opponent's move after which the player's value fell the most: the value head's outputs for the positions
before and after that move, both read from the player's side. For each turn: its move number, the player's
value before and after it, and the prior the network gave the opponent's move in the position where the
opponent chose it, with its rank among the legal moves. A turn with a low prior is a move the player's search
seldom reads for the opponent (a blind spot of the policy); a value still high before it is a position the
value head misjudged. Summed over the player's losses and its wins, beside the share of low priors among all
of the opponent's moves in those games (the first `--opening` moves, the ladder's random stones, left out).

A raw value is not the search's view. With `--visits N` (and the params file whose search plays), each loss's
positions with the player to move, in the `--before` moves before its turn, are searched again from a fresh
tree, and the search's value for the player is set beside the network's: how many moves before the value head
the search saw the game turn.

    python -m flows.turns docs/strength/go-9-campaign-g574-fresh/sgf/g574--pachi-5000--ladder.sgf.gz \\
        --player g574 --model models/go-9.pt
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from flows.captures import outcome, player_colour
from zero.config import ConfigError, load_params_here
from zero.engine import Engine, EngineConfig
from zero.evaluator import masked_softmax
from zero.games.go import BLACK, GoPosition
from zero.network import CheckpointError, load_checkpoint
from zero.sgf import SgfError, SgfGame, read_collection

LOW_PRIOR = 0.01  # a move the network gave less than this share of the policy is one its search seldom reads
MISJUDGED = 0.0  # a player's value above this before the turn: the network saw the game as won or even there


@dataclass
class GameTurn:
    game: str  # which game: `<collection>#<number>`, from 1
    colour: int  # the player's: BLACK or WHITE
    won: bool | None  # None: a draw or no result
    moves: int
    values: list[float]  # the player's value of each position, from the start to after the last move
    priors: list[float]  # the network's prior of each move played, in the position it was played from
    ranks: list[int]  # each move's rank among the legal moves by that prior (1: the network's first choice)
    turn: int | None  # the move number (from 1) of the opponent's move after which the value fell the most
    drop: float | None  # how far it fell (value before minus value after)
    searched: dict[int, float] | None = None  # moves before the turn -> the search's value for the player there

    def at_turn(self) -> dict | None:
        """The turn's move number, the player's value before and after it, the move's prior and rank, and the
        prior and rank of the player's own move before it (the move the turn answered)."""
        if self.turn is None:
            return None
        i = self.turn - 1
        return {"move": self.turn, "value_before": self.values[i], "value_after": self.values[i + 1],
                "prior": self.priors[i], "rank": self.ranks[i], "own_prior": self.priors[i - 1] if i else None,
                "own_rank": self.ranks[i - 1] if i else None}


def _position(record: SgfGame, in_planes: int, game: str) -> GoPosition:
    """The empty board of `record` with the input planes the network takes (with or without liberty planes)."""
    for liberty_planes in (False, True):
        start = GoPosition.initial(record.size, komi=record.komi or 0.0, open_ended=True,
                                   liberty_planes=liberty_planes)
        if start.game.num_planes == in_planes:
            return start
    raise ValueError(f"{game}: the network takes {in_planes} input planes, which no {record.size}x{record.size} "
                     f"Go position gives")


@torch.no_grad()
def evaluate(net, planes: np.ndarray, legal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(priors [B, A] over the legal actions, values [B] for the side to move) of a batch of input planes."""
    logits, values = net(torch.from_numpy(planes).float())
    return masked_softmax(logits.float().numpy(), legal), values.float().numpy()


def game_turn(record: SgfGame, player: str, game: str, net, opening: int = 2) -> GameTurn:
    """The turn of one Go game in which `player` is PB or PW, as `net` sees it; `game` names it in errors and
    the result. The first `opening` moves are never a turn. ValueError names what is wrong."""
    colour = player_colour(record, player, game)
    c = net.config
    if (c.height, c.width) != (record.size, record.size):
        raise ValueError(f"{game}: a {record.size}x{record.size} game, but the network is for {c.height}x{c.width}")
    won, _ = outcome(record.result, colour)
    position = _position(record, c.in_planes, game)
    planes, legal, movers = [], [], []
    for number, action in enumerate(record.moves, start=1):
        mask = np.zeros(c.num_actions, np.bool_)
        mask[position.legal_actions()] = True
        if not mask[int(action)]:
            raise ValueError(f"{game}: move {number} ({position.game.action_to_text(int(action))}) is not legal")
        planes.append(position.planes())
        legal.append(mask)
        movers.append(position.to_play)
        position = position.play(int(action))
    planes.append(position.planes())
    legal.append(np.ones(c.num_actions, np.bool_))
    movers.append(position.to_play)
    priors, values = evaluate(net, np.stack(planes), np.stack(legal))
    side = np.asarray(movers) * colour  # +1 where the player is to move
    mine = (values * side).tolist()
    actions = np.asarray(record.moves, np.int64)
    played = priors[np.arange(len(actions)), actions]
    ranks = [1 + int((priors[i][legal[i]] > played[i]).sum()) for i in range(len(actions))]
    drops = [(mine[i] - mine[i + 1], i + 1) for i in range(opening, len(actions)) if movers[i] == -colour]
    drop, turn = max(drops) if drops else (None, None)
    return GameTurn(game, colour, won, len(actions), [round(v, 4) for v in mine],
                    [round(float(p), 5) for p in played], ranks, turn, None if drop is None else round(drop, 4))


def search_before(record: SgfGame, turn: GameTurn, engine, before: int = 12) -> dict[int, float]:
    """The search's value for the player (`engine.analyse`, a fresh tree each time) of the positions with the
    player to move in the `before` moves before the turn, keyed by how many moves before the turn they stood."""
    if turn.turn is None:
        return {}
    position = _position(record, engine.game.num_planes, turn.game)
    wanted = range(max(0, turn.turn - 1 - before), turn.turn - 1)
    out = {}
    for i, action in enumerate(record.moves[: turn.turn - 1]):
        if i in wanted and position.to_play == turn.colour:
            engine.forget()
            out[turn.turn - 1 - i] = round(engine.analyse(position)[1], 4)
        position = position.play(int(action))
    return out


def searched_summary(games: list[GameTurn]) -> dict:
    """For each distance before the turn: the losses searched there, and in how many the search's value and
    the network's were above 0."""
    out = {}
    for g in games:
        for k, v in (g.searched or {}).items():
            row = out.setdefault(int(k), {"losses": 0, "search_above_0": 0, "network_above_0": 0})
            row["losses"] += 1
            row["search_above_0"] += v > 0
            row["network_above_0"] += g.values[g.turn - 1 - int(k)] > 0
    return dict(sorted(out.items()))


def summarise(games: list[GameTurn], opening: int = 2, low: float = LOW_PRIOR) -> dict:
    """Per outcome (wins, losses, draws): the games; the median move, drop, values and prior rank of their
    turns, and the rank of the player's own move before each; how many turns had a prior below `low`, and how
    many a value above MISJUDGED before them; the share of the opponent's moves (after the opening) with a prior
    below `low`."""
    out = {}
    for name, pick in (("wins", True), ("losses", False), ("draws", None)):
        rows = [g for g in games if g.won is pick]
        turns = [t for t in (g.at_turn() for g in rows) if t is not None]
        if not turns:
            continue
        theirs = [p for g in rows for i, p in enumerate(g.priors)
                  if i >= opening and (i % 2 == 0) != (g.colour == BLACK)]  # black moves at even i
        out[name] = {
            "games": len(rows),
            "turn_move_median": statistics.median(t["move"] for t in turns),
            "turn_drop_median": round(statistics.median(g.drop for g in rows if g.drop is not None), 3),
            "value_before_median": round(statistics.median(t["value_before"] for t in turns), 3),
            "value_after_median": round(statistics.median(t["value_after"] for t in turns), 3),
            "turn_prior_median": round(statistics.median(t["prior"] for t in turns), 4),
            "turn_rank_median": statistics.median(t["rank"] for t in turns),
            "own_move_before_rank_median": statistics.median(
                [t["own_rank"] for t in turns if t["own_rank"] is not None] or [None]),
            f"turns_below_prior_{low:g}": sum(1 for t in turns if t["prior"] < low),
            "turns_misjudged_before": sum(1 for t in turns if t["value_before"] > MISJUDGED),
            f"opponent_moves_below_prior_{low:g}": round(sum(p < low for p in theirs) / max(1, len(theirs)), 3),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m flows.turns", description=__doc__.split("\n\n")[0])
    ap.add_argument("collection", help="an SGF collection (.sgf.gz or .sgf) of Go games in which --player plays "
                                       "every game")
    ap.add_argument("--player", required=True, help="the player's name as the SGFs give it (PB/PW)")
    ap.add_argument("--model", required=True, help="the network that reads the positions (a zero checkpoint)")
    ap.add_argument("--opening", type=int, default=2, help="the first moves, never a turn (the ladder's random "
                                                          "stones: 2)")
    ap.add_argument("--low", type=float, default=LOW_PRIOR, help="a prior below this is a blind spot")
    ap.add_argument("--visits", type=int, default=0, help="also search each loss's positions before its turn "
                                                         "with this many visits (0: no search)")
    ap.add_argument("--before", type=int, default=12, help="with --visits: how many moves before the turn")
    ap.add_argument("--params", help="with --visits: the params file whose search plays (default: params.yaml if "
                                     "present)")
    ap.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                    help="override one parameter of --params; repeatable")
    ap.add_argument("--json", action="store_true", help="every game's values, priors and turn as JSON, then the "
                                                        "summary")
    args = ap.parse_args(argv)
    path = Path(args.collection)
    try:
        net, _ = load_checkpoint(args.model)
        torch.set_num_threads(1)
        records = read_collection(path)
        games = [game_turn(g, args.player, f"{path.name}#{i}", net, args.opening)
                 for i, g in enumerate(records, start=1)]
        if args.visits > 0:
            engine = Engine(EngineConfig.from_params(load_params_here(args.params, args.set), args.visits), args.model)
            for record, g in zip(records, games):
                if g.won is False:
                    g.searched = search_before(record, g, engine, args.before)
    except (CheckpointError, ConfigError, SgfError, ValueError) as e:
        print(f"python -m flows.turns: error: {e}", file=sys.stderr)
        return 2
    summary = summarise(games, args.opening, args.low)
    if args.visits > 0:
        summary["losses_searched"] = searched_summary(games)
    if args.json:
        print(json.dumps({"games": [asdict(g) | {"turn": g.at_turn()} for g in games], "summary": summary}))
    else:
        print(f"{args.player}: {len(games)} games in {args.collection}, read by {args.model}")
        for name, row in summary.items():
            if name == "losses_searched":
                print(f"  losses searched at {args.visits} visits, by moves before the turn: " + "; ".join(
                    f"{k}: search above 0 in {r['search_above_0']} of {r['losses']}, network in "
                    f"{r['network_above_0']}" for k, r in row.items()))
            else:
                print(f"  {name}: " + ", ".join(f"{k} {v}" for k, v in row.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
