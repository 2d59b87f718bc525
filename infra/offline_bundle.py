"""The pipeline's packages for a machine without network access, as one xz-compressed archive of wheels.

A GPU box that reaches no package index but has Python, torch, numba and the scientific stack (a CUDA image)
still needs Prefect, MLflow, DVC and their dependencies to run `make run` with its servers. This script
downloads the wheels of requirements.lock's exact versions for that machine's Python and platform, leaves out
the packages the machine has already (`--base`, one name a line) and those the pipeline does not use there
(SKIP: Ray, the browser test's Playwright, a team server's PostgreSQL drivers, MLflow's server), builds the
pure-Python ones that PyPI has only as source, and writes them, each re-zipped without compression, into one tar.xz: xz
compresses across the files. `infra/offline-install.sh` installs it on the other machine.

    python infra/offline_bundle.py --python 3.12 --base infra/offline/cuda-base.txt --headless \
        --out .offline/wheels-py312.tar.xz

Beside the archive, <out>.json lists the wheels with their sha256, the Python they are for, and the base.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Not needed by the pipeline on one machine: the Ray cluster's packages (self-play fans out over processes
# without it), the MLflow UI test's browser driver, a team server's PostgreSQL drivers, a profiler.
SKIP = {
    "torch",  # the machine's own build (CUDA)
    "ray", "prefect-ray", "aiohttp-cors", "colorful", "opencensus", "opencensus-context", "google-api-core",
    "googleapis-common-protos", "proto-plus", "virtualenv", "distlib", "python-discovery", "smart-open",
    "opentelemetry-exporter-prometheus", "py-spy",  # a Ray cluster's
    "playwright",  # the MLflow UI's browser test
    "psycopg", "psycopg-binary",  # a team's PostgreSQL servers (Prefect's server imports asyncpg whatever its database)
    "gunicorn", "flask", "flask-cors", "graphene", "graphql-core", "graphql-relay", "huey", "skops",  # MLflow's server
    "celery", "kombu", "amqp", "billiard", "vine", "click-didyoumean", "click-plugins", "click-repl",
    "prompt-toolkit",  # DVC's queue of experiments
}
PLATFORMS = ["manylinux_2_" + str(n) + "_x86_64" for n in (39, 35, 34, 31, 28, 27, 26, 24, 17, 12, 5)] + [
    "manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"]


class BundleError(RuntimeError):
    """A package that could not be had for the target, or a bad argument; the message says which."""


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirements(lock: Path, base: set[str]) -> list[str]:
    """`name==version` of every locked package the target lacks and the pipeline needs there."""
    out = []
    for line in lock.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if "==" not in line:
            raise BundleError(f"{lock}: {line!r} is not pinned as name==version")
        name = canonical(line.split("==", 1)[0].split("[", 1)[0])
        if name not in base and name not in SKIP:
            out.append(line)
    return out


def read_base(path: Path | None) -> set[str]:
    if path is None:
        return set()
    names = set()
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            names.add(canonical(line))
    return names


def fetch(reqs: list[str], python: str, dest: Path) -> list[Path]:
    """One wheel per requirement for CPython `python` on x86-64 Linux. pip takes a wheel where PyPI has one
    for the target and the source otherwise; each source is built into a wheel here, which must come out
    pure Python (py3-none-any) to run there."""
    platform_args = [a for p in PLATFORMS for a in ("--platform", p)]
    got = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(dest),
                          "--python-version", python, "--implementation", "cp", *platform_args, *reqs],
                         capture_output=True, text=True)
    if got.returncode != 0:
        raise BundleError(f"pip download for CPython {python}: {' '.join(got.stderr.strip().splitlines()[-2:])}")
    for source in sorted(p for p in dest.iterdir() if not p.name.endswith(".whl")):
        built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dest), str(source)],
                               capture_output=True, text=True)
        source.unlink()
        if built.returncode != 0:
            raise BundleError(f"{source.name}: PyPI has no wheel of it for CPython {python}, and building one failed "
                              f"({' '.join(built.stderr.strip().splitlines()[-1:])})")
    wheels = sorted(dest.glob("*.whl"))
    impure = [w.name for w in wheels if not w.name.endswith("-none-any.whl") and f"cp{python.replace('.', '')}"
              not in w.name and "abi3" not in w.name]
    if impure:
        raise BundleError(f"wheels built for another Python than CPython {python}: {', '.join(impure)}")
    if len(wheels) != len(reqs):
        raise BundleError(f"{len(wheels)} wheels for {len(reqs)} requirements")
    return wheels


# The web UIs' built pages, left out of a headless archive (--headless): the Prefect server then answers its
# API and says "the dashboard is not built", MLflow tracks and registers as ever, and mlflow.db and .prefect/
# are browsed from a workspace with the UIs.
HEADLESS = ("prefect/server/ui/", "prefect/server/ui-v2/", "mlflow/server/js/")


def stored(wheel: Path, dest: Path, headless: bool = False) -> Path:
    """The wheel re-zipped without compression (the same files, names and RECORD), for xz to compress;
    headless: without the web UIs' pages (HEADLESS; pip installs what the archive holds)."""
    out = dest / wheel.name
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            if headless and info.filename.startswith(HEADLESS):
                continue
            data = src.read(info)
            info.compress_type = zipfile.ZIP_STORED
            dst.writestr(info, data)
    return out


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def bundle(python: str, base_file: Path | None, out: Path, lock: Path = ROOT / "requirements.lock",
           headless: bool = False) -> dict:
    if not re.fullmatch(r"3\.\d{1,2}", python):
        raise BundleError(f"--python {python!r}: a CPython version such as 3.12")
    reqs = requirements(lock, read_base(base_file))
    with tempfile.TemporaryDirectory() as tmp:
        wheels, flat = Path(tmp) / "wheels", Path(tmp) / "stored"
        wheels.mkdir()
        flat.mkdir()
        found = fetch(reqs, python, wheels)
        manifest = {"python": python, "base": str(base_file) if base_file else None, "headless": headless,
                    "lock_sha256": sha256(lock),
                    "wheels": {w.name: sha256(w) for w in found}}
        out.parent.mkdir(parents=True, exist_ok=True)
        partial = out.with_name(out.name + ".tmp")
        with tarfile.open(partial, "w:xz", preset=9) as tar:
            for w in found:
                tar.add(stored(w, flat, headless), arcname=w.name)
        partial.replace(out)
    manifest["archive_sha256"], manifest["archive_bytes"] = sha256(out), out.stat().st_size
    out.with_name(out.name + ".json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", required=True, help="the target's CPython version, e.g. 3.12")
    ap.add_argument("--base", type=Path, help="the packages the target has already, one name a line")
    ap.add_argument("--out", type=Path, required=True, help="the archive to write (.tar.xz)")
    ap.add_argument("--headless", action="store_true", help="without the Prefect and MLflow UIs' pages")
    args = ap.parse_args(argv)
    try:
        m = bundle(args.python, args.base, args.out, headless=args.headless)
    except BundleError as e:
        print(f"offline_bundle: error: {e}", file=sys.stderr)
        return 2
    print(f"{args.out}: {len(m['wheels'])} wheels for CPython {m['python']}, {m['archive_bytes'] / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
