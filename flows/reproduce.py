"""Re-create a shipped champion from a clone: the recipe a ship commits, and the command that follows it.

A ship writes `models/<tag>.reproduce/` beside the champion: text (each generation's params snapshot, its
dvc.lock entries, code commit, lock hash and arithmetic) and the one network no commit holds yet, the
generation before the champion's. The training window is the shipped window (`models/<tag>.window/`), and
the code is the commit the generation ran. The command checks out that commit into a fresh workspace, lays
the inputs out where the generation found them, runs the generation's five stages with `dvc repro`, and
compares every output's hash with the recorded ones and the champion's sha256 with the lineage's:

    python -m flows.reproduce --line go-9            (make reproduce LINE=go-9)
    python -m flows.reproduce --line go-9 --chain    (every generation of the champion's run, from its start)

The same bytes come out on the same machine class (CPU model, bfloat16 instructions) with the same library
versions (requirements.lock); the command says before it starts when this machine differs.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
import time
from pathlib import Path

import yaml

from flows import lineage as dvc_lineage
from flows.layout import Generation, LineError, Workspace, read_json, replacing_dir, write_json
from zero.shards import file_sha256

REPO = Path(__file__).resolve().parent.parent
RECIPE = "recipe.json"
BEFORE = "champion-before.pt"
WINDOW_BEFORE = "window-before.json"
STAGES = ("selfplay", "dataset", "train", "gate", "champion")


def recipe_dir(models: Path, tag: str) -> Path:
    """Where flows.ship writes line `tag`'s recipe: beside `<tag>.pt`."""
    return Path(models) / f"{tag}.reproduce"


def _lock_stages(root: Path) -> dict:
    if not (root / "dvc.lock").is_file():
        raise LineError(f"{root / 'dvc.lock'}: missing; a generation's recipe needs the lock entries its flow recorded")
    return dvc_lineage.lock_stages(root)


def _stage_names(gen: Generation) -> list[str]:
    return [f"init@{gen.tag}"] if gen.g == 0 else [f"{kind}@{gen.key}" for kind in STAGES]


def write_recipe(root: Path, gen: Generation, out: Path) -> dict:
    """Write the recipe of finished generation `gen` of workspace `root` to folder `out` (replaced whole).

    It holds every generation of the run from generation 0 to `gen` (for --chain) and, for the default
    re-creation of `gen` alone, the previous generation's champion and window.json, byte for byte.
    """
    root, ws = Path(root), Workspace(root)
    lock = _lock_stages(root)
    with replacing_dir(out) as tmp:
        (tmp / "params").mkdir()
        generations = []
        for g in range(gen.g + 1):
            one = ws.generation(gen.tag, g)
            snapshot = one.params_file.read_bytes()
            name = f"params/{hashlib.sha256(snapshot).hexdigest()[:16]}.yaml"
            (tmp / name).write_bytes(snapshot)
            stages = {s: lock[s] for s in _stage_names(one) if s in lock}
            missing = [s for s in _stage_names(one) if s not in lock]
            if missing:
                raise LineError(f"{root / 'dvc.lock'}: no entry for {', '.join(missing)}: the generation was not "
                                f"recorded by the flow, so there is nothing to compare a re-creation with")
            record = read_json(one.record_file) if g > 0 else {}
            generations.append({
                "g": g, "params": name, "lock": stages,
                "git_commit": record.get("git_commit"), "git_dirty": record.get("git_dirty"),
                "requirements_lock_sha256": record.get("requirements_lock_sha256"),
                "arithmetic": record.get("arithmetic"),
            })
        shutil.copyfile(gen.prev.champion, tmp / BEFORE)
        shutil.copyfile(gen.prev.window_file, tmp / WINDOW_BEFORE)
        recipe = {"line": gen.tag, "generation": gen.g, "champion_sha256": file_sha256(gen.champion),
                  "before_sha256": file_sha256(gen.prev.champion), "generations": generations}
        write_json(tmp / RECIPE, recipe)
    return recipe


# --- the command ----------------------------------------------------------------------------------


