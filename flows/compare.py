"""Recipes compared at equal compute: every network of several lines in one rating pool.

A comparison spec (YAML) names the lines, each one or more workspaces trained with
one params file (a later workspace continues the line when its generation 0 is the
earlier one's last network, matched by sha256), and how to play:

    title: 9x9 Go, paper recipe against fast recipe
    params: campaigns/go-9.yaml        # board, search and GNU Go settings of every match
    anchor: paper-g0000=0              # the rating held fixed
    games: 40                          # per pairing (whole colour-swapped pairs)
    visits: 100
    opponents: [gnugo:1]               # fixed opponents of each line's last network
    lines:
      paper: {params: campaigns/go-9.yaml, workspaces: [/work/a, /work/b], hardware: 1 core}
      fast:  {params: campaigns/go-9-fast.yaml, workspaces: [/work/c], hardware: 1 core}

The pool holds each line's generations (`<line>-g0003`) with their cumulative
compute. Its results are the lines' own gate matches (read, not replayed), one
match of every network against the other lines' network nearest in compute, and
each line's last network against the fixed opponents. Pairings already in the
output directory are not replayed, so a comparison grows as the lines do.
Written to the output directory: pairings/, sgf/, players.json, ratings.json,
compare.png (Elo against core-hours, one curve per line), table.md, summary.json;
the same figures go to MLflow (experiment `zero-recipes`).

    python -m flows.compare docs/recipes/go-9/compare.yaml [--plan] [--no-play]
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from flows.ladder import line_players
from flows.layout import LineError, Workspace, read_json, write_json
from flows.plots import agg_pyplot
from zero.fileio import atomic_savefig

EXPERIMENT = "zero-recipes"


class CompareError(ValueError):
    """A comparison spec, or the lines it names, cannot be compared."""


class LineSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    params: str
    workspaces: list[str] = Field(min_length=1)
    hardware: str = "1 core of the development machine"


class CompareSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str
    params: str
    anchor: str
    lines: dict[str, LineSpec] = Field(min_length=2)
    games: int = Field(40, ge=2, le=10_000)
    visits: int = Field(100, ge=1, le=100_000)
    opening_moves: int = Field(2, ge=0, le=20)
    concurrent_games: int = Field(20, ge=1, le=4096)
    opponents: list[str] = []
    seed: int = 0

    @field_validator("games")
    @classmethod
    def _pairs(cls, v: int) -> int:
        if v % 2:
            raise ValueError(f"{v} is not even: games are played in colour-swapped pairs")
        return v

    @field_validator("lines")
    @classmethod
    def _names(cls, v: dict) -> dict:
        for name in v:
            if not name.replace("_", "").isalnum():
                raise ValueError(f"line name {name!r} may only hold letters, digits and _")
        return v


def load_spec(path: str | Path) -> CompareSpec:
    """Read and check a comparison spec; a bad file is named with what is wrong in it."""
    path = Path(path)
    try:
        return CompareSpec.model_validate(yaml.safe_load(path.read_text()))
    except FileNotFoundError:
        raise CompareError(f"{path}: no such comparison spec") from None
    except yaml.YAMLError as e:
        raise CompareError(f"{path}: not valid YAML ({e})") from None
    except ValidationError as e:
        from zero.config import describe_errors

        raise CompareError(describe_errors(e, str(path), "invalid comparison spec")) from None


def _resolve_path(base: Path, text: str) -> Path:
    p = Path(text)
    return p if p.is_absolute() else (base / p).resolve()


def line_networks(line: str, spec: LineSpec, tag: str, base: Path) -> dict:
    """{name: facts} for every network of a line, its workspaces chained by sha256.

    Facts: line, generation (counted along the whole line), path, sha256, passed, compute_hours
    (cumulative), games and positions of self-play so far, and `gate`: (opponent name, wins,
    losses, draws) of the gate match that judged it.
    """
    out: dict[str, dict] = {}
    last = None  # (sha256, generation, compute_hours, games, positions) of the line's newest network so far
    for i, text in enumerate(spec.workspaces):
        root = _resolve_path(base, text)
        ws = Workspace(root)
        try:
            players = line_players(ws, tag)
        except LineError as e:
            raise CompareError(f"line {line}: workspace {root}: {e}") from None
        start = players.pop("g0000")
        if last is None:
            offset, hours, games, positions = 0, 0.0, 0, 0
            out[f"{line}-g0000"] = {"line": line, "generation": 0, "sha256": start["sha256"], "passed": True,
                                    "path": str(ws.generation(tag, 0).champion), "compute_hours": 0.0,
                                    "games": 0, "positions": 0, "gate": None}
        else:
            if start["sha256"] not in {p["sha256"] for p in out.values()}:
                raise CompareError(
                    f"line {line}: workspace {root} does not continue {spec.workspaces[i - 1]}: its generation 0 "
                    f"(sha256 {start['sha256'][:12]}) is none of the line's earlier networks")
            offset, hours, games, positions = last[1], last[2], last[3], last[4]
        by_sha = {v["sha256"]: k for k, v in out.items()}
        by_sha.setdefault(start["sha256"], f"{line}-g{offset:04d}")
        for info in sorted(players.values(), key=lambda p: p["generation"]):
            gen = ws.generation(tag, info["generation"])
            record = read_json(gen.record_file)
            g = offset + info["generation"]
            name = f"{line}-g{g:04d}"
            gate = record["gate"]
            against = by_sha.get(gate["champion_sha256"])
            games += record.get("selfplay", {}).get("games", 0)
            positions += record.get("selfplay", {}).get("positions", 0)
            out[name] = {"line": line, "generation": g, "sha256": info["sha256"], "passed": info["passed"],
                         "path": str(gen.candidate), "compute_hours": round(hours + info["compute_hours"], 4),
                         "games": games, "positions": positions,
                         "gate": [against, gate["wins"], gate["losses"], gate["draws"]] if against else None}
            by_sha[info["sha256"]] = name
        newest = max(out.values(), key=lambda p: p["generation"])
        last = (newest["sha256"], newest["generation"], newest["compute_hours"], newest["games"],
                newest["positions"])
    return out


def plan(players: dict, opponents: list[str]) -> list[tuple[str, str, str]]:
    """The matches to play, as (a, b, label): each network after generation 0 against the other lines'
    network nearest in compute (a tie goes to the earlier one), and each line's last network against
    every fixed opponent. A pair is played once whichever side finds it."""
    lines = sorted({p["line"] for p in players.values()})
    trained = {ln: sorted((p["compute_hours"], p["generation"], n) for n, p in players.items()
                          if p["line"] == ln and p["generation"] > 0) for ln in lines}
    pairs, seen = [], set()
    for ln in lines:
        for hours, _, name in trained[ln]:
            for other in lines:
                if other == ln or not trained[other]:
                    continue
                near = min(trained[other], key=lambda t: (abs(t[0] - hours), t[0]))[2]
                key = tuple(sorted((name, near)))
                if key not in seen:
                    seen.add(key)
                    pairs.append((key[0], key[1], "equal-compute"))
    for ln in lines:
        if trained[ln]:
            pairs.extend((trained[ln][-1][2], spec, "ladder") for spec in opponents)
    return pairs


def gate_pairings(players: dict) -> list[dict]:
    """The lines' own gate matches as pairing records (candidate against the champion it met)."""
    out = []
    for name, p in players.items():
        if p.get("gate"):  # recorded players (players.json) keep none: their gates are in pairings/
            b, w, l_, d = p["gate"]
            out.append({"a": name, "b": b, "label": "gate", "wins": w, "losses": l_, "draws": d,
                        "games": w + l_ + d, "source": "the line's gate match"})
    return out


