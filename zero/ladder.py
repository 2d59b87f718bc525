"""The ladder: a player against fixed opponents, every result kept, one rating fit over all of them.

A ladder directory holds what the ratings are fitted from:

    pairings/<a>--<b>--<label>.json   one match's result from a's view, with how it was played
    sgf/<a>--<b>--<label>.sgf.gz      its games, one gzip-compressed SGF collection
    players.json                      optional facts per player (generation, cumulative compute)
    ratings.json, elo.png             written by `fit_dir` and zero.ladder_plot.plot_dir

zero.pairings reads and writes the pairing files and compares two ladders' players start by start.

Opponents are match player specs (zero.match.make_player) plus `gnugo:<level>`,
GNU Go 3.8 over GTP with Chinese rules, positional superko and capture of all
dead stones, and `pachi:<playouts>`, Pachi 12.90 (Monte Carlo tree search with
patterns, no network) at a fixed number of playouts a move on one thread,
capturing dead stones before it passes. zero referees every game by its own rules (Tromp-Taylor area
scoring, positional superko) whatever the engines think; openings are varied
by a few fixed random moves in the centre of the board, each opening played
twice with colours swapped.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np

from zero.fileio import atomic_write_text
from zero.games.base import central_points
from zero.pairings import (LadderError, PartialPairing, _played, pairing_sgf,  # noqa: F401 (LadderError: its API)
                           read_pairings, write_pairing)
from zero.ratings import DEFAULT_ANCHOR, Pairing, Rating, fit_ratings
from zero.stats import MatchResult

GNUGO_FLAGS = "--mode gtp --chinese-rules --positional-superko --capture-all-dead"
GNUGO_MAX_LEVEL = 16  # GNU Go's default is 10; above it reads deeper and plays slower (9x9: about 3 s a move at 14,
                      # 9 s at 16 on one core, where 10 and 12 take under 1 s)
GNUGO_PATHS = ("gnugo", "/usr/games/gnugo", "/usr/local/bin/gnugo", "/opt/homebrew/bin/gnugo")
INSTALL_HINT = ("GNU Go 3.8 is needed for the ladder: `apt-get install gnugo` (Debian, Ubuntu; as root), "
                "`brew install gnu-go` (macOS), or build it from https://www.gnu.org/software/gnugo/")
PACHI_FLAGS = "threads=1 pass_all_alive"  # one thread; it captures dead stones before it passes (area scoring)
PACHI_PLAYOUTS = (500, 100_000)  # Pachi refuses fewer than 500; 100,000 is about 15 s a move on 9x9 on one core
PACHI_ENV = "ZERO_PACHI"
PACHI_HINT = ("Pachi 12.90 is needed for pachi:N opponents: `make pachi` builds it into .pachi/ from "
              "../shared/pachi/ (about 35 s); elsewhere `git clone -b pachi-12.90 https://github.com/pasky/pachi "
              ".pachi && make -C .pachi DCNN=0 JOSEKIFIX=0 GENERIC=1`, or set ZERO_PACHI to a Pachi binary")
_NAME = re.compile(r"^[A-Za-z0-9_.+-]+$")


def find_gnugo(command: str = "gnugo") -> str:
    """The GNU Go executable: `command` if it runs from PATH or is a path, else the usual places."""
    for candidate in (command, *GNUGO_PATHS):
        found = shutil.which(candidate)
        if found:
            return found
    raise LadderError(f"GNU Go not found (tried {command!r} and {', '.join(GNUGO_PATHS[1:])}). {INSTALL_HINT}")


@functools.lru_cache(maxsize=8)
def pachi_version(path: str) -> dict | None:
    """{"version", "git", "build"} from `path --version` (the build date left out, so that a rebuild of the
    same source reads the same); None when `path` is not Pachi (Debian's `pachi` is a platform game)."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10,
                             stdin=subprocess.DEVNULL).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return None
    if not out or not re.match(r"Pachi \d+\.\d+", out[0]):
        return None
    git = next((line.split()[1] for line in out[1:] if line.startswith("git ") and len(line.split()) > 1), None)
    build = next((line.split(",")[0].strip() for line in out[1:] if "build" in line), None)
    return {"version": out[0].strip(), "git": git, "build": build}