def machine_notes(recipe: dict, here: dict) -> list[str]:
    """Why this machine may not give the recorded bytes: each difference from what the generations ran on."""
    notes = []
    last = recipe["generations"][-1]
    math = last.get("arithmetic")
    if not math:
        notes.append("the generation did not record its CPU and arithmetic: the bytes match only on the same CPU "
                     "model and number formats, which this run cannot check beforehand")
    else:
        if math.get("cpu") != here.get("cpu"):
            notes.append(f"it ran on {math.get('cpu')}, this is {here.get('cpu')}: another CPU model may round "
                         f"differently (its kernels' instruction set), and the networks then differ")
        if math.get("bf16_instructions") and not here.get("bf16_instructions"):
            notes.append("it ran bfloat16 on a CPU with bfloat16 instructions; this CPU has none, so bfloat16 "
                         "would be emulated (other bytes, several times slower)")
    lock_sha = last.get("requirements_lock_sha256")
    lock_here = REPO / "requirements.lock"
    if lock_sha and lock_here.is_file() and file_sha256(lock_here) != lock_sha:
        notes.append("the libraries here were installed from another requirements.lock than the generation's "
                     "(`git show <its commit>:requirements.lock`): other library versions may give other bytes")
    return notes


def _checkout(repo: Path, commit: str, workdir: Path) -> None:
    if workdir.exists() and any(workdir.iterdir()):
        raise LineError(f"{workdir} exists and is not empty: name another --dir, or delete it")
    workdir.parent.mkdir(parents=True, exist_ok=True)
    dvc_lineage.git(workdir.parent, "clone", "-q", "--shared", "--no-checkout", str(repo), str(workdir))
    if dvc_lineage.git(workdir, "checkout", "-q", "--detach", commit, check=False).returncode != 0:
        raise LineError(f"commit {commit[:12]}, the code the generation ran, is not in {repo}: fetch it first")
    dvc_lineage.ensure_dvc(workdir)


def _check_before(recipe: dict, folder: Path) -> Path:
    before = folder / BEFORE
    if not before.is_file() or file_sha256(before) != recipe["before_sha256"]:
        raise LineError(f"{before}: not the network the generation started from "
                        f"(expected sha256 {recipe['before_sha256'][:12]})")
    return before


def _lay_out(recipe: dict, folder: Path, window: Path | None, workdir: Path, chain: bool) -> list[str]:
    """Write the inputs into the checkout; the stages to re-create, in order."""
    ws = Workspace(workdir)
    tag, gens = recipe["line"], recipe["generations"]
    chosen = gens if chain else gens[-1:]
    for one in chosen:
        gen = ws.generation(tag, one["g"])
        gen.dir.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(folder / one["params"], gen.params_file)
        ws.register(gen)
    if not chain:
        last = ws.generation(tag, gens[-1]["g"])
        before = _check_before(recipe, folder)
        last.prev.dir.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(before, last.prev.champion)
        shutil.copyfile(folder / WINDOW_BEFORE, last.prev.window_file)
        w = yaml.safe_load(last.params_file.read_text())["train"]["window_generations"]
        for s in read_json(last.prev.window_file)["shards"]:
            if s["generation"] <= last.g - w:
                continue  # left out of the window by this generation's dataset stage
            source = window / f"{s['sha256'][:16]}.npz"
            if not source.is_file() or file_sha256(source) != s["sha256"]:
                raise LineError(f"{source}: shard of the training window missing or changed "
                                f"(expected sha256 {s['sha256'][:12]})")
            target = workdir / s["path"]
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
    order = {kind: i for i, kind in enumerate(("init",) + STAGES)}  # the lock's keys come sorted by name
    return [s for one in chosen for s in sorted(one["lock"], key=lambda s: order[s.split("@")[0]])]


def _outs(entry: dict) -> dict[str, str]:
    return {o["path"]: o.get("md5", "") for o in entry.get("outs", [])}


def compare(recipe: dict, workdir: Path, stages: list[str]) -> list[dict]:
    """One row per output of the re-created stages: the recorded and the re-created hash."""
    made = _lock_stages(workdir)
    recorded = {s: e for one in recipe["generations"] for s, e in one["lock"].items()}
    rows = []
    for stage in stages:
        now = _outs(made.get(stage, {}))
        for path, md5 in _outs(recorded[stage]).items():
            rows.append({"stage": stage, "path": path, "recorded": md5, "made": now.get(path, ""),
                         "same": now.get(path) == md5})
    return rows


