"""DVC and git at the pipeline's edge: record outputs in dvc.lock, push them, name the code.

The flow writes a generation's outputs itself (fanned out over tasks), then
`dvc commit`s the generation's stages so dvc.lock records exactly the hashes a
`dvc repro` of those stages must re-create, and `dvc push`es them to the
default remote (`dvc-remote/` beside the workspace unless configured
otherwise: a team's SSH or S3 remote, docs/cluster.md). A push that fails raises
PushError naming the remote, the stages and dvc's message.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import yaml

DEFAULT_REMOTE = "local"
CODE_PATHS = ("zero", "flows", "pyproject.toml", "requirements.lock", "dvc.yaml")


class LineageError(RuntimeError):
    """A DVC or git command failed; the message carries its output."""


class PushError(LineageError):
    """`dvc push` of some stages to the default remote failed: which remote, which stages, and dvc's message."""

    def __init__(self, remote: dict, stages: list[str], detail: str):
        self.remote, self.stages, self.detail = dict(remote), list(stages), detail
        super().__init__(f"dvc push of {', '.join(self.stages)} to remote '{remote['name']}' ({remote['url']}) "
                         f"failed: {detail}")

    def __reduce__(self):  # a task's failure is pickled into its Prefect state
        return type(self), (self.remote, self.stages, self.detail)


def _bin(name: str) -> str:
    """A console script of this environment (the venv's dvc), else the one on PATH."""
    local = Path(sys.executable).parent / name
    return str(local) if local.exists() else name


def dvc_env() -> dict:
    env = dict(os.environ)
    env.setdefault("DVC_NO_ANALYTICS", "1")
    # dvc repro runs `python -m flows.stages`: make it this interpreter's python.
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def dvc(root: str | Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [_bin("dvc"), *args], cwd=root, env=dvc_env(), capture_output=True, text=True, stdin=subprocess.DEVNULL
    )
    if check and proc.returncode != 0:
        raise LineageError(f"dvc {' '.join(args)} failed in {root} (exit {proc.returncode}):\n"
                           f"{proc.stdout}{proc.stderr}")
    return proc