def curves(players: dict, ratings: dict) -> dict:
    """{line: [(compute_hours, elo, low, high, name)]} in compute order, rated networks only."""
    out: dict[str, list] = {}
    for name, p in sorted(players.items(), key=lambda kv: (kv[1]["line"], kv[1]["compute_hours"])):
        r = ratings.get(name)
        if r:
            out.setdefault(p["line"], []).append((p["compute_hours"], r["elo"], r["elo_low"], r["elo_high"], name))
    return out


def elo_at(curve: list, hours: float) -> float | None:
    """A line's Elo at `hours` of compute, linear between its rated networks (None outside their span)."""
    for (h0, e0, *_), (h1, e1, *_) in zip(curve, curve[1:]):
        if h0 <= hours <= h1:
            return e0 if h1 == h0 else e0 + (e1 - e0) * (hours - h0) / (h1 - h0)
    return curve[-1][1] if curve and curve[-1][0] == hours else None


def collect(spec: CompareSpec, base: Path) -> tuple[object, dict, dict]:
    """(the matches' params, every network of every line, {line: its params hash}); a line of another
    game is refused."""
    from zero.config import load_params

    params = load_params(_resolve_path(base, spec.params))
    tag = params.game.tag
    players: dict[str, dict] = {}
    hashes = {}
    for ln, ls in spec.lines.items():
        own = load_params(_resolve_path(base, ls.params))
        if own.game.tag != tag:
            raise CompareError(f"line {ln}: {ls.params} is not a {tag} params file")
        hashes[ln] = own.digest()[:12]
        players.update(line_networks(ln, ls, tag, base))
    return params, players, hashes


