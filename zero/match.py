"""Matches between two players in the arena (zero.arena), and the 400-game gate.

Player a plays black in even-numbered games and white in odd ones. Games
differ because the first `opening_moves` moves of each game are sampled in
proportion to the search's visits (temperature 1) from a per-game seed;
after that both sides play their most visited move. Each side keeps its own
search tree and reuses it across moves, its own and the opponent's.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Callable


from zero.arena import ArenaRules, GameRecord, MCTSPlayer, RandomPlayer, play_arena, write_sgf_collection
from zero.config import SearchConfig
from zero.evaluator import NetworkEvaluator, RolloutEvaluator
from zero.games import Game, make_game
from zero.gumbel import search_player
from zero.network import init_network, load_checkpoint, pick_device, search_network, set_threads, widen_inputs
from zero.stats import MatchResult, gate_status


# c_puct of `mcts:N` (equal priors 1/A, rollout values in [-1, 1]); on Gomoku 6x6 k=4 at 1,000
# rollouts, c from 2 to 6 played evenly with 3; from 2.5 to 6 they blocked one-move threats
# about equally often, 2 less often.
ROLLOUT_C_PUCT = 3.0


MATCH_SGF = "match.sgf.gz"  # a match's games, one gzip-compressed SGF collection in its --sgf-dir


# A network player's options: key -> (smallest value, largest value, what it sets); the search constants take
# decimals (`@cp2.5`), the others whole numbers.
PLAYER_OPTIONS = {"lb": (1, 256, "leaf batch"), "f": (1, 16, "leaf batches in flight"), "v": (1, 100_000, "visits"),
                  "bf": (0, 1, "the network in bfloat16 on the CPU, gate.cpu_bf16"),
                  "cp": (0.1, 10.0, "mcts.c_puct"), "fpu": (0.0, 2.0, "mcts.fpu_reduction"),
                  "su": (0.0, 2.0, "mcts.score_utility"), "sd": (0.0, 1.0, "mcts.c_puct_stdev_scale"),
                  "svb": (0.0, 1.0, "mcts.subtree_bias_factor")}
# the search constants the decimal options set
SEARCH_OPTIONS = {"cp": "c_puct", "fpu": "fpu_reduction", "su": "score_utility", "sd": "c_puct_stdev_scale",
                  "svb": "subtree_bias_factor"}


def _option_value(key: str, text: str) -> int | float | None:
    """An option's value from its text, None when it is not a number of the option's kind."""
    if not text.isascii():
        return None
    if key in SEARCH_OPTIONS:
        return float(text) if text.replace(".", "", 1).isdigit() else None
    return int(text) if text.isdigit() else None


def split_options(spec: str) -> tuple[str, dict]:
    """`models/go-9.pt@lb8@f2@v300@bf1@cp2.5` -> ("models/go-9.pt", {"lb": 8, "f": 2, "v": 300, "bf": 1,
    "cp": 2.5}): a network player's own leaf batch (lb, 1 to 256), leaf batches in flight (f, 1 to 16), visits
    a move (v, 1 to 100,000), network precision on the CPU (bf1: bfloat16, bf0: float32) and search constants
    (cp: c_puct, fpu: fpu_reduction, su: score_utility, sd: c_puct_stdev_scale, svb: subtree_bias_factor).
    ValueError names a bad option."""
    path, *parts = spec.split("@")
    options = {}
    for part in parts:
        key = next((k for k in sorted(PLAYER_OPTIONS, key=len, reverse=True) if part.startswith(k)), None)
        value = _option_value(key, part[len(key):]) if key else None
        if value is None or not PLAYER_OPTIONS[key][0] <= value <= PLAYER_OPTIONS[key][1]:
            known = ", ".join(f"@{k}<{lo}-{hi}> {what}" for k, (lo, hi, what) in PLAYER_OPTIONS.items())
            raise ValueError(f"player {spec!r}: {part!r} is not an option ({known})")
        options[key] = value
    return path, options


def params_for_players(params, specs) -> object:
    """`params`, with game.liberty_planes on when a network among the player `specs` was trained with them.

    A match between a network with the liberty planes and one without (a recipe trial, a line that gained
    them) plays on a game that makes them; the network without them plays widened (zero.network.widen_inputs:
    its own outputs exactly). Specs that are not checkpoint files are left alone.
    """
    if params.game.name != "go" or params.game.liberty_planes:
        return params
    from zero.games.go_kernels import LIBERTY_PLANES

    plain = make_game(params.game).num_planes
    for spec in specs:
        path = split_options(spec)[0] if "@" in spec and not spec.startswith(("gtp:", "mcts:")) else spec
        if path in ("init", "random") or path.startswith(("gtp:", "mcts:")) or not Path(path).is_file():
            continue
        net, _ = load_checkpoint(path)
        if net.config.in_planes == plain + LIBERTY_PLANES:
            return params.model_copy(update={"game": params.game.model_copy(update={"liberty_planes": True})})
    return params


def make_player(spec: str, params, game: Game, visits: int, seed: int = 0):
    """A player from a spec.

    Specs: a checkpoint path; `init` (a freshly initialised network); `random`;
    `mcts:<rollouts>` (pure MCTS: random rollouts, every move tried once before
    any twice); `gtp:<command line>`
    (an external GTP engine such as `gtp:gnugo --mode gtp --level 1`). A network's
    spec may end in `@lb<N>` (its search evaluates N leaves a call, mcts.leaf_batch), `@f<N>` (N such
    batches in flight, mcts.leaf_batches_in_flight), `@v<N>` (its own visits a move), `@bf1` / `@bf0`
    (its network in bfloat16 / float32 on the CPU; bf1 takes the fast evaluation, gate.fast_inference) and
    `@cp<X>`, `@fpu<X>`, `@su<X>`, `@sd<X>`, `@svb<X>` (its own mcts.c_puct, fpu_reduction, score_utility,
    c_puct_stdev_scale and subtree_bias_factor): `models/go-9.pt@lb8@v300`
    against `models/go-9.pt`, `models/go-9.pt@bf1` against `models/go-9.pt@bf0`, `models/go-9.pt@cp2.5` against
    `models/go-9.pt`.
    """
    mc, name = params.mcts, Path(spec).name
    if not spec.startswith(("gtp:", "mcts:")) and "@" in spec:
        spec, options = split_options(spec)
        mc = mc.model_copy(update={"leaf_batch": options.get("lb", mc.leaf_batch),
                                   "leaf_batches_in_flight": options.get("f", mc.leaf_batches_in_flight),
                                   **{field: options[k] for k, field in SEARCH_OPTIONS.items() if k in options}})
        visits = options.get("v", visits)
        if "bf" in options:
            gate = params.gate.model_copy(update={"cpu_bf16": bool(options["bf"]), "fast_inference": True}
                                          if options["bf"] else {"cpu_bf16": False})
            params = params.model_copy(update={"gate": gate})
    if spec.startswith("gtp:"):
        from zero.gtp_player import GtpPlayer

        return GtpPlayer(spec[4:], params.game.komi)
    if spec == "random":
        return RandomPlayer(seed)
    if spec.startswith("mcts:"):
        n = int(spec.split(":", 1)[1])
        return MCTSPlayer(spec, RolloutEvaluator(seed), SearchConfig(visits=n, c_puct=ROLLOUT_C_PUCT, fpu_value=1.0))
    device = pick_device(params.gate.device)
    if spec == "init":
        net = init_network(params, game, seed).to(device)
    else:
        net, _ = load_checkpoint(spec, device)
        if getattr(game, "liberty_planes", False) and net.config.in_planes < game.num_planes:
            net = widen_inputs(net.cpu(), game.num_planes).to(device)  # a network without them, the same outputs
        if net.config.num_actions != game.num_actions or net.config.in_planes != game.num_planes:
            raise ValueError(f"{spec}: network is for another game or board than {params.game.tag}")
    sym = game.symmetries() if mc.symmetries else None
    net = search_network(net, mc.score_utility, mc.score_utility_scale)
    return search_player(name, NetworkEvaluator(net, sym, seed, device, fast=params.gate.fast_inference,
                                                       cpu_bf16=params.gate.cpu_bf16),
                         mc.search(visits))


def gate_decided(games: int, threshold: float, wins: int, losses: int, draws: int) -> bool:
    """Whether a gate of `games` games at `threshold` is decided, whatever the games not yet played do."""
    return gate_status(wins, losses, draws, games, threshold) != "undecided"


@dataclass
class MatchGames:
    """A match's result and its game records (for SGF)."""

    result: MatchResult
    records: list[GameRecord]


