"""`make mlflow-ui` checked as a person sees it: how soon it serves, and what a browser shows.

    python infra/mlflow_ui_check.py --root WS                      # time `make mlflow-ui` on WS's mlflow.db, then the browser
    python infra/mlflow_ui_check.py --root WS --screenshots docs/mlflow   # and keep the screenshots
    python infra/mlflow_ui_check.py --root WS --no-browser -- .venv/bin/mlflow ui --port {port} \\
        --backend-store-uri {store}                                # time another command instead

WS is a workspace with generations of a line (its mlflow.db). The time is from the command's start to
the first HTTP 200 from its page, with the number of processes it started. The browser is Debian's
chromium-headless-shell (apt-get install chromium-headless-shell) driven by Playwright for Python
(pip install playwright); it checks that the runs list opens with the generation's metrics as columns,
that a run opens in the model-training view, and that the home page shows no usage-data notice.
Exits 1 naming each check that failed.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = ("/usr/bin/chromium-headless-shell", "/usr/lib/chromium/chromium-headless-shell",
            "/usr/bin/chromium", "/usr/bin/chromium-browser")
GENAI_ONLY = ("Evaluation runs", "Judges")  # entries of the experiment sidebar in the GenAI view only
NOTICE = "collects usage data"


def chromium() -> str | None:
    """A Chromium binary for Playwright's executable_path: CHROMIUM_PATH, else the first of CHROMIUM found."""
    found = [os.environ.get("CHROMIUM_PATH", ""), *CHROMIUM]
    return next((p for p in found if p and os.access(p, os.X_OK)), None)


def time_to_serve(cmd: list[str], url: str, env: dict, timeout: float = 300) -> tuple[dict, subprocess.Popen]:
    """Start cmd in a process group of its own and wait for the first 200 from url.

    Returns ({seconds, processes (the most alive at once), cpu_s (the CPU time of those alive then)}, the
    process). The CPU time does not depend on how busy the machine is; the seconds do.
    """
    import psutil

    started = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    most = 0
    while time.monotonic() - started < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode} before serving {url}")
        try:
            tree = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
            most = max(most, len(tree))
        except psutil.NoSuchProcess:
            tree = []
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    seconds = time.monotonic() - started
                    cpu = sum(sum(p.cpu_times()[:2]) for p in tree if p.is_running())
                    return {"seconds": seconds, "processes": most, "cpu_s": cpu}, proc
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.2)
    stop(proc)
    raise RuntimeError(f"{' '.join(cmd)} did not serve {url} within {timeout:.0f} s")


def stop(proc: subprocess.Popen) -> None:
    """End the server's process group (the one it was started in)."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
    except ProcessLookupError:
        return
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def line_experiment(root: Path) -> tuple[str, str, list[str]]:
    """(experiment id, its runs link, the columns the link should show) of the workspace's one line."""
    from flows.tracking import GENERATION_COLUMNS, Tracker, runs_url

    import mlflow

    client = mlflow.MlflowClient(f"sqlite:///{root / 'mlflow.db'}")
    found = [e for e in client.search_experiments() if "zero.game" in e.tags]
    if len(found) != 1:
        raise SystemExit(f"{root}/mlflow.db holds {len(found)} zero lines; the check reads one")
    tracker = Tracker(root, found[0].tags["zero.game"], uri=f"sqlite:///{root / 'mlflow.db'}")
    return tracker.experiment_id, runs_url("{ui}", tracker.experiment_id), [c for _, c in GENERATION_COLUMNS]


def screenshot(page, path: Path) -> None:
    """The page as a small PNG for docs (a palette of 64 colours: a UI's flat colours keep their look)."""
    from PIL import Image

    page.screenshot(path=str(path))
    Image.open(path).convert("RGB").quantize(64).save(path, optimize=True)


def browser_checks(ui: str, runs_link: str, columns: list[str], shots: Path | None) -> list[str]:
    """What the browser shows; the failed checks' descriptions (none when all pass)."""
    from playwright.sync_api import sync_playwright

    failed = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), headless=True)
        page = browser.new_page(viewport={"width": 1600, "height": 900})  # a fresh profile: a new user
        page.goto(runs_link)
        page.get_by_role("columnheader").first.wait_for(timeout=60_000)
        page.get_by_text(columns[0], exact=True).first.wait_for(timeout=30_000)
        headers = page.get_by_role("columnheader").all_inner_texts()
        missing = [c for c in columns if not any(c in h for h in headers)]
        if missing:
            failed.append(f"the runs list lacks the columns {missing} (it shows {headers})")
        if shots:
            screenshot(page, shots / "runs.png")
        run = page.locator("a[href*='/runs/']").filter(has_text="-g0").first
        run_name = run.inner_text()
        run.click()
        page.get_by_text("Overview", exact=True).first.wait_for(timeout=60_000)
        page.wait_for_timeout(2000)
        text = page.inner_text("body")
        genai = [w for w in GENAI_ONLY if w in text]
        if genai or run_name not in text:
            failed.append(f"the run {run_name} opened in the GenAI view (its page shows {genai})")
        if shots:
            screenshot(page, shots / "run.png")
        page.goto(ui + "/#/")
        page.get_by_text("Welcome to MLflow").first.wait_for(timeout=60_000)
        page.wait_for_timeout(1000)
        if NOTICE in page.inner_text("body"):
            failed.append(f"the home page shows MLflow's usage-data notice ('{NOTICE}')")
        browser.close()
    return failed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--root", type=Path, required=True, help="a workspace with generations (its mlflow.db)")
    p.add_argument("--port", type=int, default=5055)
    p.add_argument("--screenshots", type=Path, help="a folder for runs.png and run.png")
    p.add_argument("--no-browser", action="store_true", help="only time the start")
    p.add_argument("cmd", nargs="*", help="the command to time instead of `make mlflow-ui` ({port}, {store})")
    args = p.parse_args(argv)
    root = args.root.resolve()
    store = f"sqlite:///{root / 'mlflow.db'}"
    ui = f"http://127.0.0.1:{args.port}"
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"}  # as the Makefile and infra/env.sh export it
    # `-o install`: the install is not what is timed (`make install` first)
    cmd = [c.format(port=args.port, store=store) for c in args.cmd] or \
        ["make", "--no-print-directory", "-o", "install", "mlflow-ui", f"MLFLOW_TRACKING_URI={store}",
         f"MLFLOW_PORT={args.port}"]
    started, proc = time_to_serve(cmd, ui + "/", env)
    try:
        print(f"{' '.join(cmd)}: HTTP 200 from {ui}/ after {started['seconds']:.1f} s "
              f"({started['cpu_s']:.1f} s of CPU, {started['processes']} processes; load average "
              f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
        if args.no_browser:
            return 0
        if not chromium():
            raise SystemExit("no Chromium: apt-get install chromium-headless-shell (or set CHROMIUM_PATH)")
        _, link, columns = line_experiment(root)
        if args.screenshots:
            args.screenshots.mkdir(parents=True, exist_ok=True)
        failed = browser_checks(ui, link.format(ui=ui), columns, args.screenshots)
    finally:
        stop(proc)
    for f in failed:
        print(f"FAILED: {f}")
    if not failed:
        print("the runs list shows " + ", ".join(columns) + "; a run opens in the model-training view; no usage notice")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    sys.exit(main())
