"""The architecture page's picture: the package's wings and which wings each imports.

A wing is a folder of ``pipelines/`` (``cli/``, ``sink/``, ...), a module at its top
(``run.py``, ``tables.py``, ...), or one of the top-level packages ``quality`` and ``schemas``.
The arrows are read from the imports (``ast``), so the picture is the code's.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from pipelines.reference.markdown import code, generated_note, table

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("pipelines", "quality", "schemas")


@dataclass(frozen=True)
class Wing:
    """One wing: its name, files, lines, and the wings it imports."""

    name: str
    files: int
    lines: int
    imports: tuple[str, ...]


def _wing_of(module: str) -> str | None:
    """The wing a dotted module name belongs to (``pipelines.sink.merge`` -> ``sink``)."""
    parts = module.split(".")
    if parts[0] in ("quality", "schemas"):
        return parts[0]
    if parts[0] != "pipelines" or len(parts) < 2:
        return None
    return parts[1]


def _imported(tree: ast.AST, package: str) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level:
            found.add(package)
    return found


def wings(root: Path = ROOT) -> list[Wing]:
    """Every wing with its size and the other wings it imports, sorted by name."""
    files: dict[str, list[Path]] = {}
    for package in PACKAGES:
        for file in sorted((root / package).rglob("*.py")):
            module = ".".join(file.relative_to(root).with_suffix("").parts)
            wing = _wing_of(module.removesuffix(".__init__"))
            if wing and wing != "__init__":
                files.setdefault(wing, []).append(file)
    known = set(files)
    result = []
    for name, paths in sorted(files.items()):
        targets: set[str] = set()
        for path in paths:
            for module in _imported(ast.parse(path.read_text(encoding="utf-8")), name):
                wing = _wing_of(module)
                if wing in known and wing != name:
                    targets.add(wing)
        lines = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in paths)
        result.append(Wing(name, len(paths), lines, tuple(sorted(targets))))
    return result


def _label(name: str) -> str:
    return name if name in ("quality", "schemas") else f"pipelines/{name}"


def render() -> str:
    """The wings section of the architecture page (Markdown, with a Mermaid graph)."""
    found = wings()
    edges = [f"    {w.name.replace('_', '')} --> {t.replace('_', '')}"
             for w in found for t in w.imports]
    nodes = [f"    {w.name.replace('_', '')}[\"{_label(w.name)}\"]" for w in found]
    rows = [[code(_label(w.name)), str(w.files), str(w.lines),
             ", ".join(code(t) for t in w.imports)] for w in found]
    return "\n".join([
        "# Wings and imports\n",
        generated_note("the imports of `pipelines/`, `quality/` and `schemas/`"),
        "Each wing is a folder of `pipelines/`, a module at its top, or a top-level package. "
        "An arrow A → B means a module of A imports one of B.\n",
        "```mermaid\ngraph TD\n" + "\n".join(nodes + edges) + "\n```\n",
        table(["wing", "files", "lines", "imports"], rows),
    ])
