"""Folders of one-game SGF files (and tar archives of them) packed into gzip-compressed SGF collections.

Matches and ladders wrote one file a game, `<name>-<index>.sgf`; they now write one collection a match or
pairing, `<name>.sgf.gz` (zero.sgf). `zero sgf pack DIR` turns every older folder under DIR into that layout:

    sgf/<a>--<b>--<label>/<a>--<b>--<label>-0000.sgf ...   ->  sgf/<a>--<b>--<label>.sgf.gz   (a ladder pairing)
    sgf/match-0000.sgf ...                                  ->  sgf/match.sgf.gz               (a match)
    sgf.tar.gz holding sgf/match-0000.sgf ...               ->  sgf/match.sgf.gz

A folder named after its games' `<name>` becomes `<name>.sgf.gz` beside it, the games of any other folder
go into `<name>.sgf.gz` inside it. Games keep their order (by index) and their text, byte for byte. Each
collection is written atomically and read back, and only when it holds the same games (moves, players,
result and every root property) are the files or the archive it came from removed; a pack that was
stopped between the two finishes on the next run. Folders whose names start with `.` (a ladder's pairing
still being written) are left alone.
"""

from __future__ import annotations

import re
import tarfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from zero.sgf import COLLECTION_SUFFIX, SgfError, parse_sgf, read_collection, write_collection

_GAME_FILE = re.compile(r"^(?P<name>.+)-(?P<index>\d+)\.sgf$")
_ARCHIVE = (".tar.gz", ".tgz")


class PackError(ValueError):
    """A folder or archive that cannot be packed: the message names it and says why."""


@dataclass
class Packed:
    """One collection written: where from, how many games and their results (black wins, white wins, other)."""

    source: Path
    collection: Path
    games: int
    black_wins: int
    white_wins: int
    other: int  # draws and games without a result


def pack(root: str | Path) -> list[Packed]:
    """Pack every folder of one-game SGF files and every tar archive of them under `root` (itself included)."""
    root = Path(root)
    if not root.is_dir():
        raise PackError(f"{root}: not a directory")
    out = []
    for folder in sorted([root, *(p for p in root.rglob("*") if p.is_dir())]):
        if any(part.startswith(".") for part in folder.relative_to(root).parts):
            continue
        if any(folder.glob("*.sgf")):
            out += pack_folder(folder)
    for archive in sorted(p for p in root.rglob("*") if p.is_file() and p.name.endswith(_ARCHIVE)):
        if not any(part.startswith(".") for part in archive.relative_to(root).parts):
            out += pack_archive(archive)
    return out


def pack_folder(folder: str | Path) -> list[Packed]:
    """Pack the one-game SGF files of `folder` (one collection for each `<name>`), then remove them."""
    folder = Path(folder)
    files = sorted(folder.glob("*.sgf"))
    groups = _group(folder, [(p.name, p) for p in files])
    out = []
    for name, members in groups.items():
        texts = [_read(path) for _, path in members]
        out.append(_write_checked(folder, name, texts, f"{folder}/{name}-*.sgf"))
        for _, path in members:
            path.unlink()
    if folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
    return out


def pack_archive(archive: str | Path) -> list[Packed]:
    """Pack the one-game SGF files of a tar archive as if unpacked beside it, then remove the archive.

    The archive is read in memory, never unpacked to disk; one holding anything but SGF files and folders,
    or a path outside its folder, is refused (PackError), so nothing it holds is lost."""
    archive = Path(archive)
    try:
        with tarfile.open(archive, "r:gz") as tar:
            by_folder: dict[Path, list[tuple[str, str]]] = {}
            for member in tar.getmembers():
                path = PurePosixPath(member.name)
                if path.is_absolute() or ".." in path.parts:
                    raise PackError(f"{archive}: {member.name!r} is outside the archive's folder")
                if member.isdir():
                    continue
                if not (member.isfile() and path.suffix == ".sgf"):
                    raise PackError(f"{archive}: {member.name!r} is not an SGF file; unpack it by hand")
                data = tar.extractfile(member).read()
                by_folder.setdefault(archive.parent.joinpath(*path.parent.parts), []).append(
                    (path.name, _decode(data, f"{archive}:{member.name}")))
    except (tarfile.TarError, OSError, EOFError) as e:
        raise PackError(f"{archive}: not a readable tar.gz archive ({e})") from None
    if not by_folder:
        raise PackError(f"{archive}: holds no SGF file")
    out = []
    for folder, members in sorted(by_folder.items()):
        for name, group in _group(folder, members).items():
            out.append(_write_checked(folder, name, [text for _, text in group], f"{archive}"))
    archive.unlink()
    return out


def _group(folder: Path, members: list[tuple[str, object]]) -> dict[str, list[tuple[int, object]]]:
    """Files `<name>-<index>.sgf` by name, each group in index order; PackError names a file that is not."""
    groups: dict[str, list[tuple[int, object]]] = {}
    for file_name, item in members:
        m = _GAME_FILE.match(file_name)
        if m is None:
            raise PackError(f"{folder / file_name}: not a one-game file named <name>-<index>.sgf")
        groups.setdefault(m["name"], []).append((int(m["index"]), item))
    for name, group in groups.items():
        group.sort(key=lambda pair: pair[0])
        indexes = [i for i, _ in group]
        if len(set(indexes)) != len(indexes):
            raise PackError(f"{folder}: two files of {name} have the same index")
    return groups


def collection_path(folder: Path, name: str) -> Path:
    """Where the games `<name>-<index>.sgf` of `folder` go: `<name>.sgf.gz` beside a folder named `<name>`
    (a ladder pairing's), else inside it (a match's)."""
    return (folder.parent if folder.name == name else folder) / f"{name}{COLLECTION_SUFFIX}"


def _write_checked(folder: Path, name: str, texts: list[str], source: str) -> Packed:
    """Write the collection (or find it written by a pack that stopped before removing its sources) and
    check that it reads back as the same games."""
    try:
        games = [parse_sgf(t) for t in texts]
    except SgfError as e:
        raise PackError(f"{source}: a game that is not readable SGF ({e})") from None
    path = collection_path(folder, name)
    existed = path.exists()
    if not existed:
        write_collection(path, texts)
    try:
        back = read_collection(path)
    except SgfError as e:
        raise PackError(f"{path}: {'already there and ' if existed else ''}not readable ({e})") from None
    if [_facts(g) for g in back] != [_facts(g) for g in games]:
        raise PackError(f"{path}: already there with other games than {source}" if existed else
                        f"{path}: does not read back as the {len(games)} games of {source}")
    winners = [(g.result or "").strip().upper()[:1] for g in games]
    return Packed(Path(folder), path, len(games), winners.count("B"), winners.count("W"),
                  len(games) - winners.count("B") - winners.count("W"))


def _facts(g) -> tuple:
    return g.game, g.height, g.width, g.komi, g.result, g.black, g.white, g.moves, g.properties


def _read(path: Path) -> str:
    return _decode(path.read_bytes(), str(path))


def _decode(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise PackError(f"{where}: not UTF-8 text ({e})") from None
