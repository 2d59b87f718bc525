"""The results pages, written from the committed records: no number in them is typed by hand.

    python -m flows.results            (or `make results`; `make ship` runs it after each ship)
    python -m flows.results --check    exit 1, naming the file, where a page is not what the records give

It reads the lineages (models/*.json, the shipped champions; campaigns/state/*.json and any lineage kept in a
result's directory, for the compute behind an unshipped generation), every directory of docs/strength/ with
a pairings/ folder (`zero ladder`) or a match record (`zero match`: match.json, <a>-vs-<b>*.json), and the
lines' one-fit ratings (docs/strength/*/ratings.json beside a history.yaml, flows.history). It writes:

- README.md: each shipped champion against its outside opponents (GNU Go's levels, Pachi's strengths, the
  strongest pure MCTS), then its ladders at a time per move kept in docs/strength/ (timed_ladders);
- docs/strength.md: every result, newest first, and each line's shipped champions on one rating scale;
- docs/history.md: how the shipped 9x9 champion was made, run by run, from its lineage;

each between the markers `<!-- results-table: begin -->` and `<!-- results-table: end -->`, nothing else of
the file changed. A player is placed in its lineage by its network's sha256 (a pairing's `a_sha256`), so the
compute beside a result is the core- and GPU-hours of every generation up to that network.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

from flows.history import table_md
from flows.layout import LineError, read_json
from zero.fileio import atomic_write_text
from zero.ladder import is_fixed_opponent
from zero.pairings import LadderError, read_pairings
from zero.ratings import DEFAULT_ANCHOR
from zero.stats import elo_interval

BEGIN, END = "<!-- results-table: begin -->", "<!-- results-table: end -->"

# The one Elo scale of each game: the player held at the rating. Go's is zero.ratings.DEFAULT_ANCHOR, the ladder's
# default anchor; Gomoku's is its campaigns' `ladder.anchor`. A rating fitted on another anchor (older records)
# is shifted onto it. A difference between two players is the same on any scale.
SCALE = {"go": DEFAULT_ANCHOR, "gomoku": ("mcts-1000", 0.0)}


class ResultsError(ValueError):
    """A record that cannot be read, or a page without its markers; the message names the file and why."""


@dataclass(frozen=True)
class Placed:
    """A network's place in a lineage: its line, its generation of the line and the compute up to it."""

    tag: str
    generation: int
    core_hours: float  # CPU core-hours (a GPU machine's cores are in gpu_hours' generations, not here)
    gpu_hours: float


@dataclass(frozen=True)
class Result:
    date: str  # YYYY-MM-DD, or "" where the record does not say
    player: str
    opponent: str
    wins: int
    losses: int
    draws: int
    elo: tuple[float, float, float]  # difference, low, high (95%)
    settings: str
    compute: str
    record: str  # a Markdown link to the directory's README, or its file
    order: int  # the player's generation, to order a day's results


def line_label(tag: str) -> str:
    """`go-9` -> 9x9 Go, `gomoku-6x6x4` -> Gomoku 6x6 (4 in a row); another tag as it is."""
    if m := re.fullmatch(r"go-(\d+)", tag):
        return f"{m[1]}x{m[1]} Go"
    if m := re.fullmatch(r"gomoku-(\d+)x(\d+)x(\d+)", tag):
        return f"Gomoku {m[1]}x{m[2]} ({m[3]} in a row)"
    return tag


def opponent_label(name: str) -> str:
    if m := re.fullmatch(r"gnugo-l(\d+)", name):
        return f"GNU Go 3.8 level {m[1]}"
    if m := re.fullmatch(r"pachi-(\d+)", name):
        return f"Pachi 12.90, {int(m[1]):,} playouts"
    if m := re.fullmatch(r"mcts-(\d+)", name):
        return f"pure MCTS, {int(m[1]):,} rollouts"
    return "random moves" if name == "random" else f"`{name}`"


def _read(path: Path) -> dict:
    try:
        return read_json(path)
    except (LineError, OSError) as e:
        raise ResultsError(str(e)) from None


def _generations(lineage: dict, path: Path) -> list[dict]:
    try:
        return [g for run in lineage["runs"] for g in run["generations"]]
    except (KeyError, TypeError) as e:
        raise ResultsError(f"{path}: not a lineage (runs of generations: {type(e).__name__} {e})") from None