def find_pachi(command: str | None = None) -> str:
    """The Pachi executable: `command`, else $ZERO_PACHI, else .pachi/pachi in the working directory or in
    the repository (where `make pachi` builds it), else `pachi` on PATH. A named one that is not Pachi is
    an error; a `pachi` on PATH that is not (or in /usr/games) is passed over."""
    named = command or os.environ.get(PACHI_ENV)
    if named:
        found = shutil.which(named) or (named if Path(named).is_file() else None)
        if found is None or pachi_version(str(Path(found).resolve())) is None:
            raise LadderError(f"{named!r} ({'ZERO_PACHI' if not command else 'the Pachi command'}) is not a "
                              f"Pachi executable. {PACHI_HINT}")
        return str(Path(found).resolve())
    built = [Path.cwd() / ".pachi" / "pachi", Path(__file__).resolve().parents[1] / ".pachi" / "pachi"]
    on_path = shutil.which("pachi")
    for candidate in [*built, *([Path(on_path)] if on_path and not on_path.startswith("/usr/games/") else [])]:
        if candidate.is_file() and pachi_version(str(candidate.resolve())) is not None:
            return str(candidate.resolve())
    raise LadderError(f"Pachi not found (looked at ${PACHI_ENV}, {built[0]}, {built[1]} and PATH). {PACHI_HINT}")


def _pachi_playouts(spec: str) -> int:
    n = spec.split(":", 1)[1]
    if not (n.isascii() and n.isdigit()) or not PACHI_PLAYOUTS[0] <= int(n) <= PACHI_PLAYOUTS[1]:
        raise LadderError(f"opponent {spec!r}: Pachi's playouts a move are {PACHI_PLAYOUTS[0]:,} to "
                          f"{PACHI_PLAYOUTS[1]:,}")
    return int(n)


def pachi_options(spec: str) -> str:
    """Pachi's command-line options for `pachi:N`: N playouts a move (`-t =N`), one thread, Chinese rules."""
    return f"-t ={_pachi_playouts(spec)} -r chinese {PACHI_FLAGS}"


def engine_facts(spec: str, pachi: str | None = None) -> dict | None:
    """What a pairing records of an outside engine beyond its spec, so that results are compared only
    between the same engine and settings: Pachi's version, git commit, build and options. None otherwise."""
    if not spec.startswith("pachi:"):
        return None
    return {"engine": "pachi", **pachi_version(find_pachi(pachi)), "options": pachi_options(spec)}


def opponent_name(spec: str) -> str:
    """A short, file-safe name for an opponent spec: gnugo:10 -> gnugo-l10, mcts:1000 -> mcts-1000,
    pachi:5000 -> pachi-5000."""
    if spec.startswith("gnugo:"):
        return f"gnugo-l{int(spec.split(':', 1)[1])}"
    if spec.startswith("pachi:"):
        return f"pachi-{int(spec.split(':', 1)[1])}"
    if spec.startswith("mcts:"):
        return f"mcts-{int(spec.split(':', 1)[1])}"
    name = Path(spec).stem if spec.endswith(".pt") else spec
    name = re.sub(r"[^A-Za-z0-9_.+-]", "_", name)
    return name


def player_spec(spec: str, gnugo: str = "gnugo", pachi: str | None = None) -> str:
    """The zero.match player spec of an opponent (`gnugo:L` and `pachi:N` become GTP command lines)."""
    if spec.startswith("pachi:"):
        options = pachi_options(spec)
        return f"gtp:{shlex.quote(find_pachi(pachi))} {options}"
    if spec.startswith("gnugo:"):
        level = spec.split(":", 1)[1]
        if not level.isdigit() or not 0 <= int(level) <= GNUGO_MAX_LEVEL:
            raise LadderError(f"opponent {spec!r}: GNU Go levels are 0 to {GNUGO_MAX_LEVEL}")
        return f"gtp:{find_gnugo(gnugo)} {GNUGO_FLAGS} --level {int(level)}"
    return spec


