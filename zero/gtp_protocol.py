"""The GTP wire level of zero's engine: input lines, command arguments, streamed responses, and the loop
that answers each line (`GtpServer`).

Each input line is one command, optionally prefixed by a numeric id that the
response echoes (`12 genmove b` -> `=12 D4`). A response is `= result` or
`? reason` followed by a blank line, so no line inside one may be blank.

A streaming command (lz-analyze) answers `=` at once and then one line at a
time while it runs, as Leela Zero does; the blank line ends it. Once `=` is
out, GTP has no way to turn the response into a `?`, and a second, `?`
response would be read by the controller as the answer to its next command.
So a stream that fails part-way ends with a last line `error <what failed>`
(which readers of `info` lines pass over) and the blank line, and stderr
names the command and the exception: the controller is not left waiting, and
the failure is in the response, not passed off as a clean end.
"""

from __future__ import annotations

import collections
import math
import sys
import threading
from typing import Callable, Iterator, TextIO

from zero.notation import NotationError, parse_colour


class GtpError(Exception):
    """A command that cannot be carried out; the message is the `?` response text."""


# --- arguments ---------------------------------------------------------------


def colour_arg(text: str) -> int:
    """A GTP colour argument as +1/-1, else GtpError naming it."""
    try:
        return parse_colour(text)
    except NotationError:
        raise GtpError(f"invalid color {text!r} (expected b, w, black or white)") from None


def seconds_arg(text: str, what: str) -> float:
    """A time in seconds from GTP text: finite and not negative, else GtpError naming it."""
    try:
        value = float(text)
    except ValueError:
        raise GtpError(f"{what} is not a number: {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise GtpError(f"{what} must be a finite number of seconds, at least 0: {text!r}")
    return value


def int_arg(text: str, what: str, least: int | None = None) -> int:
    """An integer from GTP text (at least `least` where given), else GtpError naming it."""
    try:
        value = int(text)
    except ValueError:
        raise GtpError(f"{what} not an integer: {text!r}") from None
    if least is not None and value < least:
        raise GtpError(f"{what} must be at least {least}, got {value}")
    return value


def count_arg(text: str, what: str) -> int:
    """A whole number of stones from GTP text, at least 0, else GtpError naming it."""
    try:
        value = float(text)
    except ValueError:
        raise GtpError(f"{what} is not a number: {text!r}") from None
    if not math.isfinite(value) or value < 0 or value != int(value):
        raise GtpError(f"{what} must be a whole number, at least 0: {text!r}")
    return int(value)


def no_args(args: list[str], response: str, action: Callable[[], None] | None = None) -> str:
    """`response` (after `action`) for a command that takes no arguments, else GtpError."""
    if args:
        raise GtpError(f"wrong number of arguments: expected none, got {len(args)}")
    if action is not None:
        action()
    return response


def nargs(args: list[str], *counts: int, usage: str) -> None:
    """GtpError quoting `usage` unless there are as many arguments as one of `counts`."""
    if len(args) not in counts:
        raise GtpError(f"wrong number of arguments (usage: {usage})")


# --- input -------------------------------------------------------------------


def clean_line(line: str) -> str:
    """GTP preprocessing: drop control characters but tab, tabs to spaces, cut `#` comments."""
    line = "".join(ch for ch in line if ch == "\t" or ch >= " " and ch != "\x7f")
    line = line.replace("\t", " ")
    return line.split("#", 1)[0].strip()


class InputLines:
    """stdin read on a thread, so that a long command (lz-analyze) can tell when the next one arrives."""

    def __init__(self, stream: TextIO):
        self._items: collections.deque[str | None] = collections.deque()
        self._ready = threading.Condition()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: TextIO) -> None:
        try:
            for line in iter(stream.readline, ""):
                self._put(line)
        finally:
            self._put(None)  # end of input

    def _put(self, item: str | None) -> None:
        with self._ready:
            self._items.append(item)
            self._ready.notify_all()

    def get(self) -> str | None:
        """The next line, waiting for it; None at the end of input."""
        with self._ready:
            self._ready.wait_for(lambda: self._items)
            return self._items.popleft()

    def wait(self, timeout: float | None) -> bool:
        """Whether a line (or the end of input) is waiting, after waiting up to `timeout` seconds for one."""
        with self._ready:
            if timeout is None or timeout > 0:
                self._ready.wait_for(lambda: self._items, timeout)
            return bool(self._items)


# --- responses -----------------------------------------------------------------


