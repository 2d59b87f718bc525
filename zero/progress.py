"""A long step's progress as lines of text: games (or steps) done of total, rate, ETA.

Self-play, matches and ladders call `progress(games_done, total, positions)` as each game ends, training
calls a tick per step. `ProgressLines` is such a callback that writes a line when the step starts, at most
once every `every` seconds while it runs, and when it ends, so a step whose output goes to a log file
(nohup, a batch job) is never silent long. `zero`'s commands write them on stderr where it is no terminal;
the pipeline's reporter (flows.progress.StepProgress) writes the same lines into the Prefect task log.

    with ProgressLines("g435 against gnugo-l10", 200) as report:
        play_pairing(..., progress=report)
"""

from __future__ import annotations

import sys
import time

EVERY_S = 60.0  # at most one line a minute (plus the first and the last)


def duration(seconds: float) -> str:
    """`1h02m`, `3m20s`, `42s`."""
    s = int(round(seconds))
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


def to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class ProgressLines:
    """Progress lines for one long step (a self-play shard, a match, a ladder pairing, training).

    Args:
        label: what the step is, first on every line (`go-9-g0003 gate part 0`).
        total: games (or steps) the step will play.
        unit: what total counts (`games`, `steps`).
        every: seconds between lines at most (the first and last line aside).
        clock: time source in seconds (tests pass a fake one).
        emit: where a line goes (a function of one string); default: stderr.
        at_once: games played at the same time. Until that many have ended, the rate counts the games in
            flight as if they ended now, so the first game of ten played together does not read as a tenth of
            the rate (an ETA ten times too long).
    """

    def __init__(self, label: str, total: int, unit: str = "games", every: float = EVERY_S, clock=time.monotonic,
                 emit=to_stderr, at_once: int = 1):
        self.label, self.total, self.unit, self.every, self.clock = label, max(0, int(total)), unit, every, clock
        self.emit, self.at_once = emit, max(1, int(at_once))
        self.done, self.positions = 0, None
        self.carried = 0  # games done before this run (a resumed ladder pairing's): not in the rate or the ETA
        self.started = self.last_line = clock()
        self.lines = 0

    def __call__(self, done: int | None = None, total: int | None = None, positions: int | None = None) -> None:
        """progress(games_done, total, positions), as self-play and matches call it; with no arguments, one
        more done (a training step). A call with positions None reports the games an earlier run finished, as
        a ladder pairing does before it plays (games always come with their positions, a first game that
        recorded none included)."""
        self.done = self.done + 1 if done is None else int(done)
        if total is not None:
            self.total = int(total)
        if positions is None and done is not None:
            self.carried = self.done
            if self.carried:  # say at once that the run resumes, not a minute later
                self._say(f"{self.label}: {self.carried}/{self.total} {self.unit} kept from an earlier run, "
                          f"{self.total - self.carried} to play")
        if positions is not None:
            self.positions = int(positions)
        now = self.clock()
        if now - self.last_line >= self.every and self.done < self.total:
            self._line(now)

    def __enter__(self) -> "ProgressLines":
        self._line(self.clock(), "started")
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._line(self.clock(), "stopped" if exc_type else "done")

    def text(self, now: float, state: str = "") -> str:
        """The progress line: done of total, rate, ETA (or the elapsed time once done)."""
        elapsed = max(now - self.started, 1e-9)
        pct = 100.0 * self.done / self.total if self.total else 100.0
        parts = [f"{self.done}/{self.total} {self.unit} ({pct:.0f}%)"]
        if self.positions is not None:
            parts.append(f"{self.positions:,} positions, {self.positions / elapsed:,.1f} positions/s")
        else:
            parts.append(f"{(self.done - self.carried) / elapsed:.2f} {self.unit}/s")
        if state in ("done", "stopped"):
            parts.append(f"{state} in {duration(elapsed)}")
        elif state == "started":
            parts = [f"{self.total} {self.unit} to {'play' if self.unit == 'games' else 'run'}"]
        else:
            parts.append(f"{self.eta_text(now)}, {duration(elapsed)} elapsed")
        return f"{self.label}: " + ", ".join(parts)

    def eta(self, now: float | None = None) -> float | None:
        """Seconds left at this run's rate so far, or None before its first game (or step) has ended. Until
        `at_once` games have ended, the games in flight count as ending now."""
        now = self.clock() if now is None else now
        played = self.done - self.carried
        if played <= 0:
            return None
        ending = max(played, min(self.at_once, self.total - self.carried))  # the games in flight at the start
        return max(now - self.started, 1e-9) / ending * max(self.total - self.done, 0)

    def eta_text(self, now: float | None = None) -> str:
        """`ETA 39m48s`, or `ETA unknown` before the first game (or step) has ended."""
        left = self.eta(now)
        return f"ETA {duration(left) if left is not None else 'unknown'}"

    def _line(self, now: float, state: str = "") -> None:
        self.last_line = now
        self._say(self.text(now, state))

    def _say(self, line: str) -> None:
        self.lines += 1
        self.emit(line)


def terminal_bar(label: str, total: int, unit: str = "games", at_once: int = 1, file=None, clock=time.monotonic):
    """A rich progress bar for a terminal, with the same ETA as the plain lines (games in flight counted), and
    the tick that advances it: tick(games_done, total, positions) as the library calls it, or tick() for one
    more. Returns (bar, tick); `with bar:` shows it. file: where it draws (default stderr); clock: as
    ProgressLines's."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn
    from rich.text import Text

    lines = ProgressLines(label, total, unit, every=float("inf"), clock=clock, emit=lambda line: None,
                          at_once=at_once)

    class EtaColumn(ProgressColumn):
        def render(self, task) -> Text:
            if task.finished:
                return Text("")
            return Text(lines.eta_text(), style="progress.remaining")

    bar = Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TextColumn(unit), TimeElapsedColumn(),
                   EtaColumn(), transient=False, console=Console(file=file or sys.stderr))
    task = bar.add_task(label, total=total)

    def tick(*done) -> None:
        lines(*done)
        bar.update(task, completed=lines.done)

    return bar, tick