def spec_sha256(spec: str) -> str | None:
    """The sha256 of a network player's checkpoint (its options after `@` aside); None for other players."""
    from zero.shards import file_sha256

    path = Path(spec.split("@", 1)[0])
    if not _is_network(spec) or not path.is_file():
        return None
    return file_sha256(path)


def is_fixed_opponent(name: str) -> bool:
    """An outside engine or a fixed baseline (gnugo-lN, pachi-N, mcts-N, random): the same player in every
    ladder."""
    return re.fullmatch(r"gnugo-l\d+|pachi-\d+|mcts-\d+|random", name) is not None


def calibration_pairs(opponents: list[str]) -> list[tuple[str, str]]:
    """Consecutive fixed opponents (GNU Go levels, Pachi, pure MCTS, random), which play each other once so
    that the anchor reaches every one of them."""
    fixed = [o for o in opponents if o.split(":")[0] in ("gnugo", "pachi", "mcts", "random")]
    return list(zip(fixed, fixed[1:]))


def fresh_seed(model: str | Path) -> int:
    """The seed of a network's fresh starts (`zero ladder --seed fresh`): read from its file's sha256, so every
    candidate meets openings of its own, none that a line selected its champions on (the usual starts are seed
    0), and a ladder run again meets the same ones. 60 bits: seed + i for each opponent stays a seed."""
    from zero.shards import file_sha256

    return int(file_sha256(model)[:15], 16)


def openings(size: int, pairs: int, moves: int, seed: int) -> list[list[int]]:
    """`pairs` distinct openings of `moves` random moves on the central points of a size x size board.

    Points at least two lines from the edge (the centre 5x5 of 9x9); an action
    is row * size + column, as in zero's games.
    """
    if moves == 0:
        return [[]]
    centre = central_points(size, size)
    rng = np.random.default_rng(seed)
    out, seen = [], set()
    for _ in range(pairs * 20):
        if len(out) == pairs:
            break
        seq = tuple(int(a) for a in rng.choice(centre, size=min(moves, len(centre)), replace=False))
        if seq not in seen:
            seen.add(seq)
            out.append(list(seq))
    return out