def recorded(out: Path) -> tuple[dict, dict]:
    """(players, {line: params hash}) as a comparison's output directory recorded them: what a clone without
    the lines' workspaces can fit and draw again (--no-play)."""
    try:
        players = json.loads((out / "players.json").read_text())
        summary = json.loads((out / "summary.json").read_text())
        hashes = {row["line"]: row["params_hash"] for row in summary["lines"]}
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise CompareError(f"{out}: no recorded comparison to fit ({type(e).__name__}: {e})") from None
    return players, hashes


def summarize(spec: CompareSpec, players: dict, fitted: dict, hashes: dict) -> dict:
    """Per line: recipe, hardware, hours, generations, games, and the last network's Elo with its
    interval; and every line's Elo at the compute all lines reached."""
    ratings = fitted["ratings"]
    cs = curves(players, ratings)
    rows = []
    for ln, ls in spec.lines.items():
        mine = [p for p in players.values() if p["line"] == ln]
        last = max(mine, key=lambda p: p["generation"])
        name = f"{ln}-g{last['generation']:04d}"
        rows.append({"line": ln, "params": ls.params, "params_hash": hashes[ln],
                     "hardware": ls.hardware, "core_hours": last["compute_hours"],
                     "generations": last["generation"], "games": last["games"], "positions": last["positions"],
                     "network": name, "rating": ratings.get(name)})
    common = min((c[-1][0] for c in cs.values()), default=0.0) if len(cs) == len(spec.lines) else None
    at_common = {ln: elo_at(c, common) for ln, c in cs.items()} if common else {}
    return {"title": spec.title, "anchor": fitted["anchor"], "games": fitted["games"],
            "pairings": fitted["pairings"], "lines": rows, "common_hours": common,
            "elo_at_common_hours": {k: (round(v, 1) if v is not None else None) for k, v in at_common.items()}}


def table_md(summary: dict) -> str:
    """The comparison as a Markdown table."""
    lines = ["| recipe | params (hash) | hardware | core-hours | generations | games | network | Elo [95%] |",
             "| --- | --- | --- | ---: | ---: | ---: | --- | --- |"]
    for r in summary["lines"]:
        rt = r["rating"]
        elo = f"{rt['elo']:+.0f} [{rt['elo_low']:+.0f}, {rt['elo_high']:+.0f}]" if rt else "not rated"
        lines.append(f"| {r['line']} | `{r['params']}` ({r['params_hash']}) | {r['hardware']} | "
                     f"{r['core_hours']:.2f} | {r['generations']} | {r['games']:,} | {r['network']} | {elo} |")
    if summary["common_hours"]:
        at = ", ".join(f"{k} {v:+.0f}" for k, v in summary["elo_at_common_hours"].items() if v is not None)
        lines.append("")
        lines.append(f"At {summary['common_hours']:.2f} core-hours, the compute every line reached: {at} "
                     f"(Elo interpolated between rated networks).")
    a = summary["anchor"]
    lines.append(f"Ratings: {summary['games']:,} games in {summary['pairings']} pairings, "
                 f"{a['player']} = {a['elo']:g}.")
    return "\n".join(lines) + "\n"


