"""The local services: a Prefect server and the process serving `zero-generation/local`.

Everything stays in the workspace and on the loopback interface: PREFECT_HOME is
`<root>/.prefect` (its SQLite database, logs, pid files and persisted task
results), the server binds 127.0.0.1, analytics are off. `prefect_env` is the
environment every command of the pipeline runs under (the Makefile exports the
same values, and infra/env.sh, which `make install` has the venv's activate
script source, exports them for the CLIs by hand).

A server is tied to its workspace: `make up` adopts a server on its port only
if that server's PREFECT_HOME is this workspace's, and names the other
workspace otherwise.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from flows import liveness

DEFAULT_PORT = 4200
DEPLOYMENT = "zero-generation/local"


class ServiceError(RuntimeError):
    """A local service would not start, or is not what it should be."""


class ServerDown(ServiceError):
    """No Prefect server answers at the workspace's API URL."""


def prefect_env(root: str | Path, port: int | None = None) -> dict[str, str]:
    """PREFECT_* and tool settings for a workspace (explicit environment values win)."""
    root = Path(root).resolve()
    port = int(port or os.environ.get("ZERO_PREFECT_PORT") or DEFAULT_PORT)
    home = os.environ.get("PREFECT_HOME") or str(root / ".prefect")
    return {
        "PREFECT_HOME": home,
        "PREFECT_API_URL": os.environ.get("PREFECT_API_URL") or f"http://127.0.0.1:{port}/api",
        "PREFECT_SERVER_API_HOST": "127.0.0.1",
        "PREFECT_SERVER_API_PORT": str(port),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_RUNNER_POLL_FREQUENCY": os.environ.get("PREFECT_RUNNER_POLL_FREQUENCY", "5"),
        "PREFECT_FLOWS_HEARTBEAT_FREQUENCY": os.environ.get("PREFECT_FLOWS_HEARTBEAT_FREQUENCY",
                                                            str(liveness.HEARTBEAT_S)),
        "MLFLOW_TRACKING_URI": os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{root / 'mlflow.db'}",
        "MLFLOW_DISABLE_TELEMETRY": "true",
        "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false",
        "DVC_NO_ANALYTICS": "1",
        "DO_NOT_TRACK": "1",
    }


def apply_env(root: str | Path, port: int | None = None) -> dict[str, str]:
    env = prefect_env(root, port)
    os.environ.update(env)
    return env


