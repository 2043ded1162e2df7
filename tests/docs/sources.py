"""What the docs tests read: the site's hand-written Markdown, the README, and their blocks."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<lang>[\w+-]*)")
_INLINE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")


@dataclass(frozen=True)
class Block:
    """A fenced code block of a Markdown file."""

    file: Path
    line: int
    lang: str
    text: str

    @property
    def where(self) -> str:
        """``path:line``, relative to the repository."""
        return f"{self.file.relative_to(ROOT).as_posix()}:{self.line}"


def markdown_files(root: Path = ROOT) -> list[Path]:
    """The README and every hand-written page of the site."""
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def blocks(file: Path) -> Iterator[Block]:
    """Every fenced code block of ``file``, dedented by its fence's indentation."""
    lines = file.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        start = _FENCE.match(lines[i])
        if not start:
            i += 1
            continue
        prefix, fence = start["indent"], start["fence"]
        body, j = [], i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            line = lines[j]
            body.append(line[len(prefix):] if line.startswith(prefix) else line.lstrip())
            j += 1
        yield Block(file, i + 1, start["lang"].lower(), "\n".join(body) + "\n")
        i = j + 1


def prose(file: Path) -> str:
    """``file`` without its fenced code blocks."""
    text = file.read_text(encoding="utf-8")
    out, inside = [], None
    for line in text.splitlines():
        start = _FENCE.match(line)
        if start and inside is None:
            inside = start["fence"]
        elif inside is not None and line.strip().startswith(inside):
            inside = None
        elif inside is None:
            out.append(line)
    return "\n".join(out)


def inline_code(file: Path) -> list[str]:
    """Every inline code span of ``file``'s prose."""
    return _INLINE.findall(prose(file))


def command_lines(block: Block) -> Iterator[tuple[int, str, list[str]]]:
    """The ``deltasink ...`` command lines of a block: (line number in the file, the line, its
    arguments without ``deltasink``), with ``$ `` prompts, comments and anything after ``&``,
    ``|`` or ``;`` removed."""
    for number, line in enumerate(block.text.splitlines(), start=block.line + 1):
        stripped = line.strip().removeprefix("$ ")
        if not stripped.startswith("deltasink "):
            continue
        words = shlex.split(stripped, comments=True)
        for stop in ("&", "|", "&&", ";", "||"):
            if stop in words:
                words = words[:words.index(stop)]
        yield number, stripped, words[1:]
