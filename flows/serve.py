"""Serve and drive the pipeline: `python -m flows.serve <command>` (the Makefile's entry point).

    serve   serve the deployments zero-generation/local, zero-loop/local and zero-ladder/local (blocks)
    up      dvc init if needed, start the Prefect server and the serve process in the background; the server
            gets the automation that marks a served run Crashed once its heartbeats stop
    down    stop both
    check   validate a params file (and overrides) without starting anything; --line-free: and refuse, at
            once, when a run holds its line
    run     start zero-generation/local and wait for it; a run whose process is gone ends the wait, Crashed;
            Ctrl-C cancels the run (its finished tasks are kept for a retry)
    retry   put a failed, crashed or cancelled flow run back on the schedule; it resumes from its finished tasks
    cancel  cancel a flow run; one whose process is gone is Cancelled at once
    reap    mark every Running, Pending or Cancelling run whose process is provably gone Crashed (Cancelled)
    where   print where to look: Prefect UI, mlflow ui, the champion, dvc repro, and the commands by hand
    activate have the venv's activate script carry the workspace's settings and ports (make install runs it)

A command that needs the Prefect server and finds none says to run `make up`,
in one line, and exits 3; Ctrl-C ends any command without a traceback.

Prefect names a deployment <flow name>/<deployment name>; the flow is
`zero-generation` and this serves it under the name `local`, so it is started
with `prefect deployment run zero-generation/local` (a bare
`prefect deployment run zero-generation` is refused by Prefect).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from flows.servers import DEPLOYMENT, ServiceError, Services, apply_env, install_activate_hook

FINAL = ("COMPLETED", "FAILED", "CRASHED", "CANCELLED")
SERVER_DOWN = 3  # the exit code of a command that needs the Prefect server and finds none (or not its own)
INTERRUPTED = 130  # Ctrl-C, as a shell reports it


def by_hand(params: str, mlflow_port: int) -> list[str]:
    """The commands `make where` prints for use by hand, each working as printed after `. .venv/bin/activate`."""
    return [
        f"prefect deployment run {DEPLOYMENT} --param params_file={params}",
        "prefect flow-run cancel <flow-run-id>",
        "python -m flows.serve retry <flow-run-id>",
        "dvc repro",
        f"mlflow ui --port {mlflow_port}",
    ]


def _reap(client) -> None:
    """Mark the runs whose process is provably gone, saying so."""
    from flows.liveness import reap

    for run_id, name, state in reap(client):
        print(f"flow run {name} ({run_id}): its process is gone; marked {state}. "
              f"Resume it with `python -m flows.serve retry {run_id}`")


def cmd_serve(args) -> int:
    apply_env(args.root, args.port)
    os.chdir(args.root)
    from prefect.client.orchestration import get_client

    from flows.liveness import SERVE, record_run

    with get_client(sync_client=True) as client:  # runs left behind by a killed serve process
        _reap(client)
    record_run(SERVE)  # answers for the runs it starts until they record themselves
    from prefect import serve

    from flows.generation import zero_generation, zero_loop
    from flows.ladder import zero_ladder

    gen_flow, loop_flow = zero_generation, zero_loop
    if args.ray:
        from flows.cluster import on_ray

        gen_flow = on_ray(zero_generation, args.ray)
    from flows.request import DEFAULT_PARAMS, DEFAULT_PARAMS_NOTE

    defaults = {"workdir": str(Path(args.root).resolve()), "params_file": DEFAULT_PARAMS}
    serve(
        gen_flow.to_deployment(name="local", parameters=defaults,
                               description=f"One best-player generation: self-play, train, gate, promote. Without "
                                           f"`--param params_file=...` it runs {DEFAULT_PARAMS}, "
                                           f"{DEFAULT_PARAMS_NOTE}."),
        loop_flow.to_deployment(name="local", parameters=defaults,
                                description="zero-generation back to back until cancelled (or `generations` times)."),
        zero_ladder.to_deployment(name="local", parameters=defaults,
                                  description="The champion against GNU Go and fixed opponents; ratings of the line."),
    )
    return 0


def cmd_up(args) -> int:
    from flows import lineage

    apply_env(args.root, args.port)
    services = Services(args.root, args.port)
    services.start_server()  # refuses another workspace's server on the port, naming it, before anything else
    lineage.ensure_dvc(args.root)
    print(f"Prefect server: {services.ui_url} (PREFECT_HOME={services.home})")
    from prefect.client.orchestration import get_client

    from flows.liveness import ZOMBIES, ensure_zombie_automation, zombie_window_s

    with get_client(sync_client=True) as client:
        _reap(client)
    if ensure_zombie_automation() != "kept":  # the server marks a served run Crashed once its heartbeats stop
        print(f"automation {ZOMBIES!r}: after {zombie_window_s():.0f} s without a heartbeat")
    services.start_serve(ray_address=args.ray)
    print(f"serving {DEPLOYMENT} and zero-loop/local (log: {services.home / 'serve.log'})")
    return 0


def cmd_down(args) -> int:
    stopped = Services(args.root, args.port).down()
    print("stopped " + ", ".join(stopped) if stopped else "nothing was running")
    return 0


def _refuse_busy(args, params) -> bool:
    """True, saying which run to watch or cancel, when a flow run holds the params' line (read from its lock)."""
    from flows.request import busy_advice, line_holder

    holder = line_holder(Path(args.root), params.game.tag)
    if holder is None:
        return False
    print(f"{args.params}: refused, no run started: " + busy_advice(params.game.tag, holder,
                                                                    Services(args.root, args.port).api_url),
          file=sys.stderr)
    return True


