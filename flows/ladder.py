"""`zero-ladder`: a line's champion against fixed opponents, and one rating fit over every game of the line.

    sync (gate results as pairings, players.json) -> calibration -> champion's matches -> fit -> plot -> record

The ladder of line <tag> lives in `gens/<tag>/ladder/` (see zero.ladder for its
files). Every finished generation's gate is a pairing (candidate against the
champion it played), so the fit places each generation's network even when
only some were laddered. A network that was laddered already is not played
again; calibration (consecutive fixed opponents against each other) is played
once per workspace. The result goes into the generation's generation.json
(`ladder`), its MLflow run (metrics `ladder_elo`, `ladder_elo_low`,
`ladder_elo_high`, `ladder_win_rate_<opponent>`, artifacts under `ladder/`)
and the line's ratings.json and elo.png.

Run it as a deployment (`prefect deployment run zero-ladder/local`), from
zero-generation when `ladder.enabled` is set, or by hand: `python -m flows.ladder`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from prefect import flow, get_run_logger, task
from prefect.context import get_run_context

from flows import liveness
from flows.compute import compute_of
from flows.layout import LineError, Workspace, derive_seed, ladder_dir, read_json, write_json
from flows.progress import StepProgress
from flows.request import GenerationRequest
from flows.stages import file_sha256, share_cores

FLOW_NAME = "zero-ladder"


def line_players(ws: Workspace, tag: str) -> dict:
    """{name: facts} for every network of the line: g0000 and each finished generation's candidate.

    Facts: generation, sha256, whether it passed its gate, cumulative compute (core-hours and
    GPU-hours of all generations up to and including its own).
    """
    g0 = ws.generation(tag, 0)
    if not g0.champion.is_file():
        raise LineError(f"{tag} has no generation 0 in {ws.root}: run zero-generation first")
    players = {"g0000": {"generation": 0, "sha256": file_sha256(g0.champion), "passed": True,
                         "compute_hours": 0.0, "gpu_hours": 0.0}}
    core_h = gpu_h = 0.0
    for g in ws.generations(tag):
        gen = ws.generation(tag, g)
        if g == 0 or not gen.finished():
            continue
        record = read_json(gen.record_file)
        c = compute_of(record)
        core_h, gpu_h = core_h + c["core_hours"], gpu_h + c.get("gpu_hours", 0.0)
        gate = record["gate"]
        players[gen.name] = {"generation": g, "sha256": record["train"]["sha256"], "passed": gate["passed"],
                             "compute_hours": round(core_h, 4), "gpu_hours": round(gpu_h, 4),
                             "compute_estimated": bool(c.get("estimated"))}
    return players


def name_of(players: dict, sha: str) -> str:
    for name, info in players.items():
        if info["sha256"] == sha:
            return name
    raise LineError(f"no network of this line has sha256 {sha[:12]}")


def sync(ws: Workspace, tag: str) -> tuple[Path, dict]:
    """Write players.json and a pairing for every finished generation's gate; the ladder dir and players."""
    from zero.pairings import write_pairing

    lad = ladder_dir(ws.root, tag)
    players = line_players(ws, tag)
    write_json(lad / "players.json", players)
    for name, info in players.items():
        g = info["generation"]
        if g == 0:
            continue
        gen = ws.generation(tag, g)
        gate = read_json(gen.gate_result)
        write_pairing(lad, {"a": name, "b": name_of(players, gate["champion_sha256"]), "label": "gate",
                            "wins": gate["wins"], "losses": gate["losses"], "draws": gate["draws"],
                            "games": gate["games"], "win_rate": gate["win_rate"], "elo": gate["elo"],
                            "elo_low": gate["elo_low"], "elo_high": gate["elo_high"], "generation": g})
    return lad, players


@task(name="ladder-match", persist_result=False)
def ladder_match_task(params_json: str, a: str, b: str, a_name: str, b_name: str, games: int, seed: int,
                      out_dir: str, label: str) -> dict:
    from zero.config import Params
    from zero.ladder import play_pairing

    params = Params.model_validate_json(params_json)
    share_cores(params.ladder.threads, 1)
    lad = params.ladder
    started = time.time()
    log = get_run_logger()
    with StepProgress(f"ladder: {a_name} against {b_name} ({label})", games,
                      key=f"ladder-{a_name}-{b_name}-{label}", at_once=lad.concurrent_games) as report:
        rec = play_pairing(params, a, b, games, seed, lad.visits, out_dir, a_name, b_name, label,
                           lad.concurrent_games, lad.opening_moves, lad.gnugo, progress=report)
    log.info("ladder: %s against %s: %d-%d-%d in %.0f s", a_name, b_name, rec["wins"], rec["losses"], rec["draws"],
             time.time() - started)
    return rec


def _resolve(ws: Workspace, tag: str, spec: str, players: dict) -> tuple[str, str] | None:
    """(player spec, name) of an opponent; gen:<g> names a network of this line (None if not made yet)."""
    from zero.ladder import opponent_name

    if spec.startswith("gen:"):
        g = int(spec.split(":", 1)[1])
        name = f"g{g:04d}"
        if name not in players:
            return None
        gen = ws.generation(tag, g)
        return str(gen.champion if g == 0 else gen.candidate), name
    return spec, opponent_name(spec)


