"""Atomic file writes: a file is either its old self or complete, never half-written."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "wb"):
    """Open a temp file beside `path` for writing; on success fsync and rename it over `path`.

    On any error the temp file is removed and `path` is left as it was.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, mode) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    with atomic_write(path, "w") as f:
        f.write(text)


def atomic_savefig(fig, path: str | Path, **savefig_kwargs) -> Path:
    """Write a matplotlib figure to `path` as a PNG (atomic_write: whole or not at all), then close it."""
    import matplotlib.pyplot as plt

    try:
        with atomic_write(path) as f:
            fig.savefig(f, format="png", **savefig_kwargs)
    finally:
        plt.close(fig)
    return Path(path)