def compute_text(core_hours: float, gpu_hours: float) -> str:
    return f"{core_hours:.2f} core-hours" + (f" + {gpu_hours:.2f} GPU-hours" if gpu_hours else "")


def lineage_files(root: Path) -> list[Path]:
    """Shipped lineages first, then the campaigns', then those kept beside a result: the first that holds a
    network places it."""
    kept = [p for p in sorted((root / "docs" / "strength").glob("*/*.json"))
            if p.name not in ("match.json", "ratings.json") and "-vs-" not in p.name]
    return sorted((root / "models").glob("*.json")) + sorted((root / "campaigns" / "state").glob("*.json")) + kept


def place_networks(root: Path) -> dict[str, Placed]:
    """{network sha256: Placed} over every lineage."""
    out: dict[str, Placed] = {}
    for path in lineage_files(root):
        lineage = _read(path)
        if not isinstance(lineage, dict) or "runs" not in lineage:
            continue  # a result beside the lineages (paired-*.json and the like)
        core = gpu = 0.0
        for n, g in enumerate(_generations(lineage, path), start=1):
            c, d = cpu_gpu_hours([g])
            core, gpu = core + c, gpu + d
            out.setdefault(g["sha256"], Placed(lineage["line"], n, core, gpu))
    return out


def cpu_gpu_hours(generations: list[dict]) -> tuple[float, float]:
    """(CPU core-hours, GPU-hours) the generations took: a generation made on GPUs counts in GPU-hours only."""
    computes = [g.get("compute") or {} for g in generations]
    return (sum(c.get("core_hours", 0.0) for c in computes if not c.get("gpus")),
            sum(c.get("gpu_hours", 0.0) for c in computes if c.get("gpus")))


def _title(folder: Path) -> tuple[str, str]:
    """(title, date) from the first line of a directory's README: `# Title (YYYY-MM-DD)...`."""
    readme = folder / "README.md"
    first = readme.read_text().split("\n", 1)[0] if readme.is_file() else ""
    m = re.search(r"\((\d{4}-\d{2}-\d{2})\)", first)
    return (first[: m.start()] if m else first).lstrip("# ").strip(), (m[1] if m else "")


def _link(path: Path, page: Path) -> str:
    """A Markdown link from `page` to a result's README (named by its directory), file or directory."""
    name = path.parent.name if path.name == "README.md" else f"{path.parent.name}/{path.name}"
    return f"[{name}]({Path(os.path.relpath(path, page.parent)).as_posix()})"


def _who(tag: str, placed: Placed | None, name: str) -> tuple[str, int]:
    """A player's cell and its generation (0 where unknown)."""
    if placed is None:
        return f"{line_label(tag)} `{name}`", 0
    text = f"{line_label(placed.tag)} generation {placed.generation}"
    return (text if name == f"g{placed.generation}" else f"{text} (`{name}`)"), placed.generation


def _settings(r: dict) -> str:
    parts = [f"{r['wins'] + r['losses'] + r['draws']} games"]
    if r.get("visits"):
        parts.append(f"{r['visits']} visits")
    if r.get("komi") is not None:
        parts.append(f"komi {r['komi']:g}")
    if r.get("opening_moves"):
        parts.append(f"{r['opening_moves']} opening moves")
    lcb = (r.get("search") or {}).get("lcb_stdevs")
    if lcb:  # a move choice other than the most visited (mcts.lcb_stdevs)
        parts.append(f"the move by its lower confidence bound ({lcb:g} sd)")
    return ", ".join(parts) + _starts(r)


def _starts(r: dict) -> str:
    """Which starts a ladder pairing played: fresh ones of its network's own, or the usual seed-0 ones (a
    match's openings are sampled by the players, and older records name no seed: nothing is said of them)."""
    if r.get("label") != "ladder" or not r.get("opening_moves"):
        return ""
    if r.get("starts") == "fresh":
        return ", fresh starts"
    return ", the usual starts" if r.get("seed") == 0 else ""


def _elo(r: dict) -> tuple[float, float, float]:
    if all(k in r for k in ("elo", "elo_low", "elo_high")):
        return r["elo"], r["elo_low"], r["elo_high"]
    return elo_interval(r["wins"], r["losses"], r["draws"])


