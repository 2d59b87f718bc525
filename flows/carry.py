"""A training window carried from one workspace to the next, beside the champion it trained.

A campaign lives in a workspace that does not outlive the machine it runs on; what it leaves is the
shipped champion (`models/go-9.pt` and its lineage). Resumed from that file alone, its first generation
would train on its own few hundred games, its second on two generations' and so on: a window of 12
generations is not full again for 12 generations. So flows.ship also writes the window of the
workspace's last finished generation beside the checkpoint:

    models/go-9.window/window.json      the manifest: line, champion_sha256, window_generations, and per
                                        shard its file, age (generations before the shipping one), sha256,
                                        games and positions
    models/go-9.window/<sha256[:16]>.npz  the shards, named by content (a shard kept from one shipping to
                                        the next keeps its name and its bytes)

and a line with `pipeline.init_window: models/go-9.window` (and `init_from: models/go-9.pt`) copies those
shards into its generation 0 (`gens/<tag>/g0000/carried/`), in the window as generations 0, -1, -2 ...
(0 - age), so the dataset stage keeps each for as long as its age allows. The files are checked against
the manifest and the manifest against the champion: a window that trained another network is refused.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from flows.layout import Generation, LineError, read_json, write_json
from zero.shards import file_sha256

MANIFEST = "window.json"
CARRIED = "carried"


def window_dir(models: Path, tag: str) -> Path:
    """Where flows.ship writes line `tag`'s window: beside `<tag>.pt`."""
    return Path(models) / f"{tag}.window"


def ship_window(root: Path, gen: Generation, out: Path, champion_sha256: str, window_generations: int) -> dict:
    """Write the window of finished generation `gen` (its window.json's shards) to folder `out`.

    New shards are copied first, then the manifest replaces the old one in a rename, then files it no
    longer lists are removed: at every moment the manifest lists files that are there, whole.
    """
    window = read_json(gen.window_file)
    out.mkdir(parents=True, exist_ok=True)
    shards = []
    for s in window["shards"]:
        name = f"{s['sha256'][:16]}.npz"
        target = out / name
        if not (target.is_file() and file_sha256(target) == s["sha256"]):
            source = root / s["path"]
            if file_sha256(source) != s["sha256"]:
                raise LineError(f"{source}: shard of {gen.name}'s window changed (expected sha256 {s['sha256']})")
            tmp = target.with_name(name + ".tmp")
            shutil.copyfile(source, tmp)
            tmp.replace(target)
        shards.append({"file": name, "age": gen.g - s["generation"], "sha256": s["sha256"],
                       "games": s["games"], "positions": s["positions"]})
    manifest = {"line": gen.tag, "champion_sha256": champion_sha256, "generation": gen.g,
                "window_generations": window_generations, "shards": shards}
    write_json(out / MANIFEST, manifest)
    listed = {s["file"] for s in shards} | {MANIFEST}
    for path in out.iterdir():
        if path.name not in listed:
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    return manifest


def read_window(source: Path, tag: str, champion_sha256: str | None) -> dict:
    """The manifest of a carried window, checked: its line, its champion (unless None) and every shard's bytes."""
    path = source / MANIFEST
    if not path.is_file():
        raise LineError(f"pipeline.init_window: {source} has no {MANIFEST} (flows.ship writes the window beside "
                        f"the champion; unset init_window to start with an empty window)")
    try:
        manifest = read_json(path)
        shards = manifest["shards"]
        line, champion = manifest["line"], manifest["champion_sha256"]
        entries = [(s["file"], int(s["age"]), s["sha256"], int(s["games"]), int(s["positions"])) for s in shards]
    except (ValueError, KeyError, TypeError) as e:
        raise LineError(f"{path}: not a carried window's manifest ({type(e).__name__}: {e})") from None
    if line != tag:
        raise LineError(f"{path}: the window of line {line}, not {tag}")
    if champion_sha256 is not None and champion != champion_sha256:
        raise LineError(f"{path}: the window that trained the champion with sha256 {champion[:12]}, not "
                        f"pipeline.init_from's ({champion_sha256[:12]})")
    for name, age, sha, _, _ in entries:
        shard = source / name
        if Path(name).name != name or age < 0:
            raise LineError(f"{path}: shard entry {name!r} (age {age}) is not a file of this folder")
        if not shard.is_file() or file_sha256(shard) != sha:
            raise LineError(f"{shard}: shard of the carried window is missing or changed (expected sha256 {sha})")
    return manifest


def carry_window(gen0: Generation, source: Path | None, champion_sha256: str) -> list[dict]:
    """Copy a carried window into generation 0 (`carried/`); the window.json entries of its shards.

    The folder is written whole under a temp name and renamed; with no source it holds an empty manifest,
    so generation 0's outputs are the same files either way. A generation 0 that has its carried window
    keeps it (as it keeps its champion): the source beside a shipped champion moves on with each shipping.
    """
    out = gen0.dir / CARRIED
    try:
        return _entries(gen0, read_window(out, gen0.tag, None))
    except LineError:
        pass
    tmp = out.with_name("." + CARRIED + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    manifest = {"line": gen0.tag, "champion_sha256": champion_sha256, "shards": []}
    if source is not None:
        manifest = read_window(source, gen0.tag, champion_sha256)
        for s in manifest["shards"]:
            shutil.copyfile(source / s["file"], tmp / s["file"])
    write_json(tmp / MANIFEST, manifest)
    shutil.rmtree(out, ignore_errors=True)
    tmp.replace(out)
    return _entries(gen0, manifest)


def _entries(gen0: Generation, manifest: dict) -> list[dict]:
    """The window.json entries of a carried window's shards: generation 0 - age, oldest first."""
    return [{"path": f"{gen0.rel}/{CARRIED}/{s['file']}", "generation": -s["age"], "sha256": s["sha256"],
             "games": s["games"], "positions": s["positions"]} for s in manifest["shards"]]