def plot(players: dict, fitted: dict, out: Path, title: str) -> Path:
    """compare.png: Elo against cumulative core-hours, one curve per line, fixed opponents as lines."""
    ratings = fitted["ratings"]
    fig, ax = agg_pyplot().subplots(figsize=(8, 5))
    for i, (ln, pts) in enumerate(curves(players, ratings).items()):
        x = [p[0] for p in pts]
        y = [p[1] for p in pts]
        err = [[p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts]]
        ax.errorbar(x, y, yerr=err, fmt="o-", capsize=3, color=f"C{i}", label=f"{ln} (95% interval)")
    fixed = sorted((n for n in ratings if n not in players), key=lambda n: ratings[n]["elo"])
    for j, name in enumerate(fixed):
        ax.axhline(ratings[name]["elo"], color=f"C{j + 5}", ls="--", lw=1, label=name)
    a = fitted["anchor"]
    ax.set_xlabel("cumulative compute of the line (core-hours: the pipeline's wall time x its cores)")
    ax.set_ylabel(f"Elo ({a['player']} = {a['elo']:g})")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return atomic_savefig(fig, out / "compare.png", dpi=110)


def pairing_seed(seed: int, a: str, b: str) -> int:
    return (seed * 1_000_003 + zlib.crc32(f"{a}--{b}".encode())) % 2**31


def run(spec_path: str | Path, out: str | Path | None = None, play: bool = True,
        tracking_uri: str | None = None, echo=print, max_matches: int | None = None) -> dict:
    """Collect the lines, play the missing matches (at most `max_matches`, in plan order), fit, plot and
    write the table; returns the summary."""
    from zero.ladder import LadderError, fit_dir, opponent_name, parse_anchor, play_pairing, player_spec
    from zero.pairings import read_pairings, write_pairing

    spec_path = Path(spec_path)
    spec = load_spec(spec_path)
    out = Path(out) if out else spec_path.parent
    try:
        params, players, hashes = collect(spec, Path.cwd())
    except CompareError as e:
        if play or not (out / "players.json").is_file():
            raise
        players, hashes = recorded(out)
        echo(f"{e}: fitting the comparison as recorded in {out} (players.json, pairings/)")
    try:
        anchor = parse_anchor(spec.anchor)
    except LadderError as e:
        raise CompareError(str(e)) from None
    write_json(out / "players.json", {n: {k: v for k, v in p.items() if k != "gate"} for n, p in players.items()})
    for rec in gate_pairings(players):
        write_pairing(out, rec)
    todo = plan(players, spec.opponents)
    done = {p.stem for p in (out / "pairings").glob("*.json")}
    missing = [(a, b, label) for a, b, label in todo
               if f"{a}--{opponent_name(b) if b not in players else b}--{label}" not in done]
    echo(f"{len(players)} networks in {len(spec.lines)} lines; {len(todo)} matches planned, {len(missing)} to play")
    now = (missing if max_matches is None else missing[:max_matches]) if play else []
    for i, (a, b, label) in enumerate(now):
        b_spec = players[b]["path"] if b in players else player_spec(b, params.ladder.gnugo)
        b_name = b if b in players else opponent_name(b)
        echo(f"[{i + 1}/{len(now)}] {a} against {b_name}: {spec.games} games ({label})")
        rec = play_pairing(params, players[a]["path"], b_spec, spec.games, pairing_seed(spec.seed, a, b_name),
                           spec.visits, out, a, b_name, label, concurrent=spec.concurrent_games,
                           opening_moves=spec.opening_moves, gnugo=params.ladder.gnugo)
        echo(f"    {rec['wins']}-{rec['losses']}-{rec['draws']} in {rec['seconds']:.0f} s")
    known = set(players) | {opponent_name(o) for o in spec.opponents}
    stale = [r for r in read_pairings(out) if r["a"] not in known or r["b"] not in known]
    if stale:
        raise CompareError(f"{out}/pairings holds matches of players not in this comparison "
                           f"({stale[0]['a']} against {stale[0]['b']}): use another output directory")
    fitted = fit_dir(out, anchor)
    if not fitted["anchor"]["anchored"] and anchor[0] not in fitted["ratings"]:
        raise CompareError(f"the anchor {anchor[0]} played no game: name one of {sorted(players)}")
    png = plot(players, fitted, out, spec.title)
    summary = summarize(spec, players, fitted, hashes)
    summary["planned"], summary["missing"] = len(todo), len(missing) - len(now)
    write_json(out / "summary.json", summary)
    (out / "table.md").write_text(table_md(summary))
    if tracking_uri:
        log_mlflow(tracking_uri, spec, summary, players, fitted, out, png)
    return summary