def git(root: str | Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if check and proc.returncode != 0:
        raise LineageError(f"git {' '.join(args)} failed in {root}: {proc.stderr.strip()}")
    return proc


def ensure_dvc(root: str | Path, remote_url: str | None = None) -> None:
    """`dvc init` the workspace if needed and give it a default remote (a local directory by default).

    The workspace must be a git repository (DVC's lock file is versioned with
    the code); `git init` is run when it is not one yet.
    """
    root = Path(root).resolve()
    if git(root, "rev-parse", "--show-toplevel", check=False).returncode != 0:
        git(root, "init", "-q")
    if not (root / ".dvc").is_dir():
        dvc(root, "init", "-q")
    dvc(root, "config", "core.analytics", "false")
    config = dvc_config(root)
    if f"remote.{DEFAULT_REMOTE}.url" not in config:
        url = remote_url or os.environ.get("ZERO_DVC_REMOTE") or "dvc-remote"
        dvc(root, "remote", "add", "--default", DEFAULT_REMOTE, url)
    elif not config.get("core.remote"):
        dvc(root, "remote", "default", DEFAULT_REMOTE)


def dvc_config(root: str | Path) -> dict[str, str]:
    """The workspace's DVC settings, {"core.remote": ..., "remote.NAME.url": ...}: every level's (system, global,
    the repository's .dvc/config, the user's .dvc/config.local), a later level's value winning."""
    config = {}
    for line in dvc(root, "config", "--list").stdout.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            config[key.strip()] = value.strip()
    return config


def commit(root: str | Path, stages: list[str]) -> None:
    """Record the stages' deps and outs (already written) in dvc.lock and the cache."""
    dvc(root, "commit", "--force", *stages)


def push(root: str | Path, stages: list[str]) -> dict:
    """Push the stages' outputs to the default remote; the remote they reached ({"name", "url"}).

    Raises PushError (remote, stages, dvc's message) when dvc cannot push them: the remote refuses the
    connection or the credentials, or the data cannot be written there.
    """
    proc = dvc(root, "push", *stages, check=False)
    if proc.returncode != 0:
        raise PushError(remote(root), stages, _dvc_message(proc))
    return remote(root)


def remote(root: str | Path) -> dict[str, str]:
    """The workspace's default remote, {"name", "url"}, the URL without any password it carries."""
    config = dvc_config(root)
    name = config.get("core.remote", "")
    url = config.get(f"remote.{name}.url") if name else None
    return {"name": name, "url": _without_password(url) if url else "(none: dvc remote default NAME)"}


def _without_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@", 1)))


def _dvc_message(proc: subprocess.CompletedProcess) -> str:
    """dvc's ERROR lines (its last output lines when it printed none)."""
    lines = [line.strip() for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
    errors = [line.removeprefix("ERROR: ") for line in lines if line.startswith("ERROR:")]
    return "; ".join(errors or lines[-3:]) or f"exit {proc.returncode}"


def lock_stages(root: str | Path) -> dict:
    """Every stage's dvc.lock entry ({} when there is no dvc.lock)."""
    path = Path(root) / "dvc.lock"
    if not path.is_file():
        return {}
    data = yaml.safe_load(path.read_text()) or {}
    return data.get("stages") or {}


def lock_entry(root: str | Path, stage: str) -> dict:
    """The dvc.lock entry of a stage ({} when it has none)."""
    return lock_stages(root).get(stage, {})


def out_hashes(root: str | Path, stage: str) -> dict[str, str]:
    """{output path: md5} of a stage as dvc.lock records it."""
    return {o["path"]: o.get("md5", "") for o in lock_entry(root, stage).get("outs", [])}


def window_summary(gen, window: dict) -> dict:
    """What generation `gen` trains on, before DVC records it: window_sha256, window_positions, window_shards."""
    from zero.shards import file_sha256

    return {
        "window_sha256": file_sha256(gen.window_file),
        "window_positions": sum(s["positions"] for s in window["shards"]),
        "window_shards": len(window["shards"]),
    }


def window_facts(gen, window: dict, summary: dict) -> dict:
    """What generation `gen` trains on, once its window is recorded in dvc.lock.

    Returns hashes ({generation name: md5 of its games in dvc.lock} for each generation
    in the window; `carried`: the md5 of the window generation 0 carried in), dvc_lock_sha256 and
    `summary`, window_summary's facts.
    """
    from flows.layout import Generation

    hashes = {}
    for g in sorted({s["generation"] for s in window["shards"]}):
        if g <= 0:  # carried into generation 0 from the workspace that trained its champion (flows.carry)
            gen0 = Generation(gen.root, gen.tag, 0)
            hashes["carried"] = out_hashes(gen.root, gen0.stage("init")).get(f"{gen0.rel}/carried", "")
            continue
        other = Generation(gen.root, gen.tag, g)
        hashes[other.name] = out_hashes(gen.root, other.stage("selfplay")).get(f"{other.rel}/games", "")
    return {"hashes": hashes, **summary, "dvc_lock_sha256": lock_sha256(gen.root)}


def lock_sha256(root: str | Path) -> str:
    path = Path(root) / "dvc.lock"
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""


def require_committed(code_root: str | Path | None = None) -> str:
    """The commit of the code, or LineageError naming the changed code files: what ships must have a
    lineage, and uncommitted code has none (its generations would record git_dirty: true)."""
    code_root = Path(code_root or Path(__file__).resolve().parent.parent)
    state = code_state(code_root)
    if state["git_dirty"] == "true":
        paths = [p for p in CODE_PATHS if (code_root / p).exists()]
        status = git(code_root, "status", "--porcelain", "--", *paths, check=False).stdout.splitlines()
        changed = ", ".join(line[3:] for line in status[:8]) + (" ..." if len(status) > 8 else "")
        raise LineageError(f"{code_root}: the code differs from commit {state['git_commit'][:12]} "
                           f"({changed or 'not a git checkout'}); a campaign ships champions and runs on "
                           f"committed code only: commit or stash first")
    return state["git_commit"]


def code_state(code_root: str | Path | None = None) -> dict[str, str]:
    """The git commit of the code, whether its tracked code paths differ from it, and the sha256 of the
    requirements.lock the libraries were installed from."""
    code_root = Path(code_root or Path(__file__).resolve().parent.parent)
    head = git(code_root, "rev-parse", "HEAD", check=False)
    commit_id = head.stdout.strip() if head.returncode == 0 else "none"
    paths = [p for p in CODE_PATHS if (code_root / p).exists()]
    status = git(code_root, "status", "--porcelain", "--", *paths, check=False)
    dirty = status.returncode != 0 or bool(status.stdout.strip()) or commit_id == "none"
    lock = code_root / "requirements.lock"  # the exact library versions `make install` installed
    lock_sha = hashlib.sha256(lock.read_bytes()).hexdigest() if lock.is_file() else ""
    return {"git_commit": commit_id, "git_dirty": str(dirty).lower(), "requirements_lock_sha256": lock_sha}


def main(argv: list[str] | None = None) -> int:
    """`python -m flows.lineage committed`: exit 1, naming the changed files, unless the code is committed."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m flows.lineage")
    ap.add_argument("check", choices=["committed"])
    ap.add_argument("--root", default=None, help="the code's checkout (default: this one)")
    args = ap.parse_args(argv)
    try:
        print(f"code at commit {require_committed(args.root)[:12]}: committed")
    except LineageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