def cmd_check(args) -> int:
    from flows.request import runnable_here
    from zero.config import ConfigError, load_params
    from zero.inference import arithmetic

    path = Path(args.params)
    try:
        params = load_params(path if path.is_absolute() else Path(args.root) / path, args.set)
        if args.line_free and _refuse_busy(args, params):
            return 1
        params = runnable_here(params)
    except ConfigError as e:
        print(e, file=sys.stderr)
        return 2
    math = arithmetic(params)
    print(f"{args.params}: ok ({params.game.tag}, params hash {params.digest()[:12]}; on {math['cpu']}: "
          f"self-play {math['selfplay']}, training {math['train']}, gate {math['gate']})")
    return 0


def cmd_retry(args) -> int:
    apply_env(args.root, args.port)
    Services(args.root, args.port).require_server()
    from prefect.client.orchestration import get_client
    from prefect.states import AwaitingRetry

    from flows.liveness import mark_gone, process_gone

    with get_client(sync_client=True) as client:
        run = client.read_flow_run(args.flow_run_id)
        gone = process_gone(run)
        if gone is not None:
            print(f"flow run {run.name}: its process ({gone.text()}) is gone; marked {mark_gone(client, run, gone)}")
            run = client.read_flow_run(args.flow_run_id)
        if not (run.state and (run.state.is_failed() or run.state.is_crashed() or run.state.is_cancelled())):
            print(f"flow run {run.name} is {run.state.name if run.state else 'unknown'}; only a failed, "
                  f"crashed or cancelled run can be retried", file=sys.stderr)
            return 1
        client.set_flow_run_state(run.id, AwaitingRetry(), force=True)
    services = Services(args.root, args.port)
    if not services.serving():
        services.up()
        print(f"started the serve process (log: {services.home / 'serve.log'})")
    print(f"flow run {run.name} ({run.id}) is scheduled again; the serve process picks it up")
    return 0


def cmd_cancel(args) -> int:
    """Cancel a run; the serve process stops its process, or, if that is gone, the run is Cancelled here."""
    apply_env(args.root, args.port)
    Services(args.root, args.port).require_server()
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        run = client.read_flow_run(args.flow_run_id)
        if run.state and run.state.type.value in FINAL:
            print(f"flow run {run.name} is {run.state.name} already")
            return 0
        run = _cancel(client, run, args.timeout)
    print(f"flow run {run.name} is {run.state.name}")
    return 0 if run.state.type.value in FINAL else 1


