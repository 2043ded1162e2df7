"""Small Markdown helpers shared by the reference renderers."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

_RST_LITERAL = re.compile(r"``(.+?)``")


def cell(text: str) -> str:
    """``text`` made safe for one Markdown table cell: one line, pipes escaped, RST literals
    (````x````) as Markdown code spans."""
    one_line = " ".join(text.split())
    return _RST_LITERAL.sub(r"`\1`", one_line).replace("|", "\\|")


def code(text: str) -> str:
    """``text`` as an inline code span (pipes escaped for tables)."""
    return f"`{text}`".replace("|", "\\|")


def table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A Markdown table; cells are used as given (pass them through :func:`cell`)."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def generated_note(source: str) -> str:
    """The line that opens every generated page, naming what it is generated from."""
    return (f"!!! note \"Generated\"\n    This page is generated from {source} when the site is "
            "built; it cannot disagree with the code.\n")
