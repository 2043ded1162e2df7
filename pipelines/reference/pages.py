"""The generated pages: their paths in the site and the functions that render them."""

from __future__ import annotations

from collections.abc import Callable


def pages() -> dict[str, Callable[[], str]]:
    """Site path (under ``docs/``) -> renderer, for every generated page."""
    from pipelines.reference import bundle, cli, config, environment, tables, wings

    return {
        "reference/cli.md": cli.render,
        "reference/configuration.md": config.render,
        "reference/environment.md": environment.render,
        "reference/bundle.md": bundle.render,
        "reference/tables.md": tables.render,
        "architecture/wings.md": wings.render,
    }
