"""A ladder directory's files, and two ladders' players compared on the same starts.

    pairings/<a>--<b>--<label>.json   one match's result from a's view, with how it was played
    sgf/<a>--<b>--<label>.sgf.gz      its games, one gzip-compressed SGF collection (zero.sgf)
    players.json                      optional facts per player (generation, cumulative compute)
    .partial/<a>--<b>--<label>/       a pairing still being played: settings.json and games.jsonl, a line a
                                      game written as it ends, so an interrupted pairing resumes with the games
                                      it finished; removed once the pairing is recorded

zero.ladder plays the pairings and fits the ratings; zero.ladder_plot draws them. A directory written
before the collections, with a folder of SGF files a pairing (sgf/<a>--<b>--<label>/), is turned into
this layout by `zero sgf pack DIR`.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

from zero.fileio import atomic_write_text
from zero.ratings import Pairing


class LadderError(RuntimeError):
    """A ladder that cannot run or a ladder directory that cannot be read; the message says which."""


def _played(out_dir: Path, key: str, settings: dict) -> dict | None:
    """The pairing record `key` of the directory if it was played with these settings (a network known by its
    sha256, wherever it is read from now) and its games are there; else None. LadderError for a directory of
    the older layout (a folder of SGF files a pairing), which is packed first rather than played again."""
    from zero.sgf import SgfError, read_collection

    if (out_dir / "sgf" / key).is_dir():
        raise LadderError(f"{out_dir / 'sgf' / key}: a folder of SGF files; `zero sgf pack {out_dir}` makes it "
                          f"{pairing_sgf(out_dir, key).name}, the layout the ladder reads")
    path = _pairing_path(out_dir, key)
    if not path.is_file() or not pairing_sgf(out_dir, key).is_file():
        return None
    try:
        record = json.loads(path.read_text())
        games = len(read_collection(pairing_sgf(out_dir, key)))
    except (ValueError, SgfError):
        return None
    return record if _recorded_with(record, settings) and record.get("games") == games == settings["games"] else None


def _recorded_with(record: dict, settings: dict) -> bool:
    """Whether a pairing record was played with these settings, whatever its number of games."""
    return all(record.get(k) == v for k, v in _identity(json.loads(json.dumps(settings))).items())


PARTIAL = ".partial"  # a ladder dir's folder of pairings still being played


def _identity(settings: dict) -> dict:
    """What makes two attempts the same pairing: every setting but its number of games, and a network by its
    sha256 rather than the path it was read from (a network moved or copied plays the same games)."""
    return {k: v for k, v in settings.items()
            if k != "games" and not (k.endswith("_spec") and settings.get(k.removesuffix("_spec") + "_sha256"))}


class PartialPairing:
    """The finished games of a pairing still being played, kept in <ladder dir>/.partial/<key>/.

    settings.json holds the pairing's settings, games.jsonl its finished games, one JSON line each (its moves,
    result, score, seed and the pairing's seconds so far); the file is written again, atomically, as each game
    ends. `load()` gives the games an earlier attempt finished, so only the others are played again. Game i of
    a pairing is the same game whatever the pairing's length (its opening, colours and seed follow i), so an
    attempt of another number of games but the same other settings lends its games below this pairing's count:
    a 200-game pairing stopped at game 150 is recorded as 140 games from them, and goes on to 200 later. The
    directory's recorded pairing of the same settings but another number of games lends its games too, read back
    from its SGF collection (`_recorded_games`): a 40-game probe goes on to 200 without playing its 40 again, and
    a pairing recorded part-way goes on where its .partial/ folder is gone (another machine). The games of other
    settings are not this pairing's and are removed, saying which settings differ; a network is
    known by its sha256, so a network file moved or copied elsewhere resumes its games. `close()` removes the
    folder once the pairing's record and collection are written, unless it holds games beyond this pairing's
    count.
    """

    GAMES = "games.jsonl"

    def __init__(self, ladder_dir: str | Path, key: str, settings: dict):
        self.folder = Path(ladder_dir) / PARTIAL / key
        self.settings = json.loads(json.dumps(settings))
        self.games = self.settings["games"]
        self.seconds_before = 0.0  # the pairing's seconds in earlier attempts, up to their last game's end
        self.kept: dict[int, dict] = {}  # every finished game in the folder by index, this pairing's and beyond

    def load(self) -> list:
        """The games finished with these settings (zero.arena.GameRecord, by index, those below this pairing's
        count); LadderError names the line of games.jsonl that cannot be read (delete it to play that game
        again)."""
        from zero.arena import GameRecord

        settings = self.folder / "settings.json"
        try:
            kept = json.loads(settings.read_text()) if settings.is_file() else None
        except ValueError:
            kept = None
        theirs, mine = _identity(kept) if isinstance(kept, dict) else None, _identity(self.settings)
        if theirs != mine or not isinstance(kept.get("games"), int):
            if theirs is not None and (self.folder / self.GAMES).is_file():
                differ = sorted(k for k in {*theirs, *mine} if theirs.get(k) != mine.get(k))
                print(f"{self.folder}: the games kept there were played with other settings "
                      f"({', '.join(differ)}); they are not this pairing's and are removed", file=sys.stderr)
            shutil.rmtree(self.folder, ignore_errors=True)
            kept = self.settings
        self.folder.mkdir(parents=True, exist_ok=True)
        most = max(kept["games"], self.games)
        atomic_write_text(settings, json.dumps({**self.settings, "games": most}, indent=1, sort_keys=True) + "\n")
        path = self.folder / self.GAMES
        lines = path.read_text().splitlines() if path.is_file() else []
        records = []
        for number, line in enumerate(lines, 1):
            try:
                d = json.loads(line)
                rec = GameRecord(index=int(d["index"]), seed=int(d["seed"]), no_resign=bool(d["no_resign"]),
                                 moves=[int(m) for m in d["moves"]], result=int(d["result"]),
                                 resigned=bool(d["resigned"]), score=float(d["score"]))
                if not 0 <= rec.index < most or rec.result not in (-1, 0, 1) or rec.index in self.kept:
                    raise ValueError(f"game index {rec.index} out of range or twice, or result {rec.result}")
                seconds = float(d["seconds"])
            except (ValueError, KeyError, TypeError) as e:
                raise LadderError(f"{path}, line {number}: not a finished game of pairing {self.folder.name} "
                                  f"({type(e).__name__}: {e}); delete the line to play that game again") from None
            self.kept[rec.index] = d
            if rec.index < self.games:
                records.append(rec)
                self.seconds_before = max(self.seconds_before, seconds)
        lent = {i: d for i, d in _recorded_games(self.folder.parent.parent, self.folder.name, self.settings).items()
                if i not in self.kept}
        if lent:
            print(f"{pairing_sgf(self.folder.parent.parent, self.folder.name)}: {len(lent)} games of the recorded "
                  f"pairing carried into this {self.games}-game one", file=sys.stderr)
            self.kept.update(lent)
            most = max(most, max(lent) + 1)
            atomic_write_text(settings, json.dumps({**self.settings, "games": most}, indent=1, sort_keys=True) + "\n")
            atomic_write_text(path, "".join(json.dumps(self.kept[i]) + "\n" for i in sorted(self.kept)))
            for i in sorted(i for i in lent if i < self.games):
                d = lent[i]
                records.append(GameRecord(index=i, seed=d["seed"], no_resign=False, moves=d["moves"],
                                          result=d["result"], resigned=d["resigned"], score=d["score"]))
                self.seconds_before = max(self.seconds_before, d["seconds"])
        return sorted(records, key=lambda r: r.index)

    def add(self, rec, seconds: float) -> None:
        """Keep a game that ended, `seconds` into the pairing (earlier attempts included)."""
        self.kept[rec.index] = {
            "index": rec.index, "seed": rec.seed, "no_resign": rec.no_resign, "moves": list(map(int, rec.moves)),
            "result": int(rec.result), "resigned": bool(rec.resigned), "score": float(rec.score),
            "seconds": round(seconds, 1)}
        atomic_write_text(self.folder / self.GAMES,
                          "".join(json.dumps(self.kept[i]) + "\n" for i in sorted(self.kept)))

    def close(self) -> None:
        """Remove the folder, unless it keeps games beyond this pairing's count for a longer one."""
        if any(i >= self.games for i in self.kept):
            return
        shutil.rmtree(self.folder, ignore_errors=True)
        try:
            self.folder.parent.rmdir()  # .partial/ itself once no pairing is in progress
        except OSError:
            pass


