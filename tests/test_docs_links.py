"""Every relative link in the repository's Markdown resolves: the file exists, and a #fragment names one of
its headings (GitHub's anchors: lower case, punctuation dropped, spaces as hyphens)."""
import functools
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.MULTILINE)


def anchor(heading: str) -> str:
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def prose(path: Path) -> str:
    """A Markdown file's text without its fenced code blocks, whose brackets and #s are not links or headings."""
    return re.sub(r"^```.*?^```", "", path.read_text(), flags=re.MULTILINE | re.DOTALL)


@functools.cache
def anchors(path: Path) -> set[str]:
    """The anchors of a Markdown file's headings (read once a file: many links point into the same one)."""
    text = prose(path)
    seen: dict[str, int] = {}
    out = set()
    for heading in HEADING.findall(text):
        a = anchor(heading)
        n = seen.get(a, 0)
        seen[a] = n + 1
        out.add(a if n == 0 else f"{a}-{n}")
    return out


def markdown_files() -> list[Path]:
    names = subprocess.run(["git", "ls-files", "*.md"], cwd=REPO, capture_output=True, text=True, check=True)
    return [REPO / n for n in names.stdout.split()]


def broken_links(path: Path) -> list[str]:
    text = prose(path)
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, fragment = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists():
            broken.append(f"{target} (no such file)")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
            broken.append(f"{target} (no such heading)")
    return broken


def test_the_anchor_of_a_heading_is_githubs():
    assert anchor("9x9 Go: `models/go-9.pt`") == "9x9-go-modelsgo-9pt"
    assert anchor("What you see after `make run`") == "what-you-see-after-make-run"
    assert anchor("Measured, 9x9 Go: who passes") == "measured-9x9-go-who-passes"


def test_a_broken_link_is_found(tmp_path):
    (tmp_path / "a.md").write_text("# Title here\n[ok](#title-here) [file](b.md) [gone](c.md) [bad](#nowhere)\n")
    (tmp_path / "b.md").write_text("text\n")
    assert broken_links(tmp_path / "a.md") == ["c.md (no such file)", "#nowhere (no such heading)"]


def test_every_relative_link_in_the_repositorys_markdown_resolves():
    broken = {str(p.relative_to(REPO)): b for p in markdown_files() if (b := broken_links(p))}
    assert broken == {}