def stream_response(ident: str, name: str, lines: Iterator[str], write: Callable[[str], None] | None) -> str:
    """The response of streaming command `name`: `=id`, a line per item of `lines`, then the blank line.

    While serving, `write` sends `=id` at once and each line as it comes, and
    what is returned is the rest; otherwise all of it is returned. If `lines`
    raises: not serving, nothing has gone out and the response is
    `?id internal error in NAME: ...`; serving, it is ended as the module doc
    says, with a line `error NAME failed: TYPE: MESSAGE`.
    """
    pending = [f"={ident}\n"]
    if write is not None:
        write(pending.pop())
    sent, items = 0, iter(lines)
    while True:
        try:
            text = next(items)
        except StopIteration:
            break
        except Exception as e:  # a bug in the command: name it in the response, never end as if it succeeded
            failure = " ".join(f"{type(e).__name__}: {e}".split())  # one line, so never a blank one
            if write is None:
                return f"?{ident} internal error in {name}: {failure}\n\n"
            command = f"{name} (id {ident})" if ident else name
            print(f"zero gtp: {command} failed after {sent} lines: {failure}", file=sys.stderr)
            pending.append(f"error {name} failed: {failure}\n")
            break
        if write is not None:
            write(text + "\n")
        else:
            pending.append(text + "\n")
        sent += 1
    pending.append("\n")
    return "".join(pending)


# --- the loop ------------------------------------------------------------------


class GtpServer:
    """Answers command lines from the commands it is given, with GTP's own: protocol_version, name,
    version, known_command, list_commands and quit. A bad command never stops it: it gets a `?` response.

    A command takes its arguments and returns the response text, or an iterator of lines for a streaming
    one (`stream_response`); GtpError is a `?` response with its message.
    """

    def __init__(self, name: str, version: str):
        self.quit_requested = False
        # While serving (`run`): write part of a response now, and wait up to t seconds for the next line.
        self.write: Callable[[str], None] | None = None
        self.pending: Callable[[float | None], bool] | None = None
        self.commands: dict[str, Callable[[list[str]], str | Iterator[str]]] = {
            "protocol_version": lambda a: no_args(a, "2"),
            "name": lambda a: no_args(a, name),
            "version": lambda a: no_args(a, version),
            "known_command": self.cmd_known_command,
            "list_commands": lambda a: no_args(a, "\n".join(self.commands)),
            "quit": self.cmd_quit,
        }

    def add(self, commands: dict[str, Callable[[list[str]], str | Iterator[str]]]) -> None:
        self.commands.update(commands)

    def cmd_known_command(self, args: list[str]) -> str:
        nargs(args, 1, usage="known_command NAME")
        return "true" if args[0] in self.commands else "false"

    def cmd_quit(self, args: list[str]) -> str:
        self.quit_requested = True
        return ""

    def handle(self, line: str) -> str | None:
        """The response to one input line (ending in a blank line), or None for empty/comment lines.

        A streaming command (lz-analyze) writes its first lines as it goes while
        serving; what is returned is then the rest of its response.
        """
        line = clean_line(line)
        if not line:
            return None
        words = line.split()
        ident = ""
        if words[0].isdigit():
            ident = words.pop(0)
            if not words:
                return f"?{ident} no command after id\n\n"
        name, args = words[0], words[1:]
        command = self.commands.get(name)
        if command is None:
            return f"?{ident} unknown command\n\n"
        try:
            result = command(args)
        except GtpError as e:
            return f"?{ident} {e}\n\n"
        except Exception as e:  # a bug must not take the engine down mid-game
            return f"?{ident} internal error in {name}: {type(e).__name__}: {e}\n\n"
        if not isinstance(result, str):
            return stream_response(ident, name, result, self.write)
        # An empty line ends a GTP response, so no line after the first may be blank.
        first, *rest = result.split("\n")
        result = "\n".join([first] + [part for part in rest if part.strip()])
        return f"={ident} {result}\n\n"

    def run(self, stdin: TextIO, stdout: TextIO) -> None:
        """Answer commands from stdin until `quit` or end of input."""
        lines = InputLines(stdin)  # read on a thread, to answer each line as it comes and to notice the next one

        def write(text: str) -> None:
            stdout.write(text)
            stdout.flush()

        self.write, self.pending = write, lines.wait
        try:
            while True:
                line = lines.get()
                if line is None:
                    return
                response = self.handle(line)
                if response is None:
                    continue
                write(response)
                if self.quit_requested:
                    return
        finally:
            self.write = self.pending = None