def run_match(game: Game, a, b, num_games: int, seed: int, concurrent: int = 64, opening_moves: int = 6,
              resign_threshold: float = -1.0, stop_early: tuple[int, float] | None = None,
              first_index: int = 0, openings: list[list[int]] | None = None, progress=None,
              stop: Callable[[int, int, int], bool] | None = None, resign_min_move: int = 0,
              indices: list[int] | None = None, on_game=None) -> MatchGames:
    """Play `num_games` games between players a and b in the arena (zero.arena.play_arena).

    Args:
        opening_moves: the first moves of each game are sampled ∝ visits, so games differ.
        progress: called as progress(games_done, num_games, positions) each time a game
            ends (positions: moves played in the games done so far).
        openings: fixed opening moves, one list per colour-swapped pair of games.
        stop_early: (total_games, threshold) of a sequential gate: stop starting
            new games once the gate's outcome is certain whatever the rest do.
        first_index: index of this match's first game in a larger match (colours
            and seeds follow the global index, so shards of a match compose).
        stop: in place of stop_early, any rule stop(wins, losses, draws) -> bool checked
            before each new game (a gate played in parts: gate_stop over all parts' tallies).
        resign_min_move: no resignation before this move (selfplay.resign_min_move).
        indices, on_game: play_arena's: only these games (a resumed match), and a call as each ends.
    """
    if stop is None and stop_early is not None:
        stop = functools.partial(gate_decided, *stop_early)
    rules = ArenaRules(sample_moves=opening_moves, resign_threshold=resign_threshold, resign_min_move=resign_min_move)
    out = play_arena(game, a, b, num_games, seed, concurrent, rules, first_index=first_index, openings=openings,
                     stop=stop, progress=progress, indices=indices, on_game=on_game)
    return MatchGames(MatchResult(wins=out.wins, losses=out.losses, draws=out.draws), out.records)


