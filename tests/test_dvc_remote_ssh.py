"""A team's DVC remote over SSH (dvc-ssh), against a real OpenSSH server on 127.0.0.1.

Two generations of the smoke line made by the zero-generation flow, the workspace's default remote on the server:
generation 1's outputs are pushed there; generation 2's push is refused (the server is stopped), which fails its
run naming the remote, the stages and dvc's message and leaves `pushed: false` in its record; running it again
with the server back while the push task waits for its retry pushes them. A clean clone of the workspace then
pulls both generations, and `dvc repro` re-creates their hashes.
"""

from __future__ import annotations

import getpass
import json
import os
import re
import shutil
import socket
import subprocess
import threading
import time
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import pytest

from flows import lineage
from flows.layout import Workspace
from pipeline_support import SMOKE, TAG, free_port, isolate_env, make_workspace

SSHD = shutil.which("sshd") or ("/usr/sbin/sshd" if os.access("/usr/sbin/sshd", os.X_OK) else None)
SSH_KEYGEN = shutil.which("ssh-keygen")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (SSHD and SSH_KEYGEN), reason="OpenSSH's sshd and ssh-keygen are not installed "
                       "(apt-get install openssh-server openssh-client; make install does it as root)"),
]

SMALL = ["selfplay.games_per_shard=4", "train.steps=3", "gate.games=4"]
FIVE = ("selfplay", "dataset", "train", "gate", "champion")
STAGES_2 = [f"{s}@{TAG}-g0002" for s in FIVE]
GIT_USER = ["-c", "user.name=zero", "-c", "user.email=zero@localhost"]