def run_ladder(root: Path, params, generation: int | None = None) -> dict:
    """Ladder the champion after `generation` (default: the last finished one) and refit the line."""
    from zero.ladder import calibration_pairs, fit_dir, parse_anchor, player_spec
    from zero.ladder_plot import plot_dir

    log = get_run_logger()
    ws, tag, lad_cfg = Workspace(root), params.game.tag, params.ladder
    lad, players = sync(ws, tag)
    finished = [p["generation"] for p in players.values()]
    g = max(finished) if generation is None else generation
    if g not in finished:
        raise LineError(f"generation {g} of {tag} has not finished: nothing to ladder")
    gen = ws.generation(tag, g)
    champ_path = gen.champion
    champ = name_of(players, file_sha256(champ_path))
    params_json = params.model_dump_json()
    done = {p.stem for p in (lad / "pairings").glob("*.json")}
    jobs = []
    if lad_cfg.calibration_games:
        for i, (x, y) in enumerate(calibration_pairs(lad_cfg.opponents)):
            xs, xn = _resolve(ws, tag, x, players)
            ys, yn = _resolve(ws, tag, y, players)
            if f"{xn}--{yn}--calibration" not in done:
                jobs.append((xs, ys, xn, yn, lad_cfg.calibration_games,
                             derive_seed(params.pipeline.seed, 0, "calibration", i), "calibration"))
    for i, spec in enumerate(lad_cfg.opponents):
        resolved = _resolve(ws, tag, spec, players)
        if resolved is None or resolved[1] == champ:
            continue
        if f"{champ}--{resolved[1]}--ladder" in done:
            continue
        jobs.append((str(champ_path), resolved[0], champ, resolved[1], lad_cfg.games,
                     derive_seed(params.pipeline.seed, g, "ladder", i), "ladder"))
    for spec in sorted({s for job in jobs for s in job[:2] if s.startswith(("gnugo:", "pachi:"))}):
        player_spec(spec, lad_cfg.gnugo)  # an outside engine that is missing stops the ladder before any game
    log.info("ladder of %s after generation %d: champion %s, %d matches to play", tag, g, champ, len(jobs))
    results = [ladder_match_task(params_json, *job[:5], job[5], str(lad), job[6]) for job in jobs]
    fitted = fit_dir(lad, parse_anchor(lad_cfg.anchor), fallback_anchor="g0000")
    png = plot_dir(lad, fitted, title=f"zero {tag}: {fitted['games']} games, {len(players)} networks")
    rating = fitted["ratings"].get(champ)
    mine = [read_json(p) for p in sorted((lad / "pairings").glob(f"{champ}--*--ladder.json"))]
    summary = {
        "generation": g, "champion": champ, "rating": rating, "anchor": fitted["anchor"],
        "matches": [{k: r[k] for k in ("b", "wins", "losses", "draws", "games", "win_rate", "elo", "elo_low",
                                       "elo_high", "visits", "seconds", "date")} for r in mine],
        "played_now": len(results),
    }
    if g > 0:
        record = read_json(gen.record_file)
        record["ladder"] = summary
        write_json(gen.record_file, record)
        _log_mlflow(root, tag, record.get("mlflow_run_id"), summary, lad, png)
    log.info("ladder: %s is rated %s", champ,
             f"{rating['elo']:.0f} [{rating['elo_low']:.0f}, {rating['elo_high']:.0f}]" if rating else "not yet")
    return summary


def _log_mlflow(root: Path, tag: str, run_id: str | None, summary: dict, lad: Path, png: Path) -> None:
    if not run_id:
        return
    from flows.tracking import Tracker  # mlflow, loaded only by a ladder that logs to a run

    tracker = Tracker(root, tag)
    metrics = {f"ladder_win_rate_{m['b'].replace('-', '_')}": m["win_rate"] for m in summary["matches"]}
    if summary["rating"]:
        metrics.update(ladder_elo=summary["rating"]["elo"], ladder_elo_low=summary["rating"]["elo_low"],
                       ladder_elo_high=summary["rating"]["elo_high"])
    tracker.log_metrics(run_id, metrics)
    for path in (png, lad / "ratings.json", lad / "players.json"):
        tracker.log_artifacts(run_id, path, "ladder")


@flow(name=FLOW_NAME, log_prints=True)
def zero_ladder(params_file: str = "params.yaml", overrides: list[str] | None = None,
                generation: int | None = None, workdir: str | None = None) -> dict:
    """Ladder a line's champion (after `generation`, default the last) and refit the line's ratings."""
    req = GenerationRequest(params_file=params_file, overrides=overrides or [], generation=generation,
                            workdir=workdir)
    with liveness.recorded(str(get_run_context().flow_run.id)):
        return run_ladder(req.root(), req.load(), generation)


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m flows.ladder", description="Run zero-ladder once, in this process.")
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    ap.add_argument("--generation", type=int, default=None)
    ap.add_argument("--root", default=".")
    args = ap.parse_args(argv)
    summary = zero_ladder(params_file=args.params, overrides=args.set, generation=args.generation,
                          workdir=str(Path(args.root).resolve()))
    print(json.dumps(summary, indent=1))
    return 0 if summary else 1


if __name__ == "__main__":
    raise SystemExit(main())
