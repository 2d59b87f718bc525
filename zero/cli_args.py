"""What the `zero` command line reads its arguments as, and which player they make: argparse types (counts,
seeds, seconds, colours, names) with zero's error line, the checks of a player spec or a network file, the
shipped champion and a network's lineage (the params and visits it was trained and measured with), and the
progress a long command shows on stderr. zero.cli's commands are built from them.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
from pathlib import Path

from zero.config import MAX_SEED, MAX_VISITS, load_params_here, params_from_dict
from zero.notation import NotationError, parse_colour


class UsageError(ValueError):
    """A command-line argument that parses but cannot be used (a bad player spec, say)."""


class Parser(argparse.ArgumentParser):
    """argparse with zero's error line: `zero: error: ...`, exit status 2."""

    def error(self, message: str):
        self.print_usage(sys.stderr)
        self.exit(2, f"zero: error: {message}\n")


def count_arg(limit: int, least: int = 1):
    """argparse type: a whole number from `least` (1 by default) to `limit`."""

    def count(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            n = None
        if n is None or not least <= n <= limit:
            raise argparse.ArgumentTypeError(f"must be a whole number from {least} to {limit}, got {text!r}")
        return n

    return count


def counts_arg(limit: int):
    """argparse type: comma-separated whole numbers from 1 to `limit`."""
    one = count_arg(limit)

    def counts(text: str) -> list[int]:
        return [one(part.strip()) for part in text.split(",")]

    return counts


def seed_arg(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = None
    if n is None or not 0 <= n <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"must be a whole number from 0 to {MAX_SEED}, got {text!r}")
    return n


def ladder_seed_arg(text: str) -> int | str:
    """argparse type: a seed, or `fresh` (starts of the network's own, zero.ladder.fresh_seed)."""
    return "fresh" if text == "fresh" else seed_arg(text)


def player_name_arg(text: str) -> str:
    """argparse type: a player's name for SGF files, 1-64 printable characters."""
    if not 1 <= len(text) <= 64 or not text.isprintable():
        raise argparse.ArgumentTypeError(f"must be 1 to 64 printable characters, got {text!r}")
    return text


def seconds_arg(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        x = math.nan
    if not 0 < x <= 86_400:
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0 and at most 86400, got {text!r}")
    return x


def colour_arg(text: str) -> int:
    """argparse type: +1 for black, -1 for white (b, black, w, white in any case)."""
    try:
        return parse_colour(text)
    except NotationError:
        raise argparse.ArgumentTypeError(f"must be black or white, got {text!r}") from None


def check_model(params, game, path: str, widens: bool = False) -> None:
    """Load and verify a checkpoint and refuse it unless its network plays the params' game and board
    (`widens`: as a match player, which plays widened when the game adds the liberty planes)."""
    from zero.network import check_network_fits, load_checkpoint

    net, meta = load_checkpoint(path)
    check_network_fits(net, game, path, params.game.tag, meta.get("game"), widens=widens)


def check_player(params, game, spec: str) -> int:
    """Refuse a match player spec that cannot be used; return the search visits it will use (0: none)."""
    if spec == "random":
        return 0
    if spec.startswith("mcts:"):
        n = spec[5:]
        if not (n.isascii() and n.isdigit()) or not 1 <= int(n) <= MAX_VISITS:
            raise UsageError(f"player {spec!r}: mcts:N takes a whole number of rollouts from 1 to {MAX_VISITS}")
        return int(n)
    if spec.startswith("gtp:"):
        try:
            words = shlex.split(spec[4:])
        except ValueError as e:
            raise UsageError(f"player {spec!r}: cannot split the engine command ({e})") from None
        if not words:
            raise UsageError(f"player {spec!r}: gtp: needs an engine command, e.g. 'gtp:gnugo --mode gtp'")
        if params.game.name != "go":
            raise UsageError(f"player {spec!r}: GTP engines play Go, but the params are for {params.game.tag}")
        return 0
    from zero.match import split_options

    try:
        path, options = split_options(spec)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if path != "init":
        check_model(params, game, path, widens=True)
    return options.get("v", -1)  # -1: the match's visits


# The lines whose champion the repository ships in models/ (a run without it would play a random network).
SHIPPED_LINES = frozenset({"go-9", "gomoku-6x6x4"})
MODELS_DIR = Path(__file__).resolve().parent.parent / "models"


def shipped_model(params) -> Path | None:
    """The trained champion shipped for the params' game and board (models/<tag>.pt), if there is one."""
    path = MODELS_DIR / f"{params.game.tag}.pt"
    return path if path.is_file() else None


def model_or_shipped(params, model: str | None) -> str | None:
    """`model`, else the shipped champion for the board (said on stderr), else None (a fresh network)."""
    if model is not None:
        return model
    shipped = shipped_model(params)
    if shipped is None and params.game.tag in SHIPPED_LINES:
        raise UsageError(
            f"the shipped champion for {params.game.tag} is not at {MODELS_DIR / (params.game.tag + '.pt')} (an "
            f"install without the repository's models/ folder): pass --model FILE")
    if shipped is None:
        print(f"zero: no model given and none shipped for {params.game.tag}: playing a freshly initialised network",
              file=sys.stderr)
        return None
    print(f"zero: playing the shipped champion {shipped}", file=sys.stderr)
    return str(shipped)


def params_of(args):
    return load_params_here(args.params, args.set)


def lineage_of(model: str | Path | None) -> tuple[Path, dict] | None:
    """The lineage of a network file: `<model>.json` beside it (as flows.ship writes models/<tag>.json and
    campaigns/state/<tag>.json), when it names this very network (its sha256) and holds the params it was
    trained with. None otherwise."""
    from zero.shards import file_sha256

    if model is None:
        return None
    path = Path(model).with_suffix(".json")
    try:
        lineage = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(lineage, dict) or not isinstance(lineage.get("params"), dict):
        return None
    if lineage.get("sha256") != file_sha256(model):
        return None
    return path, lineage


def _measured_visits(lineage: dict) -> int | None:
    """The visits a move the champion's recorded ladder played at, when its matches agree on one."""
    visits = {m.get("visits") for m in ((lineage.get("ladder") or {}).get("matches") or [])}
    return visits.pop() if len(visits) == 1 and None not in visits else None


def player_params(args, params, model: str | None, measured_visits: bool = True):
    """The params a player plays with: with --params, that file's; without, the settings its network was
    trained and measured with (its lineage's params and, with `measured_visits`, the visits its ladder played),
    said on stderr. --set applies on top either way; --visits overrides the visits."""
    found = None if args.params is not None else lineage_of(model)
    if found is None:
        return params
    path, lineage = found
    params = params_from_dict(lineage["params"], args.set, source=str(path))
    visits = _measured_visits(lineage) if measured_visits else None
    if visits is not None and args.visits is None:
        args.visits = visits
    said = f", {visits} visits a move as its ladder measured" if visits is not None and args.visits == visits else ""
    print(f"zero: playing with the search settings {Path(model).name} was trained and measured with "
          f"({path}{said}); --params FILE chooses others", file=sys.stderr)
    return params


PROGRESS_EVERY = 60.0  # seconds between the plain progress lines where stderr is no terminal


def progress_for(total: int, label: str, unit: str = "games", at_once: int = 1):
    """Progress on stderr and a tick that advances it: a rich bar with an ETA on a terminal
    (zero.progress.terminal_bar), or zero.progress's lines where stderr is no terminal (a log file, nohup), at
    most one every `PROGRESS_EVERY` seconds, with rate and ETA, so a long match or ladder is never silent in
    its log.

    The tick takes the library's progress arguments (games_done, total, positions) and shows games_done (a
    resumed ladder pairing starts from the games it carried over); called with none it advances by one.
    `at_once`: the games played at the same time, for the ETA (zero.progress.ProgressLines).
    """
    from zero.progress import ProgressLines, terminal_bar

    if not sys.stderr.isatty():
        lines = ProgressLines(label, total, unit, every=PROGRESS_EVERY, at_once=at_once)
        return lines, lines
    return terminal_bar(label, total, unit, at_once)
