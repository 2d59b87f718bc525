"""How a player's Go games are won and lost: the stones each side had captured, from the games' SGFs.

Each game of an SGF collection (a ladder pairing's `sgf/<pairing>.sgf.gz`, a match's `sgf/match.sgf.gz`)
is replayed; every move that removes stones is a capture. Summed per game for the player named and for its
opponents, and split into the player's wins and losses: how many stones it lost, how many it took, in
how many games it lost a group of at least `--group` stones in one capture (and the median move of the
first), how many of those groups it had first pulled out of atari again and again (a ladder's chase: at
least LADDER_ESCAPES moves, within the ESCAPE_WINDOW moves before the capture, that took a group of them
from one liberty to two), and how many of its losses were by more than `--whole-board` points.

    python -m flows.captures docs/strength/go-9-g41-ladder/sgf/g41--gnugo-l1--ladder.sgf.gz --player g41
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from zero.games.go import BLACK, WHITE, GoPosition, chains, liberties, neighbours
from zero.sgf import SgfError, SgfGame, read_collection

LADDER_ESCAPES = 3  # a lost group pulled out of atari this often before its capture was chased as in a ladder
ESCAPE_WINDOW = 30  # moves before a capture in which its stones' escapes count


@dataclass
class GameCaptures:
    game: str  # which game: `<collection>#<number>`, from 1
    colour: int  # the player's: BLACK or WHITE
    won: bool | None  # None: a draw or no result
    margin: float | None  # points, None for a resignation or no result
    moves: int
    lost: list[tuple[int, int]]  # (move number, stones) of each capture of the player's stones
    taken: list[tuple[int, int]]  # the same for the opponent's stones
    escapes: list[int]  # for each capture in `lost`: the player's moves that had taken those stones from
    # one liberty to two, within ESCAPE_WINDOW moves before it


def _escape(before, after, p: int, size: int, colour: int) -> set | None:
    """The chain a move at `p` joined, where the move took a chain of `colour` in atari to two liberties."""
    chain_at = {q: chain for chain in chains(before, size) for q in chain}
    if not any(before[q] == colour and len(liberties(before, size, chain_at[q])) == 1 for q in neighbours(p, size)):
        return None
    mine = next(chain for chain in chains(after, size) if p in chain)
    return set(mine) if len(liberties(after, size, mine)) == 2 else None


def outcome(result: str | None, colour: int) -> tuple[bool | None, float | None]:
    """Whether `colour` won an SGF result (None: a draw or none) and by how many points (None: a resignation)."""
    if not result or result[0] not in "BW" or len(result) < 3:
        return None, None
    won = (result[0] == "B") == (colour == BLACK)
    try:
        return won, float(result[2:])
    except ValueError:
        return won, None


def player_colour(record: SgfGame, player: str, game: str) -> int:
    """`player`'s colour in a Go game on a square board (BLACK or WHITE); ValueError, naming `game`, if the
    record is not one or `player` is neither PB nor PW."""
    if record.game != "go" or record.size is None:
        raise ValueError(f"{game}: not a Go game on a square board")
    if player not in (record.black, record.white):
        raise ValueError(f"{game}: {player!r} is neither player (black {record.black!r}, white {record.white!r})")
    return BLACK if record.black == player else WHITE


def game_captures(record: SgfGame, player: str, game: str) -> GameCaptures:
    """The captures of one Go game in which `player` is PB or PW; `game` names it in errors and the result.
    ValueError names what is wrong."""
    colour = player_colour(record, player, game)
    won, margin = outcome(record.result, colour)
    position = GoPosition.initial(record.size, komi=record.komi or 0.0, open_ended=True)
    lost, taken, escapes, escaped = [], [], [], []  # escaped: (move number, the group's stones) of each escape
    size = record.size
    for number, action in enumerate(record.moves, start=1):
        before, mover = position.board, position.to_play
        position = position.play(int(action))
        removed = (before != 0) & (position.board == 0)
        for side, into in ((colour, lost), (-colour, taken)):
            stones = int((removed & (before == side)).sum())
            if stones:
                into.append((number, stones))
        if lost and lost[-1][0] == number:
            gone = set(map(int, (removed & (before == colour)).ravel().nonzero()[0]))
            escapes.append(sum(1 for m, group in escaped if number - m <= ESCAPE_WINDOW and group & gone))
        if mover == colour and int(action) < size * size:
            group = _escape(before.ravel(), position.board.ravel(), int(action), size, colour)
            if group:
                escaped.append((number, group))
    return GameCaptures(game, colour, won, margin, len(record.moves), lost, taken, escapes)


def summarise(games: list[GameCaptures], group: int = 5, whole_board: float = 70.0) -> dict:
    """Per outcome (wins, losses, draws): games, the mean stones lost and taken, the games with a capture of
    at least `group` of the player's stones and the median move of the first, and losses by > whole_board."""
    out = {}
    for name, pick in (("wins", True), ("losses", False), ("draws", None)):
        rows = [g for g in games if g.won is pick]
        if not rows:
            continue
        firsts = [next(i for i, (_, n) in enumerate(g.lost) if n >= group) if any(n >= group for _, n in g.lost)
                  else None for g in rows]
        big = [g.lost[i][0] for g, i in zip(rows, firsts) if i is not None]
        chased = sum(1 for g, i in zip(rows, firsts) if i is not None and g.escapes[i] >= LADDER_ESCAPES)
        out[name] = {
            "games": len(rows),
            "stones_lost_mean": round(statistics.fmean(sum(n for _, n in g.lost) for g in rows), 1),
            "stones_taken_mean": round(statistics.fmean(sum(n for _, n in g.taken) for g in rows), 1),
            f"games_losing_a_group_of_{group}": len(big),
            f"of_which_chased_out_of_atari_{LADDER_ESCAPES}_times": chased,
            "first_such_capture_median_move": statistics.median(big) if big else None,
            "moves_median": statistics.median(g.moves for g in rows),
        }
        if pick is False:
            out[name][f"lost_by_more_than_{whole_board:g}"] = sum(
                1 for g in rows if g.margin is not None and g.margin > whole_board)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m flows.captures", description=__doc__.split("\n\n")[0])
    ap.add_argument("collection", help="an SGF collection (.sgf.gz or .sgf) of Go games in which --player plays "
                                       "every game")
    ap.add_argument("--player", required=True, help="the player's name as the SGFs give it (PB/PW)")
    ap.add_argument("--group", type=int, default=5, help="a capture of at least this many stones is a lost group")
    ap.add_argument("--whole-board", type=float, default=70.0, help="a loss by more points is by the whole board")
    ap.add_argument("--json", action="store_true", help="every game's captures as JSON, then the summary")
    args = ap.parse_args(argv)
    path = Path(args.collection)
    try:
        games = [game_captures(g, args.player, f"{path.name}#{i}")
                 for i, g in enumerate(read_collection(path), start=1)]
    except (SgfError, ValueError) as e:
        print(f"python -m flows.captures: error: {e}", file=sys.stderr)
        return 2
    summary = summarise(games, args.group, args.whole_board)
    if args.json:
        print(json.dumps({"games": [asdict(g) for g in games], "summary": summary}, indent=1))
    else:
        print(f"{args.player}: {len(games)} games in {args.collection}")
        for name, row in summary.items():
            print(f"  {name}: " + ", ".join(f"{k} {v}" for k, v in row.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