def _cancel(client, run, timeout: float):
    """Ask the serve process to stop the run and wait for it; a run whose process is gone is Cancelled here."""
    from prefect.states import Cancelling

    from flows.liveness import mark_gone, process_gone

    gone = process_gone(run)
    if gone is None:
        client.set_flow_run_state(run.id, Cancelling(), force=True)
        run = _wait(client, run.id, timeout, until=FINAL)
        gone = process_gone(run)
    if gone is not None:  # nobody will stop it: it is Cancelled here
        client.set_flow_run_state(run.id, Cancelling(), force=True)
        mark_gone(client, client.read_flow_run(run.id), gone)
        run = client.read_flow_run(run.id)
    return run


def _wait(client, run_id, timeout: float, until=FINAL, interval: float = 2.0):
    import time

    deadline = time.time() + timeout
    while True:
        run = client.read_flow_run(run_id)
        if run.state.type.value in until or time.time() > deadline:
            return run
        time.sleep(interval)


def cmd_run(args) -> int:
    """Start zero-generation/local and wait for its end; a run whose process is gone ends the wait too.

    A line another run holds is refused at once, before a flow run is made. Ctrl-C cancels the run: in a
    terminal it stops what was started, rather than leave an hour of work going on unseen; the tasks it
    finished are kept, so `retry` resumes it. A second Ctrl-C leaves the cancellation to the serve process."""
    from zero.config import ConfigError, load_params

    services = Services(args.root, args.port)
    apply_env(args.root, args.port)
    path = Path(args.params)
    try:
        if _refuse_busy(args, load_params(path if path.is_absolute() else Path(args.root) / path, args.set)):
            return 1
    except ConfigError as e:
        print(e, file=sys.stderr)
        return 2
    services.require_server()
    from prefect.deployments import run_deployment

    parameters = {"params_file": args.params, **({"overrides": args.set} if args.set else {})}
    run = run_deployment(DEPLOYMENT, parameters=parameters, timeout=0)
    print(f"flow run {run.name} ({run.id}): {services.ui_url}/runs/flow-run/{run.id}  (Ctrl-C cancels it)",
          flush=True)
    try:
        return _follow(args, services, run)
    except KeyboardInterrupt:
        return _interrupted(args, services, run)


def _follow(args, services: Services, run) -> int:
    """Print the run's state as it changes until it ends; the exit code (0: completed)."""
    import time

    from prefect.client.orchestration import get_client

    from flows.liveness import mark_gone, process_gone
    from flows.request import REFUSED

    last, serve_missing = None, 0.0
    with get_client(sync_client=True) as client:
        while True:
            run = client.read_flow_run(run.id)
            state = run.state.type.value
            if run.state.name != last:
                print(f"flow run {run.name}: {run.state.name}", flush=True)
                last = run.state.name
            if state in FINAL:
                message = run.state.message or ""
                if REFUSED in message:  # another run took the line between the check and the start
                    print(message, file=sys.stderr)
                elif state != "COMPLETED":
                    print(f"{message}\nresume it with `python -m flows.serve retry {run.id}`", file=sys.stderr)
                return 0 if state == "COMPLETED" else 1
            gone = process_gone(run)
            if gone is not None:
                new = mark_gone(client, run, gone)
                print(f"flow run {run.name} is {new}: its process ({gone.text()}) is gone. Resume it with "
                      f"`python -m flows.serve retry {run.id}`", file=sys.stderr)
                return 1
            if state == "SCHEDULED" and not services.serving():
                serve_missing = serve_missing or time.time()
                if time.time() - serve_missing > args.grace:
                    print(f"flow run {run.name} is waiting for a serve process and none is running "
                          f"({services.serve_pid_file}); `make up` starts one, and it starts the run", file=sys.stderr)
                    return 1
            else:
                serve_missing = 0.0
            time.sleep(args.interval)