class OpenSSH:
    """sshd on 127.0.0.1 at a free port, as the current user, with a temporary host key and one user key.

    `home` stands in for the client's home: its .ssh/known_hosts trusts the server's host key, as a teammate's
    would after their first `ssh` to the remote's host.
    """

    def __init__(self, base: Path):
        self.dir, self.home = base / "sshd", base / "home"
        (self.home / ".ssh").mkdir(parents=True)
        self.dir.mkdir()
        self.port, self.user, self.proc = free_port(), getpass.getuser(), None
        self.user_key = self.home / ".ssh" / "zero_ed25519"
        for key in (self.dir / "host_ed25519", self.user_key):
            subprocess.run([SSH_KEYGEN, "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
        shutil.copy(f"{self.user_key}.pub", self.dir / "authorized_keys")
        host_key = (self.dir / "host_ed25519.pub").read_text().split()[:2]
        (self.home / ".ssh" / "known_hosts").write_text(f"[127.0.0.1]:{self.port} {' '.join(host_key)}\n")
        self.config = self.dir / "sshd_config"
        self.config.write_text(f"""\
ListenAddress 127.0.0.1
Port {self.port}
HostKey {self.dir / "host_ed25519"}
PidFile {self.dir / "sshd.pid"}
AuthorizedKeysFile {self.dir / "authorized_keys"}
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
Subsystem sftp internal-sftp
""")

    def url(self, path: Path) -> str:
        return f"ssh://{self.user}@127.0.0.1:{self.port}{path}"

    def start(self) -> None:
        if os.geteuid() == 0:  # sshd started by root wants its privilege separation directory
            os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        log = open(self.dir / "sshd.log", "ab")
        self.proc = subprocess.Popen([SSHD, "-f", str(self.config), "-D", "-e"], stdout=log, stderr=log,
                                     stdin=subprocess.DEVNULL)
        log.close()
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sshd exited {self.proc.returncode}: {(self.dir / 'sshd.log').read_text()}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.1)
        raise RuntimeError(f"sshd not listening on 127.0.0.1:{self.port} after 30 s")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
        self.proc = None


def dvc(root: Path, *args: str) -> str:
    return lineage.dvc(root, *args).stdout


def generation(root: Path, g: int):
    return Workspace(root).generation(TAG, g)


def on_remote(root: Path, remote_dir: Path, stage: str) -> bool:
    """Whether a stage's (single) output is on the remote, in DVC's layout there: files/md5/<2 hex>/<30 hex>."""
    (md5,) = lineage.out_hashes(root, stage).values()
    return (remote_dir / "files" / "md5" / md5[:2] / md5[2:]).is_file()


def _post(api: str, path: str, body: dict) -> list[dict]:
    req = urllib.request.Request(f"{api}/{path}", data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def task_runs(api: str, name: str) -> list[dict]:
    """Each task run named `name`-...: {"id", "states": [state names, oldest first]}."""
    out = []
    for run in _post(api, "task_runs/filter", {"task_runs": {"name": {"like_": name}}}):
        with urllib.request.urlopen(f"{api}/task_run_states/?task_run_id={run['id']}", timeout=10) as r:
            states = sorted(json.loads(r.read()), key=lambda state: state["timestamp"])
        out.append({"id": run["id"], "states": [state["name"] for state in states]})
    return out


def task_log(api: str, task_run_id: str, timeout: float = 30) -> str:
    """The task run's log as the Prefect server holds it (its lines reach the server in batches)."""
    deadline, text = time.time() + timeout, ""
    while time.time() < deadline and "Finished in state" not in text:
        logs = _post(api, "logs/filter", {"logs": {"task_run_id": {"any_": [task_run_id]}}, "sort": "TIMESTAMP_ASC"})
        text = "\n".join(entry["message"] for entry in logs)
        time.sleep(0.5)
    return text


def start_when_a_push_awaits_its_retry(server: OpenSSH, api: str, timeout: float = 300) -> threading.Thread:
    """A thread that starts the server as soon as a dvc-push task run has been refused and awaits its retry."""
    def watch():
        deadline = time.time() + timeout
        while time.time() < deadline:
            if any(run["states"][-1] == "AwaitingRetry" for run in task_runs(api, "dvc-push")):
                server.start()
                return
            time.sleep(0.2)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


@pytest.fixture(scope="module")
def line(harness, tmp_path_factory):
    """The module's scenario, run once; the tests check what it left.

    The team's setup: ZERO_DVC_REMOTE names the remote before the workspace's first `dvc init`, and the key is
    the teammate's own, in .dvc/config.local (`dvc remote modify --local`).
    """
    import flows.generation as generation_flow
    from prefect.settings import PREFECT_API_URL

    base = tmp_path_factory.mktemp("ssh-remote")
    server, remote_dir = OpenSSH(base), base / "remote"
    server.start()
    root = make_workspace(base / "ws")
    seen = SimpleNamespace(root=root, server=server, remote_dir=remote_dir, url=server.url(remote_dir))
    with pytest.MonkeyPatch.context() as mp:
        isolate_env(mp, root)
        mp.setenv("HOME", str(server.home))
        mp.setenv("ZERO_DVC_REMOTE", seen.url)
        lineage.ensure_dvc(root)
        dvc(root, "remote", "modify", "--local", "local", "keyfile", str(server.user_key))
        try:
            seen.first = generation_flow.zero_generation(params_file=SMOKE, overrides=SMALL, workdir=str(root))

            server.stop()  # nothing listens on the remote's port now
            with pytest.MonkeyPatch.context() as fast:  # the same task, retried once a second later (not 10 s,
                fast.setattr(generation_flow, "push_task",  # 1 min and 5 min)
                             generation_flow.push_task.with_options(retries=1, retry_delay_seconds=1))
                with pytest.raises(lineage.PushError) as refused:
                    generation_flow.zero_generation(params_file=SMOKE, overrides=SMALL, workdir=str(root))
            seen.refused = refused.value
            seen.refused_record = json.loads(generation(root, 2).record_file.read_text())
            seen.candidate_was_on_remote = on_remote(root, remote_dir, f"train@{TAG}-g0002")

            api = PREFECT_API_URL.value()
            watcher = start_when_a_push_awaits_its_retry(server, api)
            seen.second = generation_flow.zero_generation(params_file=SMOKE, overrides=SMALL, workdir=str(root),
                                                          generation=2)
            watcher.join(timeout=5)
            seen.push_runs = task_runs(api, "dvc-push")
            seen.logs = {run["id"]: task_log(api, run["id"]) for run in seen.push_runs if "AwaitingRetry" in run["states"]}
            yield seen
        finally:
            server.stop()


def test_the_flow_pushes_its_generations_over_ssh_and_records_where(line):
    for g, record in ((1, line.first), (2, line.second)):
        remote = json.loads(generation(line.root, g).record_file.read_text())["remote"]
        assert remote == record["remote"]
        assert remote["pushed"] is True and "error" not in remote
        assert remote["name"] == "local" and remote["url"] == line.url
        assert remote["stages"] == ([f"init@{TAG}"] if g == 1 else []) + [f"{s}@{TAG}-g{g:04d}" for s in FIVE]
    assert "in sync" in dvc(line.root, "status", "--cloud")  # every output dvc.lock records is on the server
    assert on_remote(line.root, line.remote_dir, f"train@{TAG}-g0002")


def test_a_refused_push_fails_the_run_naming_remote_stages_and_dvcs_message_and_the_record_says_so(line):
    stages = STAGES_2
    message = str(line.refused)
    assert message.startswith(f"dvc push of {', '.join(stages)} to remote 'local' ({line.url}) failed: ")
    assert f"('127.0.0.1', {line.server.port})" in message  # dvc's own message: the connection it could not make
    remote = line.refused_record["remote"]
    assert remote["pushed"] is False and remote["stages"] == stages and remote["error"] == message
    assert line.refused_record["generation"] == 2 and not line.candidate_was_on_remote
    assert line.refused_record["mlflow_run_id"] == line.second["mlflow_run_id"]  # the same generation, not redone


def test_the_retry_pushes_once_the_server_is_back(line):
    assert line.server.proc is not None  # started when the push was refused
    retried = [run for run in line.push_runs if run["states"][-1] == "Completed" and "AwaitingRetry" in run["states"]]
    assert len(retried) == 1  # the second run's push: refused, awaiting its retry, then completed
    log = line.logs[retried[0]["id"]]
    assert f"dvc push of {', '.join(STAGES_2)} to remote 'local' ({line.url}) failed" in log  # named in the flow run
    assert "Retry 1/3 will start 10 second(s) from now" in log
    # the first run's final push: refused, retried once, refused again, and Failed
    exhausted = [run for run in line.push_runs if run["states"][-1] == "Failed" and "AwaitingRetry" in run["states"]]
    assert len(exhausted) == 1 and "Retries are exhausted" in line.logs[exhausted[0]["id"]]


def test_a_clean_clone_pulls_the_generations_and_repro_gives_the_recorded_hashes(line, tmp_path):
    root = line.root
    tracked = ["dvc.yaml", ".dvcignore", SMOKE, "generations.yaml", "dvc.lock", ".dvc/config", ".dvc/.gitignore"]
    tracked += [str(p.relative_to(root)) for pattern in ("gens/*/*/params.yaml", "gens/*/*/generation.json",
                                                          "gens/*/*/.gitignore") for p in root.glob(pattern)]
    subprocess.run(["git", "add", *tracked], cwd=root, check=True)
    subprocess.run(["git", *GIT_USER, "commit", "-qm", "generations 1-2 of the smoke line"], cwd=root, check=True)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(root), str(clone)], check=True)
    assert not (clone / "gens" / TAG / "g0002" / "champion.pt").exists()
    dvc(clone, "remote", "modify", "--local", "local", "keyfile", str(line.server.user_key))

    dvc(clone, "pull")
    for g in (1, 2):
        for name in ("games", "window.json", "candidate.pt", "gate", "champion.pt"):
            assert (generation(clone, g).dir / name).exists()
    assert "up to date" in dvc(clone, "status").lower()
    out = dvc(clone, "repro")
    assert "Running stage" not in out and "up to date" in out.lower()  # nothing is made again

    recorded = (clone / "dvc.lock").read_text()
    stages = [f"{s}@{TAG}-g0002" for s in FIVE]
    out = dvc(clone, "repro", "--force", "--single-item", *stages)
    assert re.findall(r"Running stage '([^']+)'", out) == stages
    assert (clone / "dvc.lock").read_text() == recorded  # the same hashes as the flow recorded