def _recorded_games(ladder_dir: Path, key: str, settings: dict) -> dict[int, dict]:
    """The games of the directory's recorded pairing `key` where it was played with these settings but another
    number of games (a 40-game probe on its way to 200; a run recorded part-way, to go on where its .partial/
    folder is gone, as on another machine), as games.jsonl has them, by index; {} where there is none.

    Each game is read back from the pairing's SGF collection: its moves, its result (RE: `W+4.5`, `B+R`, `0`;
    a's games are black's in the even-numbered ones, as PB says) and its seed (C: `seed N`), with the record's
    seconds. A collection that does not agree with its record is named on stderr and lends nothing."""
    from zero.sgf import SgfError, read_collection

    path, sgf = _pairing_path(ladder_dir, key), pairing_sgf(ladder_dir, key)
    if not path.is_file() or not sgf.is_file():
        return {}
    try:
        record = json.loads(path.read_text())
        if not _recorded_with(record, settings) or record.get("games") == settings["games"]:
            return {}
        games = read_collection(sgf)
        if len(games) != record["games"]:
            raise ValueError(f"{len(games)} games where the record says {record['games']}")
        lent = {}
        for i, g in enumerate(games):
            players = (record["a"], record["b"]) if i % 2 == 0 else (record["b"], record["a"])
            if (g.black, g.white) != players:
                raise ValueError(f"game {i + 1} is {g.black} against {g.white}, not {players[0]} against {players[1]}")
            seed = re.search(r"\bseed (\d+)", " ".join(g.properties.get("C", [])))
            if seed is None or g.result is None:
                raise ValueError(f"game {i + 1} has no seed in its comment or no result")
            winner, _, margin = g.result.partition("+")
            points = re.fullmatch(r"\d+(\.\d+)?", margin) and float(margin)
            if g.result == "0":
                result, resigned, score = 0, False, 0.0
            elif winner in ("B", "W") and (margin in ("", "R") or points):
                result = 1 if winner == "B" else -1
                resigned, score = margin == "R", result * points if points else 0.0
            else:
                raise ValueError(f"game {i + 1}'s result {g.result!r} is not W+<points>, B+R or 0")
            lent[i] = {"index": i, "seed": int(seed.group(1)), "no_resign": False, "moves": list(map(int, g.moves)),
                       "result": result, "resigned": resigned, "score": score, "seconds": float(record["seconds"])}
    except (ValueError, KeyError, TypeError, SgfError) as e:
        print(f"{sgf}: its games are not carried into this pairing ({e})", file=sys.stderr)
        return {}
    return lent


