"""Where a generation's files live, how its seeds are derived, and who may run it.

A workspace (the repository root by default) holds one *line* of generations
per game tag (`go-9`, `gomoku-6x6x4`). Generation g of line `go-9` lives in
`gens/go-9/g0003/`:

    params.yaml    the effective params of this generation (file + overrides), git-tracked
    games/         self-play shards `shard-000.npz` ... and their SGFs (DVC output)
    window.json    the training window: the last W generations' shards with sha256 (DVC output)
    candidate.pt   the network trained on the window (DVC output)
    gate/          candidate against champion: part results, SGFs, result.json (DVC output)
    champion.pt    the champion after this generation (DVC output)
    generation.json  the audit record written when the generation finishes, git-tracked
    spent/         the CPU time each self-play shard, training and gate part took when it was made, so a run
                   that resumes the generation counts an earlier attempt's finished work (not DVC-tracked)

`gens/go-9/g0000/` holds generation 0: a freshly initialised champion and an
empty window. `generations.yaml` lists every line and generation; dvc.yaml's
`foreach` stages read it, so generation 3 of go-9 has stages
`selfplay@go-9-g0003`, `dataset@...`, `train@...`, `gate@...`, `champion@...`.
The line's ladder (flows.ladder) lives beside its generations, in `gens/go-9/ladder/`.

This module imports neither prefect nor mlflow nor dvc: the DVC stage
commands (flows.stages) use it too.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import socket
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from zero.fileio import atomic_write_text

GENERATIONS_FILE = "generations.yaml"
GENS_DIR = "gens"

# Seed streams: one per stage kind, so that no two tasks ever share a seed.
SEED_STREAMS = {"init": 0, "selfplay": 1, "train": 2, "gate": 3, "ladder": 4, "calibration": 5}


class LineBusy(RuntimeError):
    """Another process is already running a generation of this line."""


class LineError(RuntimeError):
    """The workspace, its generations list or the registry disagree about a line."""


def derive_seed(base: int, generation: int, stage: str, index: int = 0) -> int:
    """A 31-bit seed from (run seed, generation, stage, shard index) via numpy's SeedSequence.

    31 bits so that every consumer (numpy, torch, numba's np.random.seed) accepts it.
    """
    ss = np.random.SeedSequence([int(base), int(generation), SEED_STREAMS[stage], int(index)])
    return int(ss.generate_state(1, np.uint32)[0]) & 0x7FFFFFFF


def generation_seeds(params, g: int) -> dict:
    """Every seed of generation g: {"run_seed", "selfplay": [one per shard], "train", "gate": [one per part]}."""
    s, p = params.pipeline.seed, params.pipeline
    return {
        "run_seed": s,
        "selfplay": [derive_seed(s, g, "selfplay", k) for k in range(p.selfplay_shards)],
        "train": derive_seed(s, g, "train"),
        "gate": [derive_seed(s, g, "gate", j) for j in range(p.gate_shards)],
    }


def gen_name(g: int) -> str:
    return f"g{g:04d}"


def ladder_dir(root: str | Path, tag: str) -> Path:
    """The ladder of line `tag`: `gens/<tag>/ladder/` (its files: zero.ladder)."""
    return Path(root) / GENS_DIR / tag / "ladder"


def split_counts(total: int, parts: int, unit: int = 1) -> list[int]:
    """Split `total` into `parts` near-equal counts, each a multiple of `unit` where possible.

    The gate uses unit=2 so each part plays whole colour-swapped pairs.
    """
    if parts < 1:
        raise ValueError("parts must be >= 1")
    units, rest = divmod(total, unit)
    base, extra = divmod(units, parts)
    counts = [(base + (1 if i < extra else 0)) * unit for i in range(parts)]
    counts[-1] += rest
    return counts


def read_json(path: Path) -> dict:
    """A JSON file the pipeline or flows.ship wrote; LineError naming the file where it is torn or not JSON."""
    text = Path(path).read_text()
    try:
        return json.loads(text)
    except ValueError as e:
        raise LineError(f"{path}: torn or not JSON ({e})") from None


def write_json(path: Path, data: dict) -> None:
    """Deterministic JSON (sorted keys, fixed indent), written atomically."""
    atomic_write_text(path, json.dumps(data, sort_keys=True, indent=1) + "\n")


@contextlib.contextmanager
def replacing_dir(target: Path):
    """Build folder `target`'s replacement in the empty folder this yields, beside it. When the block ends
    without an error, the new folder is swapped in by renames, so a reader finds the old folder or the new
    one, never a half-written one; on an error `target` is left as it was."""
    target = Path(target)
    tmp, old = target.with_name(target.name + ".tmp"), target.with_name(target.name + ".old")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(old, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if target.exists():
        target.rename(old)
    tmp.rename(target)
    shutil.rmtree(old, ignore_errors=True)


@dataclass(frozen=True)
class Generation:
    """Generation `g` of line `tag` in workspace `root`; g=0 is the initial network."""

    root: Path
    tag: str
    g: int

    @property
    def name(self) -> str:
        return gen_name(self.g)

    @property
    def key(self) -> str:
        """The foreach key in generations.yaml: stage names are `selfplay@<key>`."""
        return f"{self.tag}-{self.name}"

    @property
    def rel(self) -> str:
        """The generation's directory relative to the workspace root (as dvc.yaml sees it)."""
        return f"{GENS_DIR}/{self.tag}/{self.name}"

    @property
    def dir(self) -> Path:
        return self.root / self.rel

    @property
    def prev(self) -> "Generation":
        if self.g == 0:
            raise LineError("generation 0 has no previous generation")
        return Generation(self.root, self.tag, self.g - 1)

    # --- files of the generation -------------------------------------------------
    params_file = property(lambda self: self.dir / "params.yaml")
    games_dir = property(lambda self: self.dir / "games")
    window_file = property(lambda self: self.dir / "window.json")
    candidate = property(lambda self: self.dir / "candidate.pt")
    gate_dir = property(lambda self: self.dir / "gate")
    gate_result = property(lambda self: self.dir / "gate" / "result.json")
    champion = property(lambda self: self.dir / "champion.pt")
    record_file = property(lambda self: self.dir / "generation.json")

    def spent_file(self, step: str) -> Path:
        """The CPU time the run that made `step` (`selfplay-003`, `train`, `gate-000`) spent on it."""
        return self.dir / "spent" / f"{step}.json"

    def shard(self, k: int) -> Path:
        return self.games_dir / f"shard-{k:03d}.npz"

    def shard_sgf_dir(self, k: int) -> Path:
        return self.games_dir / "sgf" / f"shard-{k:03d}"

    def gate_part(self, j: int) -> Path:
        return self.gate_dir / f"part-{j:03d}.json"

    def gate_sgf_dir(self, j: int) -> Path:
        return self.gate_dir / "sgf" / f"part-{j:03d}"

    def stage(self, kind: str) -> str:
        """DVC stage name, e.g. `selfplay@go-9-g0003` (`init@go-9` for generation 0)."""
        return f"init@{self.tag}" if self.g == 0 else f"{kind}@{self.key}"

    def finished(self) -> bool:
        return self.record_file.is_file() and self.champion.is_file()


class Workspace:
    """A workspace root: its generations list, its lines and their locks."""

    def __init__(self, root: str | Path):
        self.root = Path(root).resolve()

    @property
    def generations_file(self) -> Path:
        return self.root / GENERATIONS_FILE

    def read_generations(self) -> dict:
        """The generations list: {"lines": {tag: {...}}, "generations": {key: {...}}}."""
        path = self.generations_file
        data = yaml.safe_load(path.read_text()) if path.is_file() else None
        data = data or {}
        return {"lines": dict(data.get("lines") or {}), "generations": dict(data.get("generations") or {})}

    def _write_generations(self, data: dict) -> None:
        header = (
            "# Written by the zero-generation flow (flows/layout.py); dvc.yaml's foreach stages read it.\n"
            "# lines: generation 0 of each game line; generations: one entry per generation.\n"
        )
        atomic_write_text(self.generations_file, header + yaml.safe_dump(data, sort_keys=True))

    def generations(self, tag: str) -> list[int]:
        """The generation numbers listed for a line, in order (0 first when present)."""
        data = self.read_generations()
        gens = [0] if tag in data["lines"] else []
        for key, item in data["generations"].items():
            if item.get("tag") == tag:
                gens.append(int(item["g"]))
        return sorted(gens)

    def generation(self, tag: str, g: int) -> Generation:
        return Generation(self.root, tag, g)

    def register(self, gen: Generation) -> None:
        """Add a generation to generations.yaml (idempotent), so dvc.yaml gets its stages."""
        data = self.read_generations()
        if gen.g == 0:
            entry = {"dir": gen.rel, "tag": gen.tag}
            if data["lines"].get(gen.tag) == entry:
                return
            data["lines"][gen.tag] = entry
        else:
            entry = {"dir": gen.rel, "prev": gen.prev.rel, "tag": gen.tag, "g": gen.g}
            if data["generations"].get(gen.key) == entry:
                return
            data["generations"][gen.key] = entry
        self._write_generations(data)

    def start(self, gen: Generation, params) -> None:
        """Check generation `gen` may start, write its params snapshot and list it (and g0) in generations.yaml.

        A generation's snapshot is written once: resuming it with other params is refused.
        """
        from zero.config import load_params

        listed = self.generations(gen.tag)
        last = max(listed) if listed else 0
        if gen.g > last + 1 or (gen.g > 1 and not gen.prev.finished()):
            raise LineError(
                f"generation {gen.g} of {gen.tag} cannot start: generation {gen.g - 1} has not finished "
                f"(listed: {listed or 'none'})"
            )
        for target in ([self.generation(gen.tag, 0)] if gen.g == 1 else []) + [gen]:
            path = target.params_file
            if path.is_file():
                before = load_params(path)
                if target.g > 0 and before.digest() != params.digest():
                    raise LineError(
                        f"generation {target.g} of {gen.tag} was started with other params (hash "
                        f"{before.digest()[:12]}, see {path}); resume it with the same params, or delete "
                        f"{target.rel} to start it over"
                    )
                continue
            self.write_snapshot(target, params)
        if gen.g == 1:
            self.register(self.generation(gen.tag, 0))
        self.register(gen)

    def write_snapshot(self, gen: Generation, params) -> None:
        """Write generation `gen`'s params snapshot (params file + overrides, as the recipe set them)."""
        snapshot = yaml.safe_dump(params.model_dump(mode="json"), sort_keys=True)
        header = f"# Effective params of {gen.key} (params file + overrides), written by zero-generation.\n"
        atomic_write_text(gen.params_file, header + snapshot)

    def next_generation(self, tag: str) -> int:
        """The generation a run without an explicit number works on.

        The last listed generation if it has not finished (a resumed run), else the next.
        """
        gens = self.generations(tag)
        if not gens:
            return 1
        last = gens[-1]
        if last > 0 and not self.generation(tag, last).finished():
            return last
        return last + 1

    def lock(self, tag: str, generation: int, owner: str = "") -> "LineLock":
        return LineLock(self.root / GENS_DIR / tag / ".lock", tag, generation, owner)


class LineLock:
    """An exclusive, non-blocking lock on a line, released by the OS if its holder dies.

    The lock file records who holds it (generation, owner such as the Prefect flow
    run id, pid, host, start time) so that a refused run can say who is running.
    """

    def __init__(self, path: Path, tag: str, generation: int, owner: str = ""):
        self.path, self.tag, self.generation, self.owner = Path(path), tag, generation, owner
        self._fd: int | None = None

    def holder(self) -> dict:
        try:
            return json.loads(self.path.read_text() or "{}")
        except (OSError, ValueError):
            return {}

    def acquire(self) -> "LineLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            h = self.holder()
            raise LineBusy(
                f"generation {h.get('generation', '?')} of {self.tag} is already running "
                f"(flow run {h.get('owner') or '?'}, pid {h.get('pid', '?')} on {h.get('host', '?')}, "
                f"since {h.get('since', '?')}); refusing to start a second run for generation "
                f"{self.generation}. Wait for it to finish, or cancel it first."
            ) from None
        info = {
            "generation": self.generation,
            "owner": self.owner,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "LineLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()
