"""The ``deltasink`` command: the parser and its dispatch (:mod:`~pipelines.cli.parser`), one
function per subcommand (:mod:`~pipelines.cli.commands`), and the one masked line a failure
prints (:mod:`~pipelines.cli.failures`). ``main`` is the console script's entry point."""

from __future__ import annotations

from pipelines.cli.parser import main

__all__ = ["main"]
