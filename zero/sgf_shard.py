"""The positions of Go games in SGF as a shard, so that any network can be read on games it never played.

`flows.readout` reads networks on shards; self-play shards hold a line's own games. The games that matter for
strength are others: a champion's ladder games against Pachi or GNU Go. `zero sgf shard COLLECTION --out S.npz`
replays each game of SGF collections and records every position after the first `--opening` moves (the ladder's
random stones) with:

- the move played as its policy target (one-hot),
- the game's result as its value target (from the side to move's view),
- for a game that ended on a counted board, the final ownership of every point and the score (zero.targets), as
  a played-out self-play game has them. A result is counted when it gives a margin (`B+2.5`, not `B+R`) and the
  Tromp-Taylor count of the final board gives the same winner and margin: the ladder's referee counts that way.
  A game whose result disagrees with its final board (dead stones left on it, another scoring) gets no
  ownership targets, and is counted as such.

The planes are those of the params file's game (`game.liberty_planes`), so the shard fits the line's networks.
A game that is not Go on that board, has no result, or holds an illegal move is refused, naming it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from zero.games.go import GoPosition, ownership_and_score
from zero.sgf import SgfGame, read_collection
from zero.shards import SHARD_FORMAT, Shard, pack_planes, padded_moves
from zero.targets import aux_targets, no_aux_targets, stack_aux_targets


@dataclass
class SgfShardSummary:
    """What went into the shard: games, positions, and how many games carry ownership targets and why not."""

    games: int = 0
    positions: int = 0
    counted: int = 0  # games with ownership and score targets
    resigned: int = 0  # games ended by resignation (or a result without a margin)
    count_differs: int = 0  # counted results that the final board's Tromp-Taylor count does not give


def _result(record: SgfGame, name: str) -> tuple[int, float | None]:
    """(black's result +1/-1/0, the margin or None) of an SGF result; ValueError naming the game if it has none."""
    text = (record.result or "").strip()
    if text in ("0", "Draw", "Jigo"):
        return 0, 0.0
    if len(text) < 2 or text[0] not in "BW" or text[1] != "+":
        raise ValueError(f"{name}: no result a value target can come from (RE[{record.result or ''}])")
    sign = 1 if text[0] == "B" else -1
    try:
        return sign, float(text[2:])
    except ValueError:
        return sign, None  # B+R, W+Resign, B+T: no margin


def game_positions(record: SgfGame, name: str, params, opening: int) -> dict:
    """One game's recorded positions and targets (arrays), its result and how it ended; ValueError naming it."""
    g = params.game
    if record.game != "go" or (record.height, record.width) != (g.size, g.size):
        raise ValueError(f"{name}: a {record.game} game on {record.height}x{record.width}, not Go on "
                         f"{g.size}x{g.size} as the params file's networks play")
    result, margin = _result(record, name)
    komi = record.komi if record.komi is not None else g.komi
    position = GoPosition.initial(g.size, komi=komi, open_ended=True, liberty_planes=g.liberty_planes)
    planes, actions, to_play = [], [], []
    for number, action in enumerate(record.moves, start=1):
        if int(action) not in position.legal_actions():
            raise ValueError(f"{name}: move {number} ({position.game.action_to_text(int(action))}) is not legal")
        if number > opening:
            planes.append(position.planes())
            actions.append(int(action))
            to_play.append(position.to_play)
        position = position.play(int(action))
    side = np.array(to_play, np.int8)
    aux, ended = None, "resigned"
    if margin is not None:
        _, score = ownership_and_score(position.board, komi)
        if result == int(np.sign(score)) and abs(abs(score) - margin) < 1e-6:
            aux, ended = aux_targets(position.board, komi, side), "counted"
        else:
            ended = "count_differs"
    return {"planes": planes, "actions": actions, "to_play": side, "result": result, "aux": aux, "ended": ended,
            "moves": [int(a) for a in record.moves]}


def sgf_shard(collections: list[str | Path], params, opening: int = 2) -> tuple[Shard, SgfShardSummary]:
    """The shard of every game of `collections` (SGF files or .sgf.gz collections), in order, and its summary.
    ValueError (SgfError for a file that cannot be read) names the game or file."""
    g = params.game
    if g.name != "go":
        raise ValueError(f"the params file's game is {g.name}: SGF positions are read for Go only")
    summary = SgfShardSummary()
    games = []
    for path in collections:
        for i, record in enumerate(read_collection(path), start=1):
            games.append(game_positions(record, f"{Path(path).name}#{i}", params, opening))
    if not games:
        raise ValueError("no games in " + ", ".join(str(p) for p in collections))
    points, actions = g.size * g.size, g.size * g.size + 1
    planes, policy, value, index = [], [], [], []
    for n, game in enumerate(games):
        planes.extend(game["planes"])
        onehot = np.zeros((len(game["actions"]), actions), np.float16)
        onehot[np.arange(len(game["actions"])), game["actions"]] = 1
        policy.append(onehot)
        value.append(game["result"] * game["to_play"])
        index.extend([n] * len(game["actions"]))
        summary.games += 1
        summary.positions += len(game["actions"])
        summary.counted += game["ended"] == "counted"
        summary.resigned += game["ended"] == "resigned"
        summary.count_differs += game["ended"] == "count_differs"
    if not planes:
        raise ValueError(f"the {len(games)} games hold no positions after their first {opening} moves")
    targets = stack_aux_targets([game["aux"] or no_aux_targets(len(game["actions"]), points) for game in games])
    stacked = np.stack(planes)
    shard = Shard(
        **targets,
        planes=pack_planes(stacked),
        policy=np.concatenate(policy),
        value=np.concatenate(value).astype(np.int8),
        game_index=np.array(index, np.int32),
        moves=padded_moves([game["moves"] for game in games]),
        length=np.array([len(game["moves"]) for game in games], np.int32),
        seed=np.zeros(len(games), np.int64),
        result=np.array([game["result"] for game in games], np.int8),
        resigned=np.array([game["ended"] == "resigned" for game in games], np.bool_),
        no_resign=np.zeros(len(games), np.bool_),
        resign_value=np.zeros((len(games), 2), np.float32),
        header={
            "format": SHARD_FORMAT,
            "game": g.tag,
            "plane_shape": list(stacked.shape[1:]),
            "num_actions": actions,
            "seed": 0,
            "params": params.model_dump(mode="json", include={"game"}),
            "sgf": {"collections": [str(p) for p in collections], "opening": opening},
        },
    )
    return shard, summary

