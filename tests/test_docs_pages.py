"""The task pages of docs/ read commands first and in short paragraphs: each opens, within its first 15
lines, with a command block, and no paragraph of prose runs over 8 lines (tables, code blocks and headings
are not prose; each list item is a paragraph of its own)."""
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGES = ["campaigns.md", "recipes.md", "performance.md", "strength.md"]
MAX_LINES = 8
OPENING_LINES = 15
COMMAND = re.compile(r"`(make|zero|python|prefect|taskset|bash|git) [^`]+`")
ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


def paragraphs(text: str) -> list[tuple[int, list[str]]]:
    """(first line number, lines) of each prose paragraph of a Markdown text."""
    out: list[tuple[int, list[str]]] = []
    current: list[str] = []
    start = 0
    fenced = False

    def close() -> None:
        nonlocal current
        if current:
            out.append((start, current))
        current = []

    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("```"):
            close()
            fenced = not fenced
            continue
        prose = stripped and not (
            fenced
            or stripped.startswith(("|", "#", "<!--", "!["))
            or (line.startswith("    ") and not current)  # an indented code block
        )
        if not prose:
            close()
            continue
        if ITEM.match(line):
            close()
        if not current:
            start = number
        current.append(line)
    close()
    return out


def long_paragraphs(text: str) -> list[str]:
    return [f"line {n}: {len(lines)} lines" for n, lines in paragraphs(text) if len(lines) > MAX_LINES]


def opens_with_a_command(text: str) -> bool:
    head = text.splitlines()[:OPENING_LINES]
    return any(line.lstrip().startswith("```") for line in head) or any(COMMAND.search(line) for line in head)


def test_a_long_paragraph_is_found_and_lists_tables_and_code_are_not_prose():
    long = "\n".join(f"word {i}" for i in range(9))
    assert long_paragraphs(f"# Title\n\n{long}\n") == ["line 3: 9 lines"]
    items = "\n".join(f"- item {i}\n  its second line" for i in range(6))
    table = "\n".join("| a | b |" for _ in range(20))
    code = "```bash\n" + "\n".join("make run" for _ in range(20)) + "\n```"
    assert long_paragraphs(f"{items}\n\n{table}\n\n{code}\n") == []


def test_an_opening_without_a_command_is_found():
    assert not opens_with_a_command("# Title\n\n" + "Prose about the page.\n" * 20)
    assert opens_with_a_command("# Title\n\n```bash\nmake campaign LINE=go-9\n```\n")
    assert opens_with_a_command("# Title\n\nRun `make campaign LINE=go-9` to train.\n")


@pytest.mark.parametrize("page", PAGES)
def test_the_page_opens_with_its_commands(page):
    assert opens_with_a_command((DOCS / page).read_text()), f"docs/{page}: no command in its first lines"


@pytest.mark.parametrize("page", PAGES)
def test_no_paragraph_of_the_page_runs_over_eight_lines(page):
    assert long_paragraphs((DOCS / page).read_text()) == []