def play_match(params, a: str, b: str, num_games: int, seed: int, sgf_dir: str | Path | None = None,
               visits: int | None = None, first_index: int = 0, sequential: bool = False,
               progress=None, stop: Callable[[int, int, int], bool] | None = None,
               names: tuple[str | None, str | None] = (None, None)) -> MatchResult:
    """Play a match between two player specs (checkpoint paths, `random`, `mcts:N`, `init`).

    With `sgf_dir`, its games are written there as one collection, `match.sgf.gz` (MATCH_SGF).
    `names` are the players' names in the SGFs (PB/PW); each left None is the player's own (a checkpoint's
    file stem, `mcts-500`, ...).
    With sequential, stops early once a `params.gate` gate of `num_games` games is decided;
    `stop` is run_match's, for a gate whose decision spans several parts.
    `progress` is run_match's: progress(games_done, num_games, positions) as each game ends.
    """
    params = params_for_players(params, (a, b))
    game = make_game(params.game)
    g = params.gate
    set_threads(g.threads)
    visits = visits or g.visits
    pa = make_player(a, params, game, visits, seed)
    pb = make_player(b, params, game, visits, seed + 1)
    stop_early = (num_games, g.threshold) if sequential else None
    out = run_match(game, pa, pb, num_games, seed, g.concurrent_games, g.opening_moves,
                    params.selfplay.resign_threshold, stop_early, first_index, progress=progress, stop=stop,
                    resign_min_move=params.selfplay.resign_min_move)
    if sgf_dir is not None:
        write_sgf_collection(out.records, params.game, Path(sgf_dir) / MATCH_SGF, event="match",
                             players=(names[0] or pa.name, names[1] or pb.name))
    return out.result