def _counts(r: dict, path: Path) -> tuple[int, int, int]:
    try:
        return int(r["wins"]), int(r["losses"]), int(r.get("draws", 0))
    except (KeyError, TypeError, ValueError) as e:
        raise ResultsError(f"{path}: not a result with wins and losses ({type(e).__name__}: {e})") from None


def _tag_of(path: Path) -> str:
    """The line a result's directory or file names first (go-9-g41-ladder: go-9), else its name."""
    m = re.match(r"(go-\d+|gomoku-\d+x\d+x\d+)", path.name)
    return m[1] if m else path.name


def ladder_results(folder: Path, placed: dict[str, Placed], page: Path) -> list[Result]:
    """A `zero ladder` directory's pairings of a network against another player (not its gates or calibration)."""
    try:
        records = read_pairings(folder)
    except LadderError as e:
        raise ResultsError(str(e)) from None
    readme = folder / "README.md"
    record = _link(readme if readme.is_file() else folder / "pairings", page)
    out = []
    for r in records:
        if is_fixed_opponent(r["a"]) or r.get("label") in ("gate", "calibration"):
            continue
        where = placed.get(r.get("a_sha256", ""))
        who, order = _who(_tag_of(folder), where, r["a"])
        out.append(Result(r.get("date") or "", who, opponent_label(r["b"]), r["wins"], r["losses"], r["draws"],
                          _elo(r), _settings(r), compute_text(where.core_hours, where.gpu_hours) if where else "",
                          record, order))
    return out


def _named_network(folder: Path, placed: dict[str, Placed]) -> Placed | None:
    """The network a result's README names first by its sha256 (12 hex digits or more), where one lineage
    holds exactly one network of that prefix."""
    readme = folder / "README.md"
    m = re.search(r"sha256[ :`]*([0-9a-f]{12,64})", readme.read_text()) if readme.is_file() else None
    found = {v for k, v in placed.items() if m and k.startswith(m[1])}
    return found.pop() if len(found) == 1 else None


def match_results(folder: Path, placed: dict[str, Placed], page: Path) -> list[Result]:
    """A directory's `zero match` records: match.json (players from the directory's name, <a>-vs-<b>) and
    <a>-vs-<b>[-...].json; a lineage kept beside them places player a."""
    title, date = _title(folder)
    kept = [_read(p) for p in sorted(folder.glob("*.json")) if p.name != "match.json" and "-vs-" not in p.name]
    lineage = next((x for x in kept if isinstance(x, dict) and "runs" in x), None)
    where = placed.get(lineage["sha256"]) if lineage else _named_network(folder, placed)
    out = []
    for path in sorted(folder.glob("*.json")):
        if path.name != "match.json" and "-vs-" not in path.name:
            continue
        r = _read(path)
        w, l, d = _counts(r, path)
        stem = folder.name if path.name == "match.json" else path.stem
        tag = _tag_of(folder if path.name == "match.json" or _tag_of(folder) != folder.name else path)
        m = re.fullmatch(rf"(?:{re.escape(tag)}-)?(?:campaign-|match-)?(.+?)-vs-(.+?)(?:-seed\d+|-\d+)?", stem)
        a, b = (m[1], m[2]) if m else (title or folder.name, "")
        ga, gb = re.fullmatch(r"g(\d+)([A-Za-z]*)", a), re.fullmatch(r"g(\d+)([A-Za-z]*)", b)
        who = (f"{line_label(tag)} generation {ga[1]}{ga[2]}" if ga else
               (f"{line_label(tag)} `{a}`" if m else f"{line_label(tag)}: {a}"))
        against = f"generation {gb[1]}{gb[2]}" if gb else (f"`{b}`" if b else "itself, another setting")
        readme = folder / "README.md"
        mine = where if where and (not ga or where.generation == int(ga[1])) else None
        out.append(Result(date, who, against, w, l, d, _elo({**r, "wins": w, "losses": l, "draws": d}),
                          f"{w + l + d} games", compute_text(mine.core_hours, mine.gpu_hours) if mine else "",
                          _link(readme if readme.is_file() else path, page), int(ga[1]) if ga else 0))
    return out


