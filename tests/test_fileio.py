"""zero.fileio: files written whole or not at all."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from zero.fileio import atomic_savefig, atomic_write_text  # noqa: E402


def test_a_text_replaces_the_old_one_whole(tmp_path):
    path = tmp_path / "a" / "page.md"
    atomic_write_text(path, "old\n")
    atomic_write_text(path, "new\n")
    assert path.read_text() == "new\n" and [p.name for p in path.parent.iterdir()] == ["page.md"]


def test_a_figure_is_a_png_and_is_closed(tmp_path):
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    out = atomic_savefig(fig, tmp_path / "plot.png", dpi=50)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not plt.fignum_exists(fig.number)
    assert [p.name for p in tmp_path.iterdir()] == ["plot.png"]


def test_a_figure_that_cannot_be_drawn_leaves_the_old_file(tmp_path):
    path = tmp_path / "plot.png"
    path.write_bytes(b"the old plot")
    fig, _ = plt.subplots()
    with pytest.raises(AttributeError):  # matplotlib's error for a bounding box that is not one
        atomic_savefig(fig, path, dpi=50, bbox_inches="no such box")
    assert path.read_bytes() == b"the old plot" and [p.name for p in tmp_path.iterdir()] == ["plot.png"]
    assert not plt.fignum_exists(fig.number)
