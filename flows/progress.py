"""Progress of the pipeline's long steps: a line in the Prefect task log at least once a minute, a progress artifact.

The zero library reports progress through plain callbacks and imports no Prefect:
self-play and matches call `progress(games_done, total, positions)` as each game
ends, training calls `on_step(step, metrics)`. `StepProgress` is such a callback,
zero.progress.ProgressLines's lines (the ones `zero`'s commands write to a log) with more.
Inside a Prefect task or flow run it logs through the run logger and keeps a
progress artifact (0-100%) up to date; elsewhere (`dvc repro` running
`python -m flows.stages`) it logs to the `flows.progress` logger. A line goes out
when the step starts, at most once every `every` seconds while it runs, and when
it ends; a heartbeat thread writes one when no game has ended for a minute (the
first games of a gate take minutes), so a running step is never silent longer.

    with StepProgress("go-9-g0003 gate part 0", 200, key="go-9-g0003-gate-part-0") as report:
        play_match(..., progress=report)
"""

from __future__ import annotations

import logging
import re
import sys
import threading
import time

from zero.progress import EVERY_S, ProgressLines

ARTIFACT_EVERY_S = 10.0  # the progress artifact is updated at most this often


def prefect_run_active() -> bool:
    """Whether this code runs inside a Prefect task or flow run (without importing Prefect when it is not loaded)."""
    if "prefect" not in sys.modules:
        return False
    from prefect.context import FlowRunContext, TaskRunContext

    return TaskRunContext.get() is not None or FlowRunContext.get() is not None


def run_logger() -> logging.Logger | logging.LoggerAdapter:
    """Prefect's run logger inside a run, else the `flows.progress` logger."""
    if prefect_run_active():
        from prefect import get_run_logger

        return get_run_logger()
    return logging.getLogger("flows.progress")


class StepProgress(ProgressLines):
    """A progress callback for one long step in the pipeline: zero.progress.ProgressLines's lines in the run
    log, a heartbeat, and a Prefect progress artifact.

    Args:
        label, total, unit, every, clock, at_once: as zero.progress.ProgressLines.
        emit: where a line goes (a function of one string); default: the run logger's info.
        key: the Prefect progress artifact's key (lowercase letters, digits, dashes; sanitised).
        artifact: keep a progress artifact; default: only inside a Prefect run.
        heartbeat: run the thread that writes a line when no game has ended for `every` seconds.
    """

    def __init__(self, label: str, total: int, unit: str = "games", every: float = EVERY_S, clock=time.monotonic,
                 emit=None, key: str | None = None, artifact: bool | None = None, heartbeat: bool = True,
                 at_once: int = 1):
        super().__init__(label, total, unit, every, clock, emit or run_logger().info, at_once)
        self.key = re.sub(r"[^a-z0-9-]+", "-", key.lower()).strip("-") if key else None
        self.artifact = prefect_run_active() if artifact is None else artifact
        self.heartbeat = heartbeat
        self.last_artifact = self.started
        self._artifact_id = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # --- the callbacks the library calls ---------------------------------------------------

    def __call__(self, done: int | None = None, total: int | None = None, positions: int | None = None) -> None:
        """progress(games_done, total, positions), as self-play and matches call it."""
        with self._lock:
            super().__call__(done, total, positions)
            now = self.clock()
        if now - self.last_artifact >= ARTIFACT_EVERY_S:
            self._update_artifact(now)

    def beat(self) -> None:
        """Write a line if none went out for `every` seconds (the heartbeat thread calls this)."""
        with self._lock:
            now = self.clock()
            if now - self.last_line >= self.every:
                self._line(now)

    # --- start and end ----------------------------------------------------------------------

    def __enter__(self) -> "StepProgress":
        with self._lock:
            super().__enter__()
        if self.artifact:
            self._create_artifact()
        if self.heartbeat and self.every > 0:
            self._thread = threading.Thread(target=self._beat_loop, name=f"progress: {self.label}", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        with self._lock:
            super().__exit__(exc_type, exc, tb)
        if exc_type is None:
            self._update_artifact(self.clock(), 100.0)

    # --- internals --------------------------------------------------------------------------

    def _beat_loop(self) -> None:
        while not self._stop.wait(min(self.every, 5.0)):
            self.beat()

    def _create_artifact(self) -> None:
        try:
            from prefect.artifacts import create_progress_artifact

            self._artifact_id = create_progress_artifact(0.0, key=self.key, description=self.label)
        except Exception as e:  # progress is for people: it never stops the work
            logging.getLogger("flows.progress").warning("%s: no progress artifact (%s)", self.label, e)
            self._artifact_id = None

    def _update_artifact(self, now: float, pct: float | None = None) -> None:
        if self._artifact_id is None:
            return
        self.last_artifact = now
        if pct is None:
            pct = 100.0 * self.done / self.total if self.total else 100.0
        try:
            from prefect.artifacts import update_progress_artifact

            update_progress_artifact(self._artifact_id, min(100.0, pct))
        except Exception as e:
            logging.getLogger("flows.progress").warning("%s: progress artifact not updated (%s)", self.label, e)
            self._artifact_id = None