def every_result(root: Path, page: Path) -> list[Result]:
    """Every result of docs/strength/ and the shipped lineages' ladders kept nowhere else, newest first."""
    placed = place_networks(root)
    out: list[Result] = []
    strength = root / "docs" / "strength"
    for folder in sorted(p for p in strength.glob("*") if p.is_dir()):
        if (folder / "pairings").is_dir():
            out += ladder_results(folder, placed, page)
        out += match_results(folder, placed, page)
    for path in sorted((root / "models").glob("*.json")):
        lineage = _read(path)
        ladder = lineage.get("ladder") or {}
        if not ladder or (ladder.get("source") and (root / ladder["source"]).is_dir()):
            continue
        where = placed.get(lineage["sha256"])
        who, order = _who(lineage["line"], where, ladder.get("champion") or "")
        for r in ladder.get("matches", []):
            out.append(Result(r.get("date") or "", who, opponent_label(r["b"]), r["wins"], r["losses"], r["draws"],
                              _elo(r), _settings(r), compute_text(where.core_hours, where.gpu_hours) if where else "",
                              _link(path, page), order))
    return sorted(out, key=lambda x: (x.date, x.order, x.player, x.opponent), reverse=True)


def elo_interval_text(e: tuple[float, float, float]) -> str:
    def signed(x: float) -> str:
        return f"{round(x) + 0:+d}"  # + 0: no "-0"

    return f"{signed(e[0])} [{signed(e[1])}, {signed(e[2])}]"