def reproduce(models: Path, tag: str, workdir: Path, chain: bool = False, repo: Path = REPO,
              say=print) -> bool:
    """Re-create line `tag`'s shipped champion in `workdir`; whether every hash came out as recorded."""
    from zero.inference import cpu_has_bfloat16, cpu_model

    models = Path(models)
    lineage_file, folder = models / f"{tag}.json", recipe_dir(models, tag)
    if not (folder / RECIPE).is_file():
        raise LineError(f"{folder / RECIPE}: missing; this champion was shipped without its recipe")
    recipe, lineage = read_json(folder / RECIPE), read_json(lineage_file)
    if recipe["champion_sha256"] != lineage["sha256"]:
        raise LineError(f"{folder / RECIPE} is the recipe of sha256 {recipe['champion_sha256'][:12]}, not of "
                        f"{lineage_file.name}'s champion ({lineage['sha256'][:12]})")
    gens = recipe["generations"] if chain else recipe["generations"][-1:]
    dirty = sorted({g["g"] for g in gens if g.get("git_dirty") == "true"})
    if dirty:
        raise LineError(f"generation(s) {dirty} ran code that differed from its commit: no commit holds it")
    commits = sorted({g["git_commit"] for g in gens if g["g"] > 0})
    if len(commits) != 1:
        raise LineError(f"the generations ran {len(commits)} code commits ({', '.join(c[:12] for c in commits)}): "
                        f"re-create them one run at a time")
    line_gen = (lineage.get("champion") or {}).get("line_generation")
    say(f"{tag}: the champion {lineage['sha256'][:12]} is generation {recipe['generation']} of its run"
        + (f" (generation {line_gen} of the line)" if line_gen else "")
        + f", made by commit {commits[0][:12]}")
    for note in machine_notes(recipe, {"cpu": cpu_model(), "bf16_instructions": cpu_has_bfloat16()}):
        say(f"note: {note}")
    if not chain:
        if not lineage.get("window"):
            raise LineError(f"{lineage_file.name}'s champion was shipped without its training window (flows.ship "
                            f"--no-window): re-create it by its whole run, with --chain")
        _check_before(recipe, folder)  # before anything is written
    _checkout(repo, commits[0], workdir)
    window = models / lineage["window"]["folder"] if lineage.get("window") else None  # only read without chain
    stages = _lay_out(recipe, folder, window, workdir, chain)
    say(f"re-creating {len(stages)} stage(s) in {workdir} with dvc repro" + (" (the whole run)" if chain else ""))
    for stage in stages:
        t0 = time.monotonic()
        dvc_lineage.dvc(workdir, "repro", "--single-item", stage)
        say(f"  {stage}: {time.monotonic() - t0:.0f} s")
    rows = compare(recipe, workdir, stages)
    width = max(len(r["path"]) for r in rows)
    for r in rows:
        say(f"  {'same' if r['same'] else 'DIFFERS':7} {r['path']:{width}}  recorded {r['recorded'][:16]}"
            + ("" if r["same"] else f"  made {r['made'][:16] or '(nothing)'}"))
    last = Workspace(workdir).generation(tag, recipe["generation"])
    made_sha = file_sha256(last.champion)
    same_net = made_sha == lineage["sha256"]
    say(f"champion sha256 {made_sha} {'equals' if same_net else 'differs from'} {lineage_file.name}'s "
        f"{lineage['sha256']}")
    ok = same_net and all(r["same"] for r in rows)
    say(f"{sum(r['same'] for r in rows)} of {len(rows)} outputs re-created with their recorded hashes: "
        + ("the champion is re-created" if ok else "NOT the same bytes"))
    return ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m flows.reproduce", description=__doc__.split("\n\n")[0])
    ap.add_argument("--line", required=True, help="the line whose shipped champion to re-create, e.g. go-9")
    ap.add_argument("--models", default=str(REPO / "models"), help="where the champion was shipped")
    ap.add_argument("--dir", default=None, help="the new workspace (default: reproduce/<line> in the repository)")
    ap.add_argument("--chain", action="store_true",
                    help="re-run every generation of the champion's run from its generation 0, not the last alone")
    args = ap.parse_args(argv)
    workdir = Path(args.dir or REPO / "reproduce" / args.line).resolve()
    try:
        ok = reproduce(Path(args.models), args.line, workdir, chain=args.chain)
    except (LineError, dvc_lineage.LineageError, OSError, KeyError) as e:
        print(f"flows.reproduce: error: {e}", file=sys.stderr)
        return 2
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
