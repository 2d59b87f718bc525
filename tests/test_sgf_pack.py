"""zero sgf pack: folders of one-game SGF files (and tar archives of them) become gzip-compressed collections."""

import io
import tarfile

import pytest

from zero.cli import main
from zero.notation import vertex_to_point
from zero.sgf import game_to_sgf, parse_sgf, read_collection
from zero.sgf_pack import PackError, pack

RESULTS = ["B+3.5", "W+R", "0", "B+R", "W+12.5", "B+0.5"]


def _records(n: int, a: str, b: str) -> list[str]:
    """n records of a colour-swapped match of a against b, each with its own moves and result."""
    points = ["E5", "C3", "G7", "C7", "G3"]
    return [game_to_sgf([vertex_to_point(p, 9, 9) for p in points[: 1 + i % 5]] + [81, 81], result=RESULTS[i % 6],
                        black=(a, b)[i % 2], white=(b, a)[i % 2], comment=f"zero ladder match, seed {i}")
            for i in range(n)]


def _write_games(folder, name, texts):
    """The older layout: one file a game, `<name>-<index>.sgf`."""
    folder.mkdir(parents=True, exist_ok=True)
    for i, text in enumerate(texts):
        (folder / f"{name}-{i:04d}.sgf").write_text(text)


def _same(games, texts):
    return [(g.black, g.white, g.result, g.moves, g.properties) for g in games] == [
        (p.black, p.white, p.result, p.moves, p.properties) for p in map(parse_sgf, texts)]


@pytest.fixture
def ladder(tmp_path):
    """A ladder directory of the older layout: a folder of one-game files a pairing, one still being written."""
    lad = tmp_path / "go-9-g167-ladder"
    pairings = {"g167--gnugo-l1--ladder": _records(12, "g167", "gnugo-l1"),
                "g167--gnugo-l5--ladder": _records(10, "g167", "gnugo-l5")}
    for key, texts in pairings.items():
        _write_games(lad / "sgf" / key, key, texts)
    _write_games(lad / "sgf" / ".g167--gnugo-l10--ladder.tmp", "g167--gnugo-l10--ladder", _records(2, "g167", "x"))
    (lad / "pairings").mkdir()
    (lad / "pairings" / "g167--gnugo-l1--ladder.json").write_text("{}")
    return lad, pairings


def test_a_ladder_directory_is_packed_one_collection_a_pairing(ladder, capsys):
    lad, pairings = ladder
    assert main(["sgf", "pack", str(lad)]) == 0
    assert sorted(p.name for p in (lad / "sgf").iterdir()) == [
        ".g167--gnugo-l10--ladder.tmp", "g167--gnugo-l1--ladder.sgf.gz", "g167--gnugo-l5--ladder.sgf.gz"]
    for key, texts in pairings.items():
        assert _same(read_collection(lad / "sgf" / f"{key}.sgf.gz"), texts)
    assert len(list((lad / "sgf" / ".g167--gnugo-l10--ladder.tmp").iterdir())) == 2  # a pairing being written
    out = capsys.readouterr().out
    black = sum(r.startswith("B") for texts in pairings.values() for r in (parse_sgf(t).result for t in texts))
    assert "g167--gnugo-l1--ladder.sgf.gz: 12 games" in out
    assert f"22 games packed ({black} won by black" in out
    assert main(["sgf", "pack", str(lad)]) == 0  # packed already: nothing to do
    assert "0 games packed" in capsys.readouterr().out


def test_a_match_folder_and_an_archive_are_packed_in_place(tmp_path):
    match = tmp_path / "go-9-g100-vs-g71"
    texts = _records(8, "g100", "g71")
    _write_games(match / "sgf", "match", texts)
    archived = tmp_path / "go-9-g167-vs-g140"
    archived.mkdir()
    arch_texts = _records(6, "g167", "g140")
    with tarfile.open(archived / "sgf.tar.gz", "w:gz") as tar:
        for i, text in reversed(list(enumerate(arch_texts))):  # members out of order: the index orders them
            data = text.encode()
            info = tarfile.TarInfo(f"sgf/match-{i:04d}.sgf")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    packed = pack(tmp_path)
    assert [(p.collection, p.games) for p in packed] == [(match / "sgf" / "match.sgf.gz", 8),
                                                         (archived / "sgf" / "match.sgf.gz", 6)]
    assert [p.name for p in (match / "sgf").iterdir()] == ["match.sgf.gz"]
    assert _same(read_collection(match / "sgf" / "match.sgf.gz"), texts)
    assert sorted(p.name for p in archived.iterdir()) == ["sgf"]
    assert _same(read_collection(archived / "sgf" / "match.sgf.gz"), arch_texts)
    wins = [p.black_wins + p.white_wins + p.other for p in packed]
    assert wins == [8, 6] and packed[0].black_wins == sum(r.startswith("B") for r in (RESULTS * 2)[:8])


def test_a_pack_that_stopped_before_removing_its_files_finishes(ladder):
    lad, pairings = ladder
    key = "g167--gnugo-l1--ladder"
    folder = lad / "sgf" / key
    kept = {p.name: p.read_text() for p in folder.iterdir()}
    pack(lad)
    _write_games(folder, key, [kept[n] for n in sorted(kept)])  # as if the files had not been removed yet
    (packed,) = pack(lad)
    assert packed.games == 12 and not folder.exists()
    _write_games(folder, key, pairings["g167--gnugo-l5--ladder"])  # other games than the collection's
    with pytest.raises(PackError, match="already there with other games"):
        pack(lad)
    assert len(list(folder.iterdir())) == 10 and _same(read_collection(lad / "sgf" / f"{key}.sgf.gz"), pairings[key])


def test_what_cannot_be_packed_is_named_and_left_as_it_was(tmp_path, capsys):
    folder = tmp_path / "sgf"
    _write_games(folder, "match", _records(3, "a", "b"))
    (folder / "match-0001.sgf").write_text("(;GM[1]SZ[9];B[zz])")
    assert main(["sgf", "pack", str(tmp_path)]) == 2
    assert "match-*.sgf: a game that is not readable SGF" in capsys.readouterr().err
    assert len(list(folder.iterdir())) == 3
    (folder / "match-0001.sgf").unlink()
    (folder / "notes.sgf").write_text(_records(1, "a", "b")[0])
    with pytest.raises(PackError, match="notes.sgf: not a one-game file named <name>-<index>.sgf"):
        pack(tmp_path)
    (folder / "notes.sgf").unlink()
    with tarfile.open(tmp_path / "sgf.tar.gz", "w:gz") as tar:
        tar.add(__file__, arcname="sgf/readme.txt")
    with pytest.raises(PackError, match="'sgf/readme.txt' is not an SGF file"):
        pack(tmp_path)
    assert (tmp_path / "sgf.tar.gz").is_file()
    (tmp_path / "sgf.tar.gz").write_bytes(b"not a tar")
    with pytest.raises(PackError, match="sgf.tar.gz: not a readable tar.gz archive"):
        pack(tmp_path)
    assert main(["sgf", "pack", str(tmp_path / "nowhere")]) == 2
    assert "nowhere: not a directory" in capsys.readouterr().err
