"""Markdown pages as the docs harness reads them (tests/docs/runbook.py): fenced blocks, the ``sh runnable``
marker, and each runnable block's commands with their ``# expect:`` / ``# eventually:`` lines.

A command runs on from a line ending in ``\\`` and through the bodies of its here-documents; other comment lines
and blank lines separate commands.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHELL_LANGS = frozenset({"sh", "bash", "shell", "console", "zsh"})
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)\s*(.*)$")
_EXPECT = re.compile(r"^#\s*(expect|eventually):\s?(.*)$")
_HEREDOC = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\2")


@dataclass(frozen=True)
class Block:
    """A fenced code block of a Markdown page."""

    page: str  # relative to the repository root
    line: int  # 1-based line of the opening fence
    lang: str
    attrs: tuple[str, ...]
    text: str

    @property
    def runnable(self) -> bool:
        return self.lang in SHELL_LANGS and "runnable" in self.attrs

    @property
    def needs(self) -> tuple[str, ...]:
        return tuple(a.removeprefix("needs=") for a in self.attrs if a.startswith("needs="))

    @property
    def first_command(self) -> str:
        return next((ln.strip() for ln in self.text.splitlines() if ln.strip()), "")


@dataclass(frozen=True)
class Expect:
    kind: str  # "expect" or "eventually"
    pattern: str
    line: int


@dataclass
class Step:
    command: str
    line: int  # 1-based line in the page
    expects: list[Expect] = field(default_factory=list)


def blocks(page: Path, root: Path = REPO) -> list[Block]:
    """Every fenced block of a Markdown file, in order."""
    found: list[Block] = []
    lines = page.read_text().splitlines()
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        fence, lang, rest = opening.groups()
        end = _closing(lines, i + 1, fence)
        body = "\n".join(lines[i + 1 : end])
        found.append(Block(_relative(page, root), i + 1, lang.lower(), tuple(rest.split()), body))
        i = end + 1
    return found


def _closing(lines: list[str], start: int, fence: str) -> int:
    for j in range(start, len(lines)):
        stripped = lines[j].strip()
        if stripped.startswith(fence[0] * len(fence)) and set(stripped) == {fence[0]}:
            return j
    return len(lines)


def _relative(page: Path, root: Path) -> str:
    try:
        return str(page.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(page)


def steps(block: Block) -> list[Step]:
    """The block's commands (continuation lines and here-documents joined), each with its expectations."""
    lines = block.text.splitlines()
    out: list[Step] = []
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        expect = _EXPECT.match(stripped)
        if expect:
            if not out:
                raise ValueError(f"{block.page}:{block.line + 1 + i}: an expectation before any command")
            out[-1].expects.append(Expect(expect[1], expect[2], block.line + 1 + i))
            i += 1
        elif not stripped or stripped.startswith("#"):
            i += 1
        else:
            end = _command_end(lines, i)
            out.append(Step("\n".join(lines[i:end]), block.line + 1 + i))
            i = end
    return out


def _command_end(lines: list[str], start: int) -> int:
    """One past the last line of the command starting at ``start``."""
    i = start
    while i < len(lines):
        line = lines[i]
        i += 1
        for dash, _, word in _HEREDOC.findall(line):
            while i < len(lines) and (lines[i].lstrip("\t") if dash else lines[i]) != word:
                i += 1
            i += 1
        if not line.rstrip().endswith("\\"):
            return min(i, len(lines))
    return i


def pages(root: Path = REPO) -> list[Path]:
    """README.md and docs/*.md."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def runnable_pages(root: Path = REPO) -> list[Path]:
    return [p for p in pages(root) if any(b.runnable for b in blocks(p, root))]


def unmarked(root: Path = REPO) -> list[Block]:
    """Shell blocks the harness does not run: real-cluster sections, or omissions to look at."""
    return [b for p in pages(root) for b in blocks(p, root) if b.lang in SHELL_LANGS and not b.runnable]


def listing(root: Path = REPO) -> Iterator[str]:
    """One line per shell block: run or not, where, and its first command."""
    for page in pages(root):
        for block in blocks(page, root):
            if block.lang in SHELL_LANGS:
                mark = "runnable" if block.runnable else "not run "
                yield f"{mark}  {block.page}:{block.line}  {block.first_command[:70]}"
