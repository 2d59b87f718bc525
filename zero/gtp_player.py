"""An external GTP engine (GNU Go, another zero, KataGo...) as a match player.

One engine process per game slot, so a match against it runs as many games
at once as any other. The engine is told every move: the ones it generated
itself (`genmove` already plays them) are not sent again. Go only.
"""

from __future__ import annotations

import collections
import queue
import shlex
import subprocess
import threading
import time

import numpy as np

from zero.arena import Choice
from zero.games.base import Game
from zero.notation import colour_letter


class GtpEngineError(RuntimeError):
    """The external engine died or answered a command with `?`."""


class GtpProcess:
    """A GTP engine in a child process; `send` returns the response text of one command.

    A reply that does not come within `timeout` seconds ends the engine with a GtpEngineError; every error
    shows the last lines the engine wrote to its stderr (kept by a reader thread, never left to fill a pipe).
    """

    STDERR_LINES = 20

    def __init__(self, command: str, timeout: float = 120.0):
        self.command, self.timeout = command, timeout
        try:
            self.proc = subprocess.Popen(shlex.split(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True, bufsize=1)
        except OSError as e:
            raise GtpEngineError(f"cannot start GTP engine {command!r}: {e.strerror}") from None
        self._stderr: collections.deque[str] = collections.deque(maxlen=self.STDERR_LINES)
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._drain, args=(self.proc.stdout, self._lines.put), daemon=True).start()
        self._stderr_reader = threading.Thread(target=self._drain, args=(self.proc.stderr, self._stderr.append),
                                               daemon=True)
        self._stderr_reader.start()

    @staticmethod
    def _drain(stream, keep) -> None:
        for line in stream:
            keep(line)
        keep("")  # end of stream

    def _error(self, what: str, ended: bool = False) -> GtpEngineError:
        if ended or self.proc.poll() is not None:
            self._stderr_reader.join(timeout=2.0)  # an engine that ended: what it wrote last, read to its end
        tail = "".join(line for line in self._stderr if line)
        return GtpEngineError(f"GTP engine {self.command!r} {what}" + (
            f"; its last stderr lines:\n{tail.rstrip()}" if tail.strip() else "; it wrote nothing to stderr"))

    def send(self, line: str) -> str:
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._error(f"is gone (sending {line!r})") from None
        deadline = time.monotonic() + self.timeout
        lines = []
        while True:
            try:
                out = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self.proc.kill()
                raise self._error(f"did not answer {line!r} within {self.timeout:g} s and was stopped",
                                  ended=True) from None
            if out == "":
                raise self._error(f"closed while answering {line!r}", ended=True)
            if out.strip() == "" and lines:
                break
            if out.strip():
                lines.append(out.rstrip("\n"))
        text = "\n".join(lines)
        if text.startswith("?"):
            raise GtpEngineError(f"GTP engine {self.command!r} refused {line!r}: {text[1:].strip()}")
        return text[1:].strip()

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.send("quit")
            except GtpEngineError:
                pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()


class GtpPlayer:
    """A match player backed by an external GTP engine (spec `gtp:<command line>`)."""

    def __init__(self, command: str, komi: float):
        self.name = command.split()[0]
        self.command = command
        self.komi = komi
        self.procs: list[GtpProcess] = []

    def start(self, game: Game, batch, slots_n: int) -> None:
        if game.name != "go":
            raise ValueError(f"a GTP player plays Go, not {game.name}")
        self.game, self.batch = game, batch
        self.close()
        self.procs = [GtpProcess(self.command) for _ in range(slots_n)]
        self._own = [None] * slots_n  # the move the engine just generated itself, per slot
        for p in self.procs:
            p.send(f"boardsize {game.height}")
            p.send(f"komi {self.komi:g}")

    def reset(self, slot: int) -> None:
        self.procs[slot].send("clear_board")
        self._own[slot] = None

    def observe(self, slot: int, action: int) -> None:
        if self._own[slot] == action:
            self._own[slot] = None
            return
        colour = colour_letter(-self.game.to_play(self.batch, slot)).lower()  # the side that just moved
        self.procs[slot].send(f"play {colour} {self.game.action_to_text(action)}")

    def choose(self, slots: np.ndarray, sample: np.ndarray, rngs: list) -> Choice:
        """The engine's moves; a resignation comes back as a resign statistic of -inf."""
        actions = np.zeros(len(slots), np.int64)
        stats = np.zeros(len(slots), np.float32)
        for i, slot in enumerate(slots):
            colour = colour_letter(self.game.to_play(self.batch, int(slot))).lower()
            reply = self.procs[slot].send(f"genmove {colour}").lower()
            if reply == "resign":
                stats[i] = -np.inf
                actions[i] = self.game.pass_action
                continue
            action = self.game.text_to_action(reply)
            if not self.game.legal_mask(self.batch, int(slot))[action]:
                raise GtpEngineError(f"GTP engine {self.command!r} played an illegal move {reply!r} "
                                     f"under zero's rules (positional superko, no suicide)")
            actions[i] = action
            self._own[slot] = action
        return Choice(actions, stats)

    def close(self) -> None:
        for p in self.procs:
            p.close()
        self.procs = []