def every_result_md(results: list[Result]) -> str:
    lines = ["| date | player | opponent | score (w-l-d) | Elo difference [95%] | settings "
             "| compute in its lineage | record |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in results:
        lines.append(f"| {r.date or 'undated'} | {r.player} | {r.opponent} | {r.wins}-{r.losses}-{r.draws} "
                     f"| {elo_interval_text(r.elo)} | {r.settings} | {r.compute} | {r.record} |")
    return "\n".join(lines)


def on_scale(fitted: dict, game: str) -> dict:
    """A one-fit history (flows.history's ratings.json) shifted onto the game's scale (SCALE); as it was where
    its anchor is the scale's, or where the scale's player is not in it (ResultsError)."""
    player, elo = SCALE[game]
    anchor = fitted["anchor"]
    if anchor["player"] == player:
        shift = elo - anchor["elo"]
    elif player in fitted.get("opponents", {}):
        shift = elo - fitted["opponents"][player]["elo"]
    else:
        raise ResultsError(f"a fit anchored at {anchor['player']} without {player}: it cannot go on the scale "
                           f"{player} = {elo:g}")

    def moved(r: dict) -> dict:
        return {**r, **{k: r[k] + shift for k in ("elo", "elo_low", "elo_high") if r.get(k) is not None}}

    return {**fitted, "anchor": {"player": player, "elo": elo},
            "champions": [moved(c) for c in fitted["champions"]],
            "opponents": {n: moved(r) for n, r in fitted.get("opponents", {}).items()}}


def line_fits(root: Path) -> list[str]:
    """Each line's shipped champions on its game's scale, from docs/strength/*/ratings.json beside a history."""
    out = []
    for ratings in sorted((root / "docs" / "strength").glob("*/ratings.json")):
        if not (ratings.parent / "history.yaml").is_file():
            continue
        tag = _tag_of(ratings.parent)
        game = "go" if tag.startswith("go-") else "gomoku"
        fitted = on_scale(_read(ratings), game)
        out.append(f"{line_label(tag)}, every shipped champion (and the candidates laddered beside them) in one fit "
                   f"over {fitted['games']:,} games "
                   f"(`python -m flows.history docs/strength/{ratings.parent.name}/history.yaml`):\n\n"
                   + table_md(fitted))
    return out


def scale_text() -> str:
    games = {"go": "Go", "gomoku": "Gomoku"}
    return textwrap.fill("Elo: a rating is on its game's one scale (" + "; ".join(
        f"{games[g]}: {opponent_label(p)} = {e:g}" for g, (p, e) in SCALE.items())
        + "); an Elo difference is between the two players of its row, with its 95% interval.", width=110)


def kept_opponents(matches: list[dict]) -> list[dict]:
    """The outside opponents of a champion's ladder: every GNU Go level and Pachi strength, weakest first, and
    the strongest pure MCTS."""
    gnugo = sorted((m for m in matches if m["b"].startswith("gnugo-l")), key=lambda m: int(m["b"][7:]))
    pachi = sorted((m for m in matches if m["b"].startswith("pachi-")), key=lambda m: int(m["b"][6:]))
    mcts = sorted((m for m in matches if m["b"].startswith("mcts-")), key=lambda m: int(m["b"][5:]))
    return gnugo + pachi + mcts[-1:]


def shipped_md(root: Path, page: Path) -> str:
    """The README's table: each shipped champion (models/*.json) against its outside opponents."""
    placed = place_networks(root)
    lines = ["| champion | compute | opponent | score (w-l-d) | Elo difference [95%] | settings, record |",
             "| --- | --- | --- | --- | --- | --- |"]
    for path in sorted((root / "models").glob("*.json")):
        lineage = _read(path)
        where = placed.get(lineage.get("sha256", ""))
        champion = lineage.get("champion") or {}
        generation = where.generation if where else champion.get("line_generation") or champion.get("generation")
        ladder = lineage.get("ladder") or {}
        source = root / ladder["source"] if ladder.get("source") else path
        target = source / "README.md" if (source / "README.md").is_file() else path
        link = f"[record]({Path(os.path.relpath(target, page.parent)).as_posix()})"
        first = f"{line_label(lineage['line'])}, generation {generation} (`models/{lineage['file']}`)"
        cost = compute_text(where.core_hours, where.gpu_hours) if where else ""
        rows = [(m, f"{m['visits']} visits", link) for m in kept_opponents(ladder.get("matches", []))]
        for folder, m in timed_ladders(root, lineage.get("sha256", ""), source):
            kept_in = folder / "README.md" if (folder / "README.md").is_file() else folder
            rows.append((m, _time_text(m), f"[record]({Path(os.path.relpath(kept_in, page.parent)).as_posix()})"))
        for i, (m, search, where_kept) in enumerate(rows):
            lines.append(f"| {first if i == 0 else ''} | {cost if i == 0 else ''} | {opponent_label(m['b'])} "
                         f"| **{m['wins']}-{m['losses']}-{m['draws']}** | {elo_interval_text(_elo(m))} "
                         f"| {m['games']} games, {search}{_starts(m)}; {where_kept} |")
    return "\n".join(lines)


_BATCHING = ("leaf_batch", "leaf_batches_in_flight")  # how the search batches its leaves, not what it searches


def _constants(record: dict) -> dict:
    return {k: v for k, v in (record.get("search") or {}).items() if k not in _BATCHING}


def timed_ladders(root: Path, sha256: str, source: Path) -> list[tuple[Path, dict]]:
    """A shipped champion's ladders at a time per move (`zero ladder --seconds-per-move`) kept in docs/strength/:
    pairings of its network (by sha256) against outside engines, with the search constants of its shipped
    ladder (`source`'s pairings; a record whose constants differ is a trial of a setting, not the champion),
    each opponent's weakest first as in kept_opponents."""
    try:
        shipped = [_constants(r) for r in read_pairings(source)] if (source / "pairings").is_dir() else []
    except LadderError as e:
        raise ResultsError(str(e)) from None
    found: dict[int, tuple[Path, dict]] = {}
    for folder in sorted(p for p in (root / "docs" / "strength").glob("*/") if (p / "pairings").is_dir()):
        if folder.resolve() == source.resolve():
            continue
        try:
            records = read_pairings(folder)
        except LadderError as e:
            raise ResultsError(str(e)) from None
        for r in records:
            if (r.get("a_sha256") == sha256 and (r.get("time_per_move") or {}).get("seconds_per_move")
                    and r.get("label") == "ladder" and not is_fixed_opponent(r["a"]) and _constants(r) in shipped):
                found[id(r)] = (folder, r)
    kept = kept_opponents([r for _, r in found.values()])
    return [found[id(r)] for r in kept]


def _time_text(r: dict) -> str:
    """`1 s a move (1,541 visits, one thread)`: a timed ladder's search, as `zero ladder` measured it."""
    t = r["time_per_move"]
    threads = t.get("threads") or 1
    return (f"{t['seconds_per_move']:g} s a move ({r['visits']:,} visits, "
            f"{'one thread' if threads == 1 else f'{threads} threads'})")


def _commits(gens: list[dict]) -> str:
    """The code commits of a run's generations, in order; `(uncommitted)` after one that ran a dirty tree."""
    seen: dict[str, bool] = {}
    for g in gens:
        if g.get("git_commit"):
            key = g["git_commit"][:8]
            seen[key] = seen.get(key, False) or g.get("git_dirty") == "true"
    names = [f"{c} (uncommitted)" if dirty else c for c, dirty in seen.items()]
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "") or "not recorded"