def _interrupted(args, services: Services, run) -> int:
    """Ctrl-C while waiting: cancel the run, say so, and say how to resume it."""
    from prefect.client.orchestration import get_client

    url = f"{services.ui_url}/runs/flow-run/{run.id}"
    print(f"\nCtrl-C: cancelling flow run {run.name} ({run.id}); Ctrl-C again stops waiting for it", flush=True)
    try:
        with get_client(sync_client=True) as client:
            run = _cancel(client, client.read_flow_run(run.id), args.cancel_timeout)
    except KeyboardInterrupt:
        print(f"flow run {run.name} is being cancelled by the serve process: {url}", file=sys.stderr)
        return INTERRUPTED
    if run.state.type.value == "COMPLETED":
        print(f"flow run {run.name} completed before it could be cancelled: {url}")
        return 0
    print(f"flow run {run.name} is {run.state.name}: {url}\nwhat it finished is kept; resume it with "
          f"`python -m flows.serve retry {run.id}`", file=sys.stderr)
    return INTERRUPTED


def cmd_reap(args) -> int:
    apply_env(args.root, args.port)
    Services(args.root, args.port).require_server()
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        _reap(client)
    return 0


def cmd_where(args) -> int:
    """Print where to look. Reads the tracking database only: it creates no experiment and no database."""
    apply_env(args.root, args.port)
    from flows.tracking import champion_uri, model_name
    from zero.config import ConfigError, load_params

    services = Services(args.root, args.port)
    root = Path(args.root).resolve()
    try:
        tag = load_params(root / args.params).game.tag
    except ConfigError:
        tag = "go-9"
    mlflow_ui = f"http://127.0.0.1:{args.mlflow_port}"
    experiment, champion = _read_line(root, tag)
    lines = [
        "",
        "Where to look:",
        f"  Prefect UI      {services.ui_url}   (flow runs, task runs, logs; `make down` stops it)",
        f"  MLflow          make mlflow-ui  ->  {_runs_page(mlflow_ui, experiment)}",
        f"                  (experiment {model_name(tag)}: one run per generation, its loss curves and gate in"
        f" plots/; Models -> {model_name(tag)}: the registry; store {os.environ['MLFLOW_TRACKING_URI']})",
        f"  champion        {champion_uri(tag)}" + champion,
        f"  generations     gens/{tag}/gNNNN/generation.json, generations.yaml, dvc.lock",
        "  reproduce       make repro   (dvc repro: re-creates the hashes in dvc.lock)",
        f"  next generation make run PARAMS={args.params}   (Ctrl-C cancels it)",
    ]
    if experiment is None:
        from flows.layout import Workspace

        others = sorted(t for t in Workspace(root).read_generations()["lines"] if t != tag)
        if others:
            lines.append(f"  other lines     no generation of {tag} yet; this workspace has {', '.join(others)}:"
                         f" `make where PARAMS=<their params file>` (params-smoke.yaml is gomoku-6x6x4)")
    lines += ["", "By hand, in a shell where `. .venv/bin/activate` has set this workspace's settings and ports:"]
    lines += [f"  {line}" for line in by_hand(args.params, args.mlflow_port)] + [""]
    print("\n".join(lines))
    return 0


def _runs_page(mlflow_ui: str, experiment: str | None) -> str:
    from flows.tracking import runs_url

    if experiment is None:
        return f"{mlflow_ui}   (no runs yet: the experiment appears with the first generation)"
    return runs_url(mlflow_ui, experiment)