def _record_key(record: dict) -> str:
    """A pairing record's key, <a>--<b>--<label>: the name of its JSON file and of its SGF collection."""
    return f"{record['a']}--{record['b']}--{record.get('label', 'ladder')}"


def pairing_sgf(ladder_dir: str | Path, key: str) -> Path:
    """Where a ladder directory keeps the games of pairing `key`: sgf/<key>.sgf.gz."""
    return Path(ladder_dir) / "sgf" / f"{key}.sgf.gz"


def _pairing_path(ladder_dir: str | Path, key: str) -> Path:
    """Where a ladder directory keeps the record of pairing `key` (<a>--<b>--<label>)."""
    return Path(ladder_dir) / "pairings" / f"{key}.json"


def write_pairing(ladder_dir: str | Path, record: dict) -> Path:
    """Write one pairing record as pairings/<a>--<b>--<label>.json (atomically)."""
    for key in ("a", "b", "wins", "losses", "draws"):
        if key not in record:
            raise LadderError(f"pairing record lacks {key!r}")
    path = _pairing_path(ladder_dir, _record_key(record))
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(record, indent=1, sort_keys=True) + "\n")
    return path


def read_pairings(ladder_dir: str | Path) -> list[dict]:
    """Every pairing record of a ladder dir, sorted by file name; a malformed file is named."""
    folder = Path(ladder_dir) / "pairings"
    if not folder.is_dir():
        raise LadderError(f"{ladder_dir}: not a ladder directory (no pairings/ folder)")
    out = []
    for path in sorted(folder.glob("*.json")):
        try:
            rec = json.loads(path.read_text())
            Pairing(str(rec["a"]), str(rec["b"]), int(rec["wins"]), int(rec["losses"]), int(rec["draws"]))
        except (ValueError, KeyError, TypeError) as e:
            raise LadderError(f"{path}: not a pairing record ({type(e).__name__}: {e})") from None
        out.append(rec)
    return out