def log_mlflow(uri: str, spec: CompareSpec, summary: dict, players: dict, fitted: dict, out: Path,
               png: Path) -> str:
    """One run in experiment zero-recipes: each line's Elo curve (step: core-minutes) and the files."""
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(EXPERIMENT)
    # a database file keeps its artifacts in mlartifacts/ beside it (as the pipeline's do); a server, where it says
    local = Path(uri[len("sqlite:///"):]).parent / "mlartifacts" if uri.startswith("sqlite:///") else None
    exp_id = exp.experiment_id if exp else client.create_experiment(
        EXPERIMENT, artifact_location=local.as_uri() if local else None, tags={"kind": "recipe-comparison"})
    run = client.create_run(exp_id, run_name=spec.title[:250], tags={"game": summary["lines"][0]["network"]})
    rid = run.info.run_id
    for ln, ls in spec.lines.items():
        client.log_param(rid, f"{ln}.params", ls.params)
        client.log_param(rid, f"{ln}.hardware", ls.hardware)
    for key in ("games", "visits", "opening_moves", "anchor"):
        client.log_param(rid, key, getattr(spec, key))
    for ln, pts in curves(players, fitted["ratings"]).items():
        for hours, elo, *_ in pts:
            client.log_metric(rid, f"elo_{ln}", elo, step=int(round(hours * 60)))
    for r in summary["lines"]:
        client.log_metric(rid, f"core_hours_{r['line']}", r["core_hours"])
        if r["rating"]:
            client.log_metric(rid, f"elo_final_{r['line']}", r["rating"]["elo"])
    for name in ("compare.png", "table.md", "summary.json", "ratings.json", "players.json"):
        client.log_artifact(rid, str(out / name))
    client.set_terminated(rid)
    return rid


def main(argv: list[str] | None = None) -> int:
    import argparse
    import os

    ap = argparse.ArgumentParser(prog="python -m flows.compare", description=__doc__.split("\n\n")[0])
    ap.add_argument("spec", help="comparison spec (YAML)")
    ap.add_argument("--out", default=None, help="output directory (default: the spec's directory)")
    ap.add_argument("--plan", action="store_true", help="list the matches and stop")
    ap.add_argument("--no-play", action="store_true", help="fit and draw what has been played")
    ap.add_argument("--max-matches", type=int, default=None, help="play at most this many of the missing matches")
    ap.add_argument("--mlflow", default=os.environ.get("MLFLOW_TRACKING_URI"),
                    help="MLflow tracking URI (default: MLFLOW_TRACKING_URI; none: not logged)")
    args = ap.parse_args(argv)
    try:
        if args.plan:
            spec = load_spec(args.spec)
            _, players, _ = collect(spec, Path.cwd())
            for n, p in players.items():
                print(f"{n}: {p['compute_hours']:.3f} core-hours, {p['games']} games")
            for a, b, label in plan(players, spec.opponents):
                print(f"{a} -- {b} ({label})")
            return 0
        summary = run(args.spec, args.out, play=not args.no_play, tracking_uri=args.mlflow,
                      max_matches=args.max_matches)
    except CompareError as e:
        print(f"zero compare: error: {e}")
        return 2
    print(table_md(summary), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