def runs_md(lineage_file: Path) -> str:
    """How a shipped champion was made: each run (workspace) of its lineage, in order, and the totals."""
    lineage = _read(lineage_file)
    lines = ["| run | generations | games | compute | recipe | started from | code |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    first = 1
    every = []
    for n, run in enumerate(lineage.get("runs", []), start=1):
        gens = run.get("generations") or []
        every += gens
        cpu, gpu = cpu_gpu_hours(gens)
        names = sorted({g["compute"].get("gpu_name") or "GPU" for g in gens if (g.get("compute") or {}).get("gpus")})
        compute = f"{gpu:.2f} GPU-hours ({', '.join(names)})" if names and not cpu else compute_text(cpu, gpu)
        games = sum(g.get("games", 0) for g in gens)
        last = first + len(gens) - 1
        start = f"`{run['init_from']}`" if run.get("init_from") else "a random network"
        lines.append(f"| {n} | {first}-{last} | {games:,} | {compute} | `{run.get('params_file', '')}` | {start} "
                     f"| {_commits(gens)} |")
        first = last + 1
    champion = lineage.get("champion") or {}
    lines.append(f"| all | {len(every)} | {sum(g.get('games', 0) for g in every):,} "
                 f"| {compute_text(*cpu_gpu_hours(every))} | | | |")
    return (f"`models/{lineage['file']}` is generation {champion.get('line_generation', first - 1)} of the line "
            f"(sha256 {lineage['sha256'][:12]}), made in {len(lineage.get('runs', []))} runs, each a workspace "
            "that resumed from the champion before it (its lineage, `runs`):\n\n" + "\n".join(lines))


# The pages that tell how a shipped champion was made, and the lineage each tells of.
HISTORIES = {Path("docs/history.md"): Path("models/go-9.json")}


def pages(root: Path) -> dict[Path, str]:
    """{page: what goes between its markers}."""
    readme, strength = root / "README.md", root / "docs" / "strength.md"
    out = {
        readme: shipped_md(root, readme) + "\n\n" + scale_text(),
        strength: "\n\n".join([scale_text(), *line_fits(root), "Every result, newest first:",
                               every_result_md(every_result(root, strength))]),
    }
    for page, lineage in HISTORIES.items():
        if (root / lineage).is_file():
            out[root / page] = runs_md(root / lineage)
    return out


def replaced(text: str, body: str, path: Path) -> str:
    """`text` with what lies between the markers replaced by `body` (written as generated, nothing else)."""
    begin, end = text.find(BEGIN), text.find(END)
    if begin < 0 or end < 0 or end < begin or text.count(BEGIN) != 1 or text.count(END) != 1:
        raise ResultsError(f"{path}: needs one {BEGIN} and, after it, one {END} around the generated table")
    return (text[: begin + len(BEGIN)] + "\n<!-- written by `python -m flows.results` from the records: "
            "do not edit -->\n" + body + "\n" + text[end:])


def write(root: Path, check: bool = False) -> list[Path]:
    """Write each page whose generated part changed (atomically, and only once every page is made); return
    them. With check, write nothing."""
    changed = {}
    for path, body in pages(root).items():
        try:
            text = path.read_text()
        except OSError as e:
            raise ResultsError(f"{path}: cannot read it ({e})") from None
        if (new := replaced(text, body, path)) != text:
            changed[path] = new
    for path, new in changed.items() if not check else ():
        atomic_write_text(path, new)
    return list(changed)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m flows.results", description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=".", help="the repository (default: here)")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 where a page differs")
    args = ap.parse_args(argv)
    try:
        changed = write(Path(args.root).resolve(), args.check)
    except ResultsError as e:
        print(f"flows.results: error: {e}", file=sys.stderr)
        return 2
    for path in changed:
        print(f"{path}: {'not what the records give' if args.check else 'written from the records'}")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
