"""The engine of `zero gtp` and `zero play`, built on a thread while the player already answers.

Importing torch and loading the network take a core a second or two; on a machine whose numba cache does
not hold the search kernels yet, their first use compiles them (`zero warmup`, which `make install` runs,
compiles them ahead). `LoadingEngine` does all of that on a thread from start-up, ending with a one-visit
search and a scoring of the empty board so that the kernels are loaded or compiled before the first move is
asked for. Meanwhile the board, the protocol's own commands and the person's first move do not wait; the
first use of the engine does. `zero gtp` builds its engine so (`load_engine`); `zero play` builds it first, so
that a checkpoint that cannot play is refused before the board is drawn, and only warms it on the thread. The
first kernel compiled in the process says so on stderr (`announce_compiles`).
"""

from __future__ import annotations

import sys
import threading
from typing import Callable, TextIO

from numba.core import event

# CPU seconds one core of the development machine spent compiling the kernels of `zero gtp`'s search and
# scoring on an empty numba cache: its CPU time to the first move, less that on a filled cache (`zero bench
# --gtp-latency --cold-cache`, docs/performance/gtp-2026-11-26).
COMPILE_SECONDS = 12
COMPILE_NOTICE = (f"compiling search kernels (once, about {COMPILE_SECONDS} s of a core; "
                  "`zero warmup` compiles them ahead)")


class EngineLoadError(ValueError):
    """The engine could not be built: a checkpoint that is corrupt or does not fit the board; says which."""


class LoadingEngine:
    """An engine that `build()` makes on a thread started at once; reading any of its attributes waits for it.

    Args:
        build: makes the engine (zero.engine.Engine or anything like it); `lambda: engine` for one built
            already, whose warm-up alone then runs on the thread.
        game: the engine's game where it is known before the network loads (a player's board is set up from
            it at once); None: `game` waits for the engine too.
        failure: what every use raises when building failed, with the reason (e.g. zero.gtp_protocol.GtpError,
            so that each GTP command answers `? ...`).
        on_failure: told the reason once, on the loading thread, as soon as building fails.
        warm: after building, search the empty board for one visit (and, for Go, score it), so the first move
            does not load or compile the kernels.
    """

    def __init__(self, build: Callable[[], object], game=None, failure: type[Exception] = EngineLoadError,
                 on_failure: Callable[[str], None] | None = None, warm: bool = True):
        self._game, self._failure, self._on_failure, self._warm = game, failure, on_failure, warm
        self._engine = None
        self.error: str | None = None  # why building failed, once it has
        self._done = threading.Event()
        threading.Thread(target=self._load, args=(build,), name="zero-engine-loader", daemon=True).start()

    def _load(self, build: Callable[[], object]) -> None:
        try:
            engine = build()
            if self._warm:
                warm_up_engine(engine)
            self._engine = engine
        except Exception as e:  # reported by every later use, not lost on this thread
            self.error = str(e) or type(e).__name__
            if self._on_failure is not None:
                self._on_failure(self.error)
        finally:
            self._done.set()

    @property
    def loaded(self) -> bool:
        """Whether building has ended (the engine is ready, or `error` says why it is not)."""
        return self._done.is_set()

    def wait(self):
        """The engine, once built; `failure` with the reason if building failed."""
        self._done.wait()
        if self._engine is None:
            raise self._failure(f"the engine could not be loaded: {self.error}")
        return self._engine

    @property
    def game(self):
        """The game given at construction while the engine is not built (also once building failed: the board
        and the protocol's own commands go on answering); else the engine's, waiting for it."""
        if self._game is not None and self._engine is None:
            return self._game
        return self.wait().game

    def __getattr__(self, name: str):
        if name.startswith("_"):  # never reached for this object's own fields
            raise AttributeError(name)
        return getattr(self.wait(), name)


def warm_up_engine(engine) -> None:
    """Load (or compile) the kernels of `engine`'s search, of its tree reuse and, for Go, of its scoring.

    Two searches that stop after their first round, on the empty board and after a move (the tree carried
    over); then the tree is dropped, so the engine's first move searches from a fresh tree as it would have.
    """
    from zero.games import initial_position

    start = initial_position(engine.game)
    engine.think(start, stop=lambda: True)
    engine.think(start.play(start.legal_actions()[0]), stop=lambda: True)
    engine.forget()
    if engine.game.name == "go":
        engine.dead_stones(start)


def build_engine(params, model: str | None, visits: int | None):
    """The engine `zero gtp` and `zero play` play with: the network in `model` (None: a fresh one) with the input
    planes it was trained with (zero.match.params_for_players), `visits` a move (None: gate.visits).
    CheckpointError (a ValueError) naming the file when it cannot play the params' board."""
    from zero.engine import Engine, EngineConfig
    from zero.games import make_game
    from zero.match import params_for_players
    from zero.network import check_network_fits, load_checkpoint

    played = params_for_players(params, [model] if model else [])
    if model is not None:
        net, meta = load_checkpoint(model)
        check_network_fits(net, make_game(played.game), model, played.game.tag, meta.get("game"))
    return Engine(EngineConfig.from_params(played, visits), checkpoint=model)


def load_engine(params, model: str | None, visits: int | None, failure: type[Exception] = EngineLoadError,
                on_failure: Callable[[str], None] | None = None, warm: bool = True) -> LoadingEngine:
    """`build_engine` on a thread (LoadingEngine). Its game is known at once unless a Go network's input planes
    must be read from it."""
    from zero.games import make_game

    game = params.game
    known = game.name != "go" or game.liberty_planes or model is None
    return LoadingEngine(lambda: build_engine(params, model, visits), make_game(game) if known else None, failure,
                         on_failure, warm)


class _CompileNotice(event.Listener):
    """Writes one line when the first kernel of the process starts compiling (numba's compile event, which a
    kernel loaded from the cache never sends)."""

    def __init__(self, stream: TextIO, prefix: str):
        self.stream, self.prefix, self.said = stream, prefix, False
        self._lock = threading.Lock()

    def on_end(self, ev) -> None:
        pass

    def on_start(self, ev) -> None:
        with self._lock:
            if self.said:
                return
            self.said = True
        try:
            print(f"{self.prefix}: {COMPILE_NOTICE}", file=self.stream, flush=True)
        except (ValueError, OSError):  # the stream it was given is closed (a pipe gone): compiling goes on
            pass


_notice: _CompileNotice | None = None


def announce_compiles(stream: TextIO | None = None, prefix: str = "zero") -> None:
    """Say on `stream` (stderr) when this process first compiles a numba kernel: a first use on a machine
    whose cache does not hold them yet. Once per process; loading kernels from the cache says nothing."""
    global _notice
    if _notice is not None:
        return
    _notice = _CompileNotice(stream if stream is not None else sys.stderr, prefix)
    event.register("numba:compile", _notice)
