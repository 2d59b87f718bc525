"""docs/ keeps records, not bulk bytes: no networks, games as one SGF collection a match or pairing."""
import collections
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAX_FILES_A_FOLDER = 50  # docs/ held 13,527 files when every game was a file of its own, hundreds a folder


def tracked(under: str) -> list[str]:
    out = subprocess.run(["git", "ls-files", under], cwd=REPO, capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_docs_holds_no_network_and_no_loose_game():
    files = tracked("docs")
    assert [f for f in files if f.endswith((".pt", ".pth", ".ckpt"))] == []  # docs/networks.md names them
    assert [f for f in files if f.endswith((".sgf", ".tar.gz", ".tgz"))] == []  # `zero sgf pack docs` packs them
    folders = collections.Counter(str(Path(f).parent) for f in files)
    # a ladder's pairing in progress is one games.jsonl (zero.pairings.PartialPairing), not a file a game
    assert {d: n for d, n in folders.items() if n > MAX_FILES_A_FOLDER} == {}