def _bin(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def healthy(api_url: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(f"{api_url.rstrip('/')}/health", timeout=timeout) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def server_home(api_url: str, timeout: float = 5.0) -> str | None:
    """The PREFECT_HOME of the server answering at api_url (its /admin/settings), or None if it does not say."""
    try:
        with urllib.request.urlopen(f"{api_url.rstrip('/')}/admin/settings", timeout=timeout) as r:
            return json.loads(r.read()).get("home")
    except (urllib.error.URLError, OSError, ValueError, AttributeError):
        return None


def _port_free(port: int) -> bool:
    import socket

    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _pid_alive(pid_file: Path) -> int | None:
    """The pid in pid_file if that process is alive (a killed process nobody has reaped yet is not)."""
    from flows.liveness import ProcessId

    try:
        pid = int(pid_file.read_text().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    return None if ProcessId.of(pid).gone() else pid


def _spawn(cmd: list[str], log: Path, env: dict, cwd: Path, pid_file: Path) -> subprocess.Popen:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            cmd, cwd=cwd, env={**os.environ, **env}, stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )
    pid_file.write_text(str(proc.pid))
    return proc


class Services:
    """Start, find and stop the Prefect server and the serve process of one workspace."""

    def __init__(self, root: str | Path, port: int | None = None):
        self.root = Path(root).resolve()
        self.env = prefect_env(self.root, port)
        self.home = Path(self.env["PREFECT_HOME"])
        self.api_url = self.env["PREFECT_API_URL"]
        self.ui_url = self.api_url.rsplit("/api", 1)[0]

    # --- the Prefect server --------------------------------------------------------------

    @property
    def server_pid_file(self) -> Path:
        return self.home / "server.pid"

    def start_server(self, timeout: float = 120) -> None:
        """Start `prefect server start` on 127.0.0.1 in the background unless this workspace's answers already.

        Raises ServiceError naming the other workspace when the port holds another workspace's server."""
        if healthy(self.api_url):
            self.require_own_server()
            return
        self.home.mkdir(parents=True, exist_ok=True)
        port = self.env["PREFECT_SERVER_API_PORT"]
        proc = _spawn(
            [_bin("prefect"), "server", "start", "--host", "127.0.0.1", "--port", port],
            self.home / "server.log", self.env, self.root, self.server_pid_file,
        )
        self._wait(lambda: healthy(self.api_url), proc, timeout, "Prefect server", self.home / "server.log")

    def require_own_server(self) -> None:
        """ServiceError unless the server at the API URL keeps its state in this workspace's PREFECT_HOME."""
        home = server_home(self.api_url)
        if home is None or Path(home).resolve() == self.home.resolve():
            return
        port = int(self.env["PREFECT_SERVER_API_PORT"])
        other = Path(home).parent if Path(home).name == ".prefect" else Path(home)
        free = next(p for p in range(port + 1, port + 1000) if _port_free(p))
        raise ServiceError(
            f"port {port} holds the Prefect server of another workspace, {other} (PREFECT_HOME={home}); "
            f"this workspace is {self.root}. Stop that server (`make down` in {other}), or give this "
            f"workspace ports of its own: `make up PREFECT_PORT={free} MLFLOW_PORT={free + 800}`, "
            f"then `. .venv/bin/activate` again")

    def require_server(self) -> None:
        """ServerDown, saying to run `make up`, unless a server answers at the workspace's API URL."""
        if not healthy(self.api_url):
            raise ServerDown(f"no Prefect server answers at {self.ui_url} (PREFECT_HOME={self.home}): "
                             f"start it with `make up` in {self.root}")

    # --- the serve process ---------------------------------------------------------------

    @property
    def serve_pid_file(self) -> Path:
        return self.home / "serve.pid"

    def serving(self) -> bool:
        return _pid_alive(self.serve_pid_file) is not None

    def start_serve(self, timeout: float = 120, ray_address: str | None = None) -> None:
        """Serve the deployments (python -m flows.serve serve) in the background; wait until polled."""
        if self.serving():
            return
        started = time.time()
        cmd = [sys.executable, "-m", "flows.serve", "--root", str(self.root), "serve"]
        if ray_address:
            cmd += ["--ray", ray_address]
        proc = _spawn(cmd, self.home / "serve.log", self.env, self.root, self.serve_pid_file)
        self._wait(lambda: self.deployment_ready(started), proc, timeout, "serve process", self.home / "serve.log")

    def deployment_ready(self, since: float = 0.0) -> bool:
        """True once the runner has registered zero-generation/local and polled it since `since`."""
        d = self.deployment()
        if not d or not d.get("last_polled"):
            return False
        from datetime import datetime

        return datetime.fromisoformat(d["last_polled"].replace("Z", "+00:00")).timestamp() >= since

    def deployment(self, name: str = DEPLOYMENT) -> dict | None:
        """The deployment as the server's REST API returns it, or None."""
        import json

        try:
            with urllib.request.urlopen(f"{self.api_url}/deployments/name/{name}", timeout=5) as r:
                return json.loads(r.read())
        except (urllib.error.URLError, OSError, ValueError):
            return None

    # --- both ------------------------------------------------------------------------------

    def up(self, ray_address: str | None = None) -> None:
        self.start_server()
        self.start_serve(ray_address=ray_address)

    def down(self) -> list[str]:
        stopped = []
        for name, pid_file in (("serve", self.serve_pid_file), ("server", self.server_pid_file)):
            pid = _pid_alive(pid_file)
            if pid is None:
                pid_file.unlink(missing_ok=True)
                continue
            try:
                os.killpg(pid, signal.SIGTERM)
            except OSError:
                os.kill(pid, signal.SIGTERM)
            for _ in range(100):
                if _pid_alive(pid_file) is None:
                    break
                time.sleep(0.2)
            else:
                os.killpg(pid, signal.SIGKILL)
            pid_file.unlink(missing_ok=True)
            stopped.append(f"{name} (pid {pid})")
        return stopped

    def _wait(self, ready, proc: subprocess.Popen, timeout: float, what: str, log: Path) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if ready():
                return
            if proc.poll() is not None:
                tail = log.read_text()[-3000:] if log.is_file() else ""
                raise ServiceError(f"{what} exited with code {proc.returncode}; end of {log}:\n{tail}")
            time.sleep(1)
        raise ServiceError(f"{what} did not become ready within {timeout:.0f}s; see {log}")


# --- the venv's activate script ----------------------------------------------------------------

HOOK_BEGIN = "# >>> zero: this workspace's settings (infra/env.sh), written by `make install`"
HOOK_END = "# <<< zero"
PORTS_MK = "zero-ports.mk"  # in the venv: the ports the Makefile reads (PREFECT_PORT ?= ..., MLFLOW_PORT ?= ...)
DEACTIVATE_DEF = "deactivate () {\n"
DEACTIVATE_HOOK = '    [ -z "${_ZERO_ENV_UNDO:-}" ] || zero_env_off  # zero: the settings of infra/env.sh undone\n'


def activate_hook(root: str | Path, prefect_port: int, mlflow_port: int) -> str:
    """The lines that make `. .venv/bin/activate` source infra/env.sh for this workspace and its ports."""
    root = Path(root).resolve()
    env_sh = shlex.quote(str(root / "infra" / "env.sh"))
    return (f"{HOOK_BEGIN}\n"
            f"if [ -f {env_sh} ]; then\n"
            f"    _zero_root={shlex.quote(str(root))} _zero_prefect_port={int(prefect_port)}"
            f" _zero_mlflow_port={int(mlflow_port)}\n"
            f"    . {env_sh}\n"
            f"fi\n"
            f"{HOOK_END}\n")


def install_activate_hook(root: str | Path, venv: str | Path, prefect_port: int, mlflow_port: int) -> bool | None:
    """Have `<venv>/bin/activate` (bash, zsh, sh) carry the workspace's settings, and its `deactivate` undo them;
    `<venv>/zero-ports.mk` gives the Makefile the same ports.

    Replaces an earlier hook (other ports, another root). Returns True if a file changed, False if both
    were already so, None if there is no such script (no venv there)."""
    script = Path(root).resolve() / venv / "bin" / "activate"
    if not script.is_file():
        return None
    old = script.read_text()
    text = old.replace(DEACTIVATE_HOOK, "")
    begin = text.find(HOOK_BEGIN)
    if begin >= 0:
        end = text.find(HOOK_END, begin)
        if end < 0:
            raise ServiceError(f"{script}: zero's settings start ({HOOK_BEGIN!r}) but do not end ({HOOK_END!r})")
        text = text[:begin].rstrip("\n") + "\n" + text[end + len(HOOK_END):].lstrip("\n")
    if DEACTIVATE_DEF not in text:
        raise ServiceError(f"{script} defines no `deactivate () {{`: not a venv activate script zero knows")
    text = text.replace(DEACTIVATE_DEF, DEACTIVATE_DEF + DEACTIVATE_HOOK, 1)
    text = text.rstrip("\n") + "\n\n" + activate_hook(root, prefect_port, mlflow_port)
    ports = script.parent.parent / PORTS_MK
    ports_text = (f"# the workspace's ports (make install PREFECT_PORT=... MLFLOW_PORT=... rewrites this file)\n"
                  f"PREFECT_PORT ?= {int(prefect_port)}\nMLFLOW_PORT ?= {int(mlflow_port)}\n")
    changed = False
    for path, new in ((ports, ports_text), (script, text)):
        if path.is_file() and path.read_text() == new:
            continue
        tmp = path.with_name(path.name + ".zero-tmp")
        tmp.write_text(new)
        os.chmod(tmp, script.stat().st_mode if path == script else 0o644)
        os.replace(tmp, path)
        changed = True
    return changed