def _read_line(root: Path, tag: str) -> tuple[str | None, str]:
    """(experiment id or None, the champion's line) from the tracking database, which is only read."""
    if not (root / "mlflow.db").is_file() and "sqlite" in os.environ.get("MLFLOW_TRACKING_URI", "sqlite"):
        return None, "  (none yet)"
    try:
        from flows.tracking import read_line

        experiment, v = read_line(root, tag)
    except Exception as e:  # where is informational: never fail on it
        return None, f"  (registry not readable: {type(e).__name__})"
    if v is None:
        return experiment, "  (none yet)"
    return experiment, f"  = version {v.version}, generation {v.tags.get('zero.generation')}, run {v.run_id}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m flows.serve", description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=".", help="workspace root (default: the current directory)")
    ap.add_argument("--port", type=int, default=None, help="Prefect server port (default 4200 or ZERO_PREFECT_PORT)")
    sub = ap.add_subparsers(dest="command", required=True)
    for name in ("serve", "up"):
        p = sub.add_parser(name)
        p.add_argument("--ray", default=None, help="run tasks on this Ray cluster (ray://host:10001)")
    sub.add_parser("down")
    p = sub.add_parser("check")
    p.add_argument("params")
    p.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    p.add_argument("--line-free", action="store_true",
                   help="refuse (exit 1, at once) when a flow run holds the params' line")
    p = sub.add_parser("run")
    p.add_argument("params", nargs="?", default="params.yaml")
    p.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    p.add_argument("--interval", type=float, default=5.0, help="seconds between looks at the run")
    p.add_argument("--grace", type=float, default=60.0,
                   help="seconds a scheduled run may wait with no serve process before the wait ends")
    p.add_argument("--cancel-timeout", type=float, default=60.0,
                   help="seconds Ctrl-C waits for the serve process to stop the run")
    p = sub.add_parser("retry")
    p.add_argument("flow_run_id")
    p = sub.add_parser("cancel")
    p.add_argument("flow_run_id")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the serve process to stop it")
    sub.add_parser("reap")
    p = sub.add_parser("where")
    p.add_argument("--params", default="params.yaml")
    p.add_argument("--mlflow-port", type=int, default=int(os.environ.get("MLFLOW_PORT") or 5000),
                   help="the port `make mlflow-ui` serves on (default MLFLOW_PORT, else 5000)")
    p = sub.add_parser("activate")
    p.add_argument("--venv", default=".venv", help="the venv, relative to the workspace (default .venv)")
    p.add_argument("--mlflow-port", type=int, default=int(os.environ.get("MLFLOW_PORT") or 5000))
    args = ap.parse_args(argv)
    args.root = str(Path(args.root).resolve())
    commands = {"serve": cmd_serve, "up": cmd_up, "down": cmd_down, "check": cmd_check, "run": cmd_run,
                "retry": cmd_retry, "cancel": cmd_cancel, "reap": cmd_reap, "where": cmd_where,
                "activate": cmd_activate}
    try:
        return commands[args.command](args)
    except ServiceError as e:  # the server is down, or another workspace's: one line that names the fix
        print(e, file=sys.stderr)
        return SERVER_DOWN
    except KeyboardInterrupt:
        print(f"\ninterrupted: python -m flows.serve {args.command} did not finish", file=sys.stderr)
        return INTERRUPTED
    except Exception as e:
        if not _connection_error(e):
            raise
        services = Services(args.root, args.port)
        print(f"lost the Prefect server at {services.ui_url} ({type(e).__name__}): is it up? `make up` in "
              f"{services.root} starts it", file=sys.stderr)
        return SERVER_DOWN


def _connection_error(e: BaseException) -> bool:
    """Whether e (or what it was raised from) is a failed connection to a server."""
    import httpx

    while e is not None:
        if isinstance(e, (httpx.TransportError, ConnectionError)):
            return True
        e = e.__cause__ or e.__context__
    return False


def cmd_activate(args) -> int:
    """Have the venv's activate script source infra/env.sh with this workspace's root and ports."""
    port = Services(args.root, args.port).env["PREFECT_SERVER_API_PORT"]
    changed = install_activate_hook(args.root, args.venv, int(port), args.mlflow_port)
    if changed:
        print(f"{args.venv}/bin/activate carries this workspace's settings (Prefect port {port}, MLflow port "
              f"{args.mlflow_port}): `. {args.venv}/bin/activate` is the one set-up line for the commands by hand")
    return 0


if __name__ == "__main__":
    sys.exit(main())
