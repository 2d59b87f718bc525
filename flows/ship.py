"""Ship a line's champion: `models/<tag>.pt` and its lineage `models/<tag>.json`.

The checkpoint is the workspace's champion after its last finished generation,
byte for byte. The lineage says how it was made: every generation of the run
(gate result, games, positions, compute by hardware, params hash, code commit,
MLflow run and model version), the totals, and the champion's ladder results
with their intervals. A campaign resumes from the shipped champion
(`pipeline.init_from: models/<tag>.pt`): when the workspace's generation 0 is
the shipped file, the shipped lineage is kept as the earlier runs of this one,
so the totals count every run since the first random network. Beside them,
`models/<tag>.window/` holds the last generation's training window, which a
campaign resumed with `pipeline.init_window` trains on from its first
generation (flows.carry). A run whose window is too large to carry (a GPU
box's generations of 20,480 games) ships without it (`--no-window`): its
champion is then re-created by its whole run (`flows.reproduce --chain`).

    python -m flows.ship --params campaigns/go-9.yaml      (or `make ship LINE=go-9`)

`make campaign-save` ships into campaigns/state/ the same way, recipe included, so a saved champion ships
later without its workspace (`--saved campaigns/state`, `make ship LINE=go-9 SAVED=campaigns/state`).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from flows.carry import ship_window, window_dir
from flows.compute import compute_of
from flows.layout import LineError, Workspace, ladder_dir, read_json, replacing_dir, write_json
from flows.reproduce import recipe_dir, write_recipe
from flows.stages import file_sha256


def _run_summary(ws: Workspace, tag: str, last: int) -> tuple[list[dict], dict]:
    gens = []
    for g in ws.generations(tag):
        gen = ws.generation(tag, g)
        if g == 0 or g > last or not gen.finished():
            continue
        r = read_json(gen.record_file)
        gate = r["gate"]
        gens.append({
            "generation": g, "passed": gate["passed"], "promoted": gate.get("promoted", gate["passed"]),
            "gate": f"{gate['wins']}-{gate['losses']}-{gate['draws']}", "gate_win_rate": round(gate["win_rate"], 4),
            "gate_elo": gate["elo"], "gate_elo_low": gate["elo_low"], "gate_elo_high": gate["elo_high"],
            "games": r["selfplay"]["games"], "positions": r["selfplay"]["positions"],
            "train_steps": r["train"]["steps"], "compute": compute_of(r), "params_hash": r["params_hash"],
            "git_commit": r.get("git_commit"), "git_dirty": r.get("git_dirty"),
            "requirements_lock_sha256": r.get("requirements_lock_sha256"),
            "mlflow_run_id": r.get("mlflow_run_id"), "model_version": r.get("model_version"),
            "sha256": r["train"]["sha256"], "ladder": r.get("ladder"),
        })
    totals = {"generations": len(gens), "passed": sum(x["passed"] for x in gens),
              "promoted": sum(x["promoted"] for x in gens),
              "games": sum(x["games"] for x in gens), "positions": sum(x["positions"] for x in gens)}
    by_hw: dict[str, dict] = {}
    for x in gens:
        c = x["compute"]
        key = f"{c['device']} x{c['gpus']} gpu" if c.get("gpus") else f"cpu x{c['cores']} core"
        h = by_hw.setdefault(key, {"wall_hours": 0.0, "core_hours": 0.0, "gpu_hours": 0.0})
        h["wall_hours"] += c["wall_s"] / 3600
        h["core_hours"] += c["core_hours"]
        h["gpu_hours"] += c.get("gpu_hours", 0.0)
    totals["compute"] = {k: {n: round(v, 3) for n, v in h.items()} for k, h in by_hw.items()}
    return gens, totals


def _add_totals(a: dict, b: dict) -> dict:
    out = {k: a.get(k, 0) + b.get(k, 0) for k in ("generations", "passed", "promoted", "games", "positions")}
    compute = {k: dict(v) for k, v in a.get("compute", {}).items()}
    for k, v in b.get("compute", {}).items():
        h = compute.setdefault(k, {"wall_hours": 0.0, "core_hours": 0.0, "gpu_hours": 0.0})
        for n in h:
            h[n] = round(h[n] + v.get(n, 0.0), 3)
    out["compute"] = compute
    return out


def _same_run(previous: dict, start_sha: str, gens: list[dict]) -> bool:
    """Whether the lineage `previous` was shipped by this workspace's run: the same start and the same first
    generation (a run ships after each generation it promotes; each shipping replaces its own entry)."""
    runs = previous.get("runs") or []
    first = runs[-1].get("generations", [])[:1] if runs else []
    return (previous.get("start_sha256") == start_sha and bool(first) and bool(gens)
            and first[0].get("sha256") == gens[0]["sha256"])


def _widened_from(checkpoint: Path) -> str | None:
    """The sha256 of the champion a generation-0 checkpoint was widened from (zero.network.widen_inputs)."""
    from zero.network import load_checkpoint

    return load_checkpoint(checkpoint)[1].get("widened_from")


def ship(root: Path, params, params_file: str, models: Path | None = None, generation: int | None = None,
         recipe: bool = True, window: bool = True) -> dict:
    """Copy the champion after the last finished generation (or after `generation`) to models/<tag>.pt, and
    write its lineage, (unless `recipe` is off: a campaign's saved state) the recipe that re-creates it and
    (unless `window` is off) its training window; without it, a window shipped before is removed, and the
    lineage's `window` is None."""
    ws, tag = Workspace(root), params.game.tag
    finished = [g for g in ws.generations(tag) if g > 0 and ws.generation(tag, g).finished()]
    if not finished:
        raise LineError(f"{tag} has no finished generation in {root}: nothing to ship")
    if generation is not None and generation not in finished:
        raise LineError(f"{tag} has no finished generation {generation} in {root} (finished: {finished})")
    last = ws.generation(tag, generation if generation is not None else max(finished))
    models = Path(models or root / "models")
    models.mkdir(parents=True, exist_ok=True)
    out_pt, out_json = models / f"{tag}.pt", models / f"{tag}.json"
    champion_sha = file_sha256(last.champion)
    start_sha = file_sha256(ws.generation(tag, 0).champion)
    previous = read_json(out_json) if out_json.is_file() else None
    gens, totals = _run_summary(ws, tag, last.g)
    earlier: list[dict] = []
    earlier_totals: dict = {}
    if previous and _same_run(previous, start_sha, gens):  # this run shipped again: replace its entry
        earlier = previous.get("runs", [])[:-1]
        earlier_totals = previous.get("earlier_totals", {})
    else:
        # this run resumed from the shipped champion (as it was, or widened to more input planes): its lineage
        # is in models/ or beside pipeline.init_from (a campaign's committed state, campaigns/state/)
        starts = (start_sha, _widened_from(ws.generation(tag, 0).champion))
        beside = root / Path(params.pipeline.init_from).with_suffix(".json") if params.pipeline.init_from else None
        for source in (previous, read_json(beside) if beside and beside.is_file() else None):
            if source and source.get("sha256") in starts:
                earlier, earlier_totals = source.get("runs", []), source.get("totals", {})
                break
    players_file, ratings_file = ladder_dir(root, tag) / "players.json", ladder_dir(root, tag) / "ratings.json"
    players = read_json(players_file) if players_file.is_file() else {}
    ratings = read_json(ratings_file) if ratings_file.is_file() else {}
    champ_name = next((n for n, p in players.items() if p["sha256"] == champion_sha), None)
    ladder = next((x["ladder"] for x in reversed(gens) if x["ladder"] and x["ladder"]["champion"] == champ_name),
                  None)
    run = {"start_sha256": start_sha, "init_from": params.pipeline.init_from, "params_file": params_file,
           "generations": gens, "totals": totals}
    generation = max((g["generation"] for g in gens if g["sha256"] == champion_sha), default=0)
    lineage = {
        "line": tag,
        "file": out_pt.name,
        "sha256": champion_sha,
        "start_sha256": start_sha,
        "network": params.network.size,
        "game": params.game.model_dump(mode="json", include={"name", "size", "komi"} if params.game.name == "go"
                                       else {"name", "height", "width", "k"}),
        "made_by": f"zero-generation over {params_file} (zero-loop), shipped by flows.ship",
        # generation: the workspace's number; line_generation: the line's, counting the runs it resumed from
        "champion": {"generation": generation,
                     "line_generation": earlier_totals.get("generations", 0) + generation,
                     "name": champ_name,
                     "rating": (ratings.get("ratings") or {}).get(champ_name) if champ_name else None,
                     "anchor": ratings.get("anchor")},
        "params_hash": params.digest(),
        "params": params.model_dump(mode="json"),
        "code_commit": gens[-1]["git_commit"],
        "ladder": ladder,
        "runs": earlier + [run],
        "earlier_totals": earlier_totals,
        "totals": _add_totals(earlier_totals, totals),
    }
    if recipe:  # first: a workspace without the records to re-create its champion ships nothing
        write_recipe(root, last, recipe_dir(models, tag))
    tmp = out_pt.with_name(out_pt.name + ".tmp")
    shutil.copyfile(last.champion, tmp)
    tmp.replace(out_pt)
    if window:
        carried = ship_window(root, last, window_dir(models, tag), champion_sha, params.train.window_generations)
        lineage["window"] = {"folder": window_dir(models, tag).name, "generation": last.g,
                             "shards": len(carried["shards"]), "games": sum(s["games"] for s in carried["shards"]),
                             "positions": sum(s["positions"] for s in carried["shards"]),
                             "generations": len({s["age"] for s in carried["shards"]})}
    else:  # an earlier champion's window would read as this one's
        shutil.rmtree(window_dir(models, tag), ignore_errors=True)
        lineage["window"] = None
    if recipe:
        lineage["reproduce"] = {"folder": recipe_dir(models, tag).name, "command": f"make reproduce LINE={tag}"}
    write_json(out_json, lineage)
    return lineage


def _replace_dir(source: Path, target: Path) -> None:
    """`target` becomes a copy of folder `source`, swapped in whole."""
    with replacing_dir(target) as tmp:
        shutil.copytree(source, tmp, dirs_exist_ok=True)


def ship_saved(saved: Path, models: Path, tag: str) -> dict:
    """Ship the champion a campaign saved in folder `saved` (`make campaign-save`: campaigns/state/) with its
    lineage, recipe and window, into `models`: a saved generation ships after its workspace is gone.

    Everything is checked before anything is copied: the network is the lineage's (sha256) and the recipe's,
    and the window's manifest is the champion's. The lineage is written last.
    """
    saved, models = Path(saved), Path(models)
    pt, lineage_file = saved / f"{tag}.pt", saved / f"{tag}.json"
    recipe, window = recipe_dir(saved, tag), window_dir(saved, tag)
    for path in (pt, lineage_file):
        if not path.is_file():
            raise LineError(f"{path}: missing; `make campaign-save` writes it")
    lineage = read_json(lineage_file)
    sha = file_sha256(pt)
    if lineage.get("sha256") != sha:
        raise LineError(f"{pt}: sha256 {sha[:12]} is not its lineage's ({str(lineage.get('sha256'))[:12]}): "
                        f"{lineage_file.name} belongs to another network")
    if not (recipe / "recipe.json").is_file() or not lineage.get("reproduce"):
        raise LineError(f"{recipe}: no recipe saved with this champion (saved without one): "
                        f"ship it from its workspace (make ship WS=...)")
    if (made := read_json(recipe / "recipe.json").get("champion_sha256")) != sha:
        raise LineError(f"{recipe / 'recipe.json'}: re-creates {str(made)[:12]}, not the saved champion {sha[:12]}")
    if lineage.get("window"):
        manifest = window / "window.json"
        if not manifest.is_file() or read_json(manifest).get("champion_sha256") != sha:
            raise LineError(f"{manifest}: missing or another champion's window")
    models.mkdir(parents=True, exist_ok=True)
    _replace_dir(recipe, recipe_dir(models, tag))
    if lineage.get("window"):
        _replace_dir(window, window_dir(models, tag))
    else:
        shutil.rmtree(window_dir(models, tag), ignore_errors=True)
    tmp = models / f"{tag}.pt.tmp"
    shutil.copyfile(pt, tmp)
    tmp.replace(models / f"{tag}.pt")
    write_json(models / f"{tag}.json", lineage)
    return lineage


def attach_ladder(lineage_file: Path, ladder: Path, player: str | None = None) -> dict:
    """Record in a shipped champion's lineage (models/<tag>.json) its results in a `zero ladder` directory.

    The champion's pairings are those whose network file has the lineage's sha256 (`a_sha256`); a pairing
    recorded before networks' hashes were kept is taken only when `player` names it, and says so.
    The fitted rating of the directory becomes the champion's rating, with its anchor.
    """
    from zero.ladder import fit_dir
    from zero.pairings import LadderError, read_pairings

    lineage = read_json(lineage_file)
    try:
        records = read_pairings(ladder)
    except LadderError as e:
        raise LineError(str(e)) from None
    mine = [r for r in records if r.get("a_sha256") == lineage["sha256"]]
    matched_by = "sha256"
    if not mine and player:
        mine = [r for r in records if r["a"] == player and "a_sha256" not in r]
        matched_by = f"player name {player} (the pairing predates sha256 records)"
    other = [r for r in records if r.get("a_sha256") not in (None, lineage["sha256"])]
    if not mine:
        raise LineError(f"{ladder}: no pairing of {lineage_file.name}'s champion (sha256 {lineage['sha256'][:12]})"
                        + (f" and none of player {player!r}" if player else "; name its player with --player"))
    name = mine[0]["a"]
    if other and any(r["a"] == name for r in other):
        raise LineError(f"{ladder}: player {name!r} is another network in some pairings: not this champion's")
    fitted = fit_dir(ladder)
    keys = ("b", "b_spec", "date", "games", "wins", "losses", "draws", "win_rate", "elo", "elo_low", "elo_high",
            "visits", "komi", "opening_moves", "seed", "starts", "seconds", "label")
    lineage["ladder"] = {"champion": name, "source": str(ladder), "matched_by": matched_by,
                         "anchor": fitted["anchor"],
                         "matches": [{k: r[k] for k in keys if k in r} for r in mine]}
    lineage["champion"] = {**lineage.get("champion", {}), "name": name,
                           "rating": fitted["ratings"].get(name), "anchor": fitted["anchor"]}
    write_json(lineage_file, lineage)
    return lineage


def main(argv: list[str] | None = None) -> int:
    from zero.config import ConfigError, load_params

    ap = argparse.ArgumentParser(prog="python -m flows.ship", description=__doc__.split("\n\n")[0])
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    ap.add_argument("--root", default=".")
    ap.add_argument("--models", default=None, help="where to write <tag>.pt and <tag>.json (default: ROOT/models)")
    ap.add_argument("--generation", type=int, default=None,
                    help="ship the champion after this finished generation of the workspace (default: the last)")
    ap.add_argument("--no-recipe", action="store_true",
                    help="leave out the recipe (models/<tag>.reproduce/), which needs the workspace's dvc.lock")
    ap.add_argument("--saved", default=None, metavar="DIR",
                    help="instead of a workspace's: ship the champion a campaign saved in DIR (campaigns/state, "
                         "`make campaign-save`) with its lineage, recipe and window")
    ap.add_argument("--no-window", action="store_true",
                    help="leave out the training window (models/<tag>.window/), too large to carry from a GPU box: "
                         "the recipe then re-creates the champion by its whole run (flows.reproduce --chain)")
    ap.add_argument("--ladder", default=None, metavar="DIR",
                    help="instead of shipping: record the shipped champion's results in this `zero ladder --out` "
                         "directory in its lineage")
    ap.add_argument("--player", default=None, help="with --ladder: the champion's player name in pairings "
                                                   "recorded without network hashes")
    args = ap.parse_args(argv)
    root = Path(args.root).resolve()
    if args.ladder:
        try:
            params = load_params(root / args.params, args.set)
            models = Path(args.models) if args.models else root / "models"
            lineage = attach_ladder(models / f"{params.game.tag}.json", Path(args.ladder), args.player)
        except (ConfigError, LineError, OSError, ValueError) as e:
            print(f"flows.ship: error: {e}", file=sys.stderr)
            return 2
        for m in lineage["ladder"]["matches"]:
            print(f"{lineage['ladder']['champion']} against {m['b']}: {m['wins']}-{m['losses']}-{m['draws']} "
                  f"({m.get('date')}) recorded in {models / (params.game.tag + '.json')}")
        return 0
    try:
        params = load_params(root / args.params, args.set)
        if args.saved:
            lineage = ship_saved(Path(args.saved), Path(args.models) if args.models else root / "models",
                                 params.game.tag)
        else:
            lineage = ship(root, params, args.params, Path(args.models) if args.models else None, args.generation,
                           recipe=not args.no_recipe, window=not args.no_window)
    except (ConfigError, LineError, OSError) as e:
        print(f"flows.ship: error: {e}", file=sys.stderr)
        return 2
    t, w = lineage["totals"], lineage["window"]
    print(f"shipped {lineage['line']}: {lineage['file']} (sha256 {lineage['sha256'][:12]}), "
          f"{t['generations']} generations, {t['games']} games, {t['positions']} positions; "
          + (f"its training window ({w['generations']} generations, {w['positions']} positions) in {w['folder']}/"
             if w else "without its training window"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