STARTS = ("game", "komi", "seed", "games", "opening_moves")  # what fixes a pairing's starts and colours


def game_results(ladder_dir: str | Path, record: dict) -> list[tuple[tuple[int, ...], float]]:
    """Each game of a pairing, in game order, from its SGF collection: (its first `opening_moves` moves, a's
    points: 1, 0.5 or 0). LadderError names a missing or unreadable collection or game."""
    from zero.sgf import SgfError, read_collection

    path = pairing_sgf(ladder_dir, _record_key(record))
    if not path.is_file() and path.with_name(_record_key(record)).is_dir():
        raise LadderError(f"{path.with_name(_record_key(record))}: a folder of SGF files; `zero sgf pack "
                          f"{ladder_dir}` makes it {path.name}, the layout the ladder reads")
    try:
        games = read_collection(path)
    except SgfError as e:
        raise LadderError(str(e)) from None
    if len(games) != record["games"]:
        raise LadderError(f"{path}: {len(games)} games for a pairing of {record['games']} games")
    out = []
    for number, g in enumerate(games, start=1):
        if record["a"] not in (g.black, g.white) or not g.result:
            raise LadderError(f"{path}: game {number}: {record['a']} does not play it, or it has no result (RE)")
        winner = g.result.strip().upper()[:1]
        a_colour = "B" if g.black == record["a"] else "W"
        points = 0.5 if winner not in ("B", "W") else float(winner == a_colour)
        out.append((tuple(g.moves[: record.get("opening_moves") or 0]), points))
    return out


def paired(dir_a: str | Path, a: str, dir_b: str | Path, b: str) -> list[dict]:
    """Players a (of ladder dir_a) and b (of dir_b) on the same starts: for each opponent both played with
    the same seed, games, openings, game and komi, which starts each won (a draw is not a win) and the
    exact McNemar test of the starts won by one alone (zero.stats.mcnemar_exact).

    Each row: opponent, label, games, a_wins, b_wins, both, a_only, b_only, neither, p, a_visits, b_visits.
    LadderError when no opponent was played by both on the same starts, or when their SGFs' openings differ.
    """
    from zero.stats import mcnemar_exact

    def of(folder, name):
        return {(r["b"], r.get("label", "ladder")): r for r in read_pairings(folder) if r["a"] == name}

    mine, theirs = of(dir_a, a), of(dir_b, b)
    rows = []
    for (opponent, label), ra in sorted(mine.items()):
        rb = theirs.get((opponent, label))
        if rb is None or any(ra.get(k) != rb.get(k) for k in STARTS):
            continue
        ga, gb = game_results(dir_a, ra), game_results(dir_b, rb)
        for i, ((open_a, _), (open_b, _)) in enumerate(zip(ga, gb)):
            if open_a != open_b:
                raise LadderError(f"{a} and {b} against {opponent}: game {i} opens differently in their SGFs")
        won = [(x == 1, y == 1) for (_, x), (_, y) in zip(ga, gb)]
        a_only, b_only = sum(x and not y for x, y in won), sum(y and not x for x, y in won)
        rows.append({
            "opponent": opponent, "label": label, "games": len(won),
            "a_wins": sum(x for x, _ in won), "b_wins": sum(y for _, y in won),
            "both": sum(x and y for x, y in won), "a_only": a_only, "b_only": b_only,
            "neither": sum(not (x or y) for x, y in won),
            "a_visits": ra.get("visits"), "b_visits": rb.get("visits"), "p": mcnemar_exact(a_only, b_only),
        })
    if not rows:
        raise LadderError(f"{a} in {dir_a} and {b} in {dir_b} played no opponent on the same starts "
                          f"(the same {', '.join(STARTS)}; a ladder's i-th opponent plays on its seed + i, "
                          "so list the opponents in the same order)")
    return rows


def read_players(ladder_dir: str | Path) -> dict:
    path = Path(ladder_dir) / "players.json"
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text())
    except ValueError as e:
        raise LadderError(f"{path}: not valid JSON ({e})") from None
