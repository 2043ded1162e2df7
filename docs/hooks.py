"""mkdocs hook: adds the reference pages rendered from the code (``pipelines.reference``)."""

from __future__ import annotations

from typing import Any

from mkdocs.structure.files import File, Files

from pipelines.reference.pages import pages


def on_files(files: Files, config: Any) -> Files:
    """Add every generated page to the build, rendered now from the code."""
    for path, render in pages().items():
        files.append(File.generated(config, path, content=render()))
    return files