def visits_per_move(params, model: str, seconds: float, positions: int = 3, seed: int = 0) -> dict:
    """The visits a move that `seconds` of one game's search buy `model` on this machine.

    zero's own engine (the `zero gtp` search, with params.mcts.leaf_batch and params.gate.threads) thinks
    `seconds` on `positions` Go positions (the empty board, then after 20 and 40 moves of its own play);
    the median of the visits it reached is the answer. Returns {"visits", "seconds_per_move",
    "visits_per_second", "samples"}.
    """
    from zero.engine import Engine, EngineConfig
    from zero.games.go import GoPosition
    from zero.inference import cpu_model
    from zero.network import set_threads

    set_threads(params.gate.threads)
    engine = Engine(EngineConfig.from_params(params, visits=10_000_000), model, seed=seed)
    position = GoPosition.initial(params.game.size, params.game.komi, open_ended=True,
                                  liberty_planes=params.game.liberty_planes)
    engine.think(position, seconds=min(seconds, 1.0))  # compiles the kernels before anything is timed
    samples = []
    for k in range(positions):
        start = time.perf_counter()
        search = engine.think(position, seconds=seconds)
        elapsed = time.perf_counter() - start
        visits = int(search.tree.root_visits(np.zeros(1, np.int32))[0])
        samples.append({"moves": len(position.moves), "visits": visits, "seconds": round(elapsed, 3)})
        for _ in range(20 if k < positions - 1 else 0):
            position = position.play(engine.genmove(position, seconds=min(seconds, 0.2), resign=False))
    median = sorted(s["visits"] for s in samples)[len(samples) // 2]
    return {"visits": max(1, median), "seconds_per_move": seconds,
            "visits_per_second": round(median / seconds, 1), "samples": samples,
            "threads": params.gate.threads, "cpu": cpu_model()}


def kept_timing(out_dir: str | Path, params, model: str, seconds: float) -> dict | None:
    """The time a move an earlier timed run of this ladder directory measured for `model` (the same network
    file, seconds, search and threads), from its finished or interrupted pairings; None if there is none.

    A timed ladder plays every game at the visits it measured first: measured again on resuming, a few visits
    more or less would make the interrupted pairing another one, and its finished games would be replayed.
    """
    from zero.pairings import PARTIAL

    out_dir, digest = Path(out_dir), spec_sha256(model)
    search = json.loads(json.dumps(params.mcts.model_dump(mode="json")))
    kept = sorted((out_dir / "pairings").glob("*.json")) + sorted((out_dir / PARTIAL).glob("*/settings.json"))
    for path in kept:
        try:
            record = json.loads(path.read_text())
            timed = record["time_per_move"]
            same = (record["a_sha256"] == digest and record.get("search") == search
                    and timed["seconds_per_move"] == seconds and timed.get("threads", params.gate.threads) ==
                    params.gate.threads and int(timed["visits"]) > 0)
        except (ValueError, KeyError, TypeError):
            continue
        if same:
            return timed
    return None


def play_pairing(params, a: str, b: str, games: int, seed: int, visits: int, out_dir: str | Path,
                 a_name: str | None = None, b_name: str | None = None, label: str = "ladder",
                 concurrent: int = 10, opening_moves: int = 2, gnugo: str = "gnugo", progress=None,
                 extra: dict | None = None, pachi: str | None = None) -> dict:
    """Play `games` games (whole colour-swapped pairs) of a against b and record them in a ladder dir.

    `progress` is zero.match.run_match's: progress(games_done, games, positions) as each game ends.
    `extra` goes into the record as it is (e.g. the time a move the visits stand for); Pachi's version and
    options go in as `a_engine` / `b_engine` (`pachi`: its executable, else found by find_pachi).
    Returns the pairing record (also written to pairings/<a>--<b>--<label>.json), with the mcts section
    the networks searched with (`search`). A pairing already in the directory with the same players (and
    network files), games, seed, visits, openings, game, komi, search and `extra` is not played again:
    its record is returned, so an interrupted ladder resumes and a ladder run again adds only what is new.
    Each game is kept as it ends (zero.pairings.PartialPairing), so a pairing interrupted mid-way plays
    only the games it had not finished. `progress` is first called with the games carried over (0 on a
    fresh pairing) and positions None, and the record's `seconds` adds up the attempts up to their last
    finished game (`games_resumed`: how many).
    """
    from zero.games import make_game
    from zero.arena import write_sgf_collection
    from zero.match import make_player, params_for_players, run_match

    if games < 2 or games % 2:
        raise LadderError(f"a ladder match is whole colour-swapped pairs: {games} games is not a positive even number")
    a_name, b_name = a_name or opponent_name(a), b_name or opponent_name(b)
    for name in (a_name, b_name, label):
        if not _NAME.match(name):
            raise LadderError(f"player or label name {name!r} may only hold letters, digits and _ . + -")
    out_dir = Path(out_dir)
    key = f"{a_name}--{b_name}--{label}"
    settings = {
        "a_spec": a, "b_spec": b,
        **{f"{side}_sha256": digest for side, digest in (("a", spec_sha256(a)), ("b", spec_sha256(b))) if digest},
        **{f"{side}_engine": facts for side, facts in (("a", engine_facts(a, pachi)), ("b", engine_facts(b, pachi)))
           if facts},
        "games": games, "seed": seed, "visits": visits, "opening_moves": opening_moves, "game": params.game.tag,
        "komi": params.game.komi if params.game.name == "go" else None,
        **({"search": params.mcts.model_dump(mode="json")} if any(map(_is_network, (a, b))) else {}),
        **(extra or {}),
    }
    done = _played(out_dir, key, settings)
    if done is not None:
        return done
    partial = PartialPairing(out_dir, key, settings)
    earlier = partial.load()
    params = params_for_players(params, [player_spec(x, gnugo, pachi) for x in (a, b)])
    game = make_game(params.game)
    # Go: fixed central openings; Gomoku: the first moves are sampled from the players' own search.
    opens = openings(params.game.size, games // 2, opening_moves, seed) if params.game.name == "go" else None
    todo = sorted(set(range(games)) - {r.index for r in earlier})
    started = time.time() - partial.seconds_before
    if progress is not None:
        progress(len(earlier), games, None)  # positions None: the games carried over from an earlier attempt
    if todo:
        pa = make_player(player_spec(a, gnugo, pachi), params, game, visits, seed)
        pb = make_player(player_spec(b, gnugo, pachi), params, game, visits, seed + 1)
        out = run_match(game, pa, pb, len(todo), seed, concurrent, 0 if opens else opening_moves, -1.0,
                        openings=opens, indices=todo, on_game=lambda rec: partial.add(rec, time.time() - started),
                        progress=None if progress is None else
                        (lambda done, _, moves: progress(len(earlier) + done, games, moves)))
        earlier += out.records
    records = sorted(earlier, key=lambda r: r.index)
    write_sgf_collection(records, params.game, pairing_sgf(out_dir, key), event="ladder match",
                         players=(a_name, b_name))
    record = {
        "a": a_name, "b": b_name, "label": label, **settings,
        **_score(records).to_dict(), **games_by_colour(records, params.game.name == "go"),
        "rules": "tromp-taylor area, positional superko, refereed by zero",
        "seconds": round(time.time() - started, 1),
        **({"games_resumed": games - len(todo)} if len(todo) < games else {}),
        "date": time.strftime("%Y-%m-%d"),
    }
    write_pairing(out_dir, record)
    partial.close()
    return record


def _score(records) -> MatchResult:
    """Player a's wins, losses and draws over a pairing's games (a is black in the even-numbered ones)."""
    mine = [r.result * (1 if r.index % 2 == 0 else -1) for r in records]
    return MatchResult(wins=sum(m > 0 for m in mine), losses=sum(m < 0 for m in mine), draws=sum(m == 0 for m in mine))


def games_by_colour(records, go: bool) -> dict:
    """Player a's results with each colour, and on Go each game's final margin from a's side.

    a plays black in the even-numbered games (zero.arena). `a_as_black` and `a_as_white` hold
    wins, losses and draws; `a_margins` (Go) the Tromp-Taylor score of each game in game order, positive
    where a won, None for a game that ended by resignation.
    """
    out = {f"a_as_{c}": {"wins": 0, "losses": 0, "draws": 0} for c in ("black", "white")}
    margins = []
    for rec in sorted(records, key=lambda r: r.index):
        colour, sign = ("black", 1) if rec.index % 2 == 0 else ("white", -1)
        won = rec.result * sign
        out[f"a_as_{colour}"]["wins" if won > 0 else "losses" if won < 0 else "draws"] += 1
        margins.append(None if rec.resigned else round(float(rec.score) * sign, 1))
    if go:
        out["a_margins"] = margins
    return out


def colour_text(record: dict) -> str:
    """`a`'s score as black and as white, `5-5-0 / 3-7-0`, from a pairing record; "" for an older one."""
    parts = [record.get(f"a_as_{c}") for c in ("black", "white")]
    if not all(parts):
        return ""
    return " / ".join(f"{p['wins']}-{p['losses']}-{p['draws']}" for p in parts)


def _is_network(spec: str) -> bool:
    """A player spec that names a network (a checkpoint or `init`), whose search the params set."""
    return not spec.startswith(("gtp:", "mcts:", "gnugo:", "pachi:")) and spec != "random"


def parse_anchor(text: str) -> tuple[str, float]:
    """`gnugo:1=0` or `gnugo-l1=0` -> ("gnugo-l1", 0.0)."""
    if "=" not in text:
        raise LadderError(f"anchor {text!r} is not of the form <player>=<rating>, e.g. gnugo:1=0")
    name, value = text.rsplit("=", 1)
    try:
        return opponent_name(name.strip()), float(value)
    except ValueError:
        raise LadderError(f"anchor {text!r}: {value!r} is not a number") from None


def fit_dir(ladder_dir: str | Path, anchor: tuple[str, float] = DEFAULT_ANCHOR,
            fallback_anchor: str | None = None) -> dict:
    """Fit ratings over every pairing of a ladder dir and write ratings.json.

    When the anchor played no game, the ratings are relative to `fallback_anchor` at 0, reported with
    "anchored": false and the anchor that played none as "scale_anchor"; by default the strongest-named fixed
    opponent in the pool (GNU Go's highest level, else the most rollouts), which means the same player in every
    ladder, else the first pairing's player a.
    """
    records = read_pairings(ladder_dir)
    if not records:
        raise LadderError(f"{ladder_dir}: no pairings to fit")
    if fallback_anchor is None:
        fixed = sorted({n for r in records for n in (r["a"], r["b"]) if is_fixed_opponent(n)},
                       key=lambda n: (n.startswith("gnugo"), int(re.sub(r"\D", "", n) or 0)))
        fallback_anchor = fixed[-1] if fixed else records[0]["a"]
    pairs = [Pairing(r["a"], r["b"], r["wins"], r["losses"], r["draws"]) for r in records]
    reference = {"player": anchor[0], "elo": anchor[1], "anchored": True}
    ratings = fit_ratings(pairs, anchor)
    if not ratings and fallback_anchor:
        reference = {"player": fallback_anchor, "elo": 0.0, "anchored": False, "scale_anchor": anchor[0]}
        ratings = fit_ratings(pairs, (fallback_anchor, 0.0))
    out = {
        "anchor": reference,
        "method": "maximum-likelihood Bradley-Terry over all pairings, draws half, one virtual draw per pair; "
                  "95% intervals from the observed information",
        "pairings": len(records),
        "games": sum(p.games for p in pairs),
        "ratings": {name: r.to_dict() for name, r in sorted(ratings.items(), key=lambda kv: -kv[1].elo)},
    }
    atomic_write_text(Path(ladder_dir) / "ratings.json", json.dumps(out, indent=1) + "\n")
    return out


def scale_text(anchor: dict) -> str:
    """What a fit's ratings are relative to, for a title or an axis: "(gnugo-l1 = 0)", or where the scale's
    anchor played no game, "relative to gnugo-l10 = 0 (no game against gnugo-l1, the scale's anchor)"."""
    if anchor["anchored"]:
        return f"({anchor['player']} = {anchor['elo']:g})"
    missing = anchor.get("scale_anchor")  # absent from the ratings.json of fits before it was recorded
    return (f"relative to {anchor['player']} = {anchor['elo']:g} "
            f"(no game against {missing + ', ' if missing else ''}the scale's anchor)")


def table(fitted: dict, records: list[dict]) -> list[dict]:
    """Rows of the ladder table: one per pairing, with both players' ratings."""
    ratings = fitted["ratings"]
    rows = []
    for r in records:
        rows.append({
            "a": r["a"], "b": r["b"], "label": r.get("label", ""), "games": r["wins"] + r["losses"] + r["draws"],
            "score": f"{r['wins']}-{r['losses']}-{r['draws']}", "win_rate": r.get("win_rate"),
            "by_colour": colour_text(r),
            "elo_diff": r.get("elo"), "elo_diff_low": r.get("elo_low"), "elo_diff_high": r.get("elo_high"),
            "a_rating": ratings.get(r["a"]), "b_rating": ratings.get(r["b"]), "date": r.get("date"),
        })
    return rows


def rating_of(fitted: dict, name: str) -> Rating | None:
    r = fitted["ratings"].get(name)
    return Rating(name, r["elo"], r["elo_low"], r["elo_high"], r["games"]) if r else None
