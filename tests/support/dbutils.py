"""A local stand-in for Databricks ``dbutils``, and a runner for Databricks source notebooks.

Only what the deltasink notebooks use is provided, with Databricks' semantics:

* ``widgets.text(name, default, label)`` declares a widget; a value passed as a job parameter
  (``base_parameters``) wins over the default; ``widgets.get`` of a name that is neither declared
  nor passed raises :class:`InputWidgetNotDefined`;
* ``secrets.get(scope, key)`` returns a stored secret or raises, and records what was read;
* ``jobs.taskValues.set(key, value)`` records task values (read by a downstream task).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HEADER = "# Databricks notebook source"
CELL_SEPARATOR = "# COMMAND ----------"
_WIDGET_TEXT = re.compile(r"""dbutils\.widgets\.text\(\s*["']([^"']+)["']""")


class InputWidgetNotDefined(Exception):
    """``dbutils.widgets.get`` of a widget that was never declared nor passed."""


class Widgets:
    """``dbutils.widgets``: declared text widgets plus the job's parameters."""

    def __init__(self, parameters: Mapping[str, str] | None = None) -> None:
        self.parameters = dict(parameters or {})
        self.declared: dict[str, str] = {}
        self.labels: dict[str, str] = {}

    def text(self, name: str, defaultValue: str = "", label: str | None = None) -> None:
        self.declared[name] = defaultValue
        self.labels[name] = label or name

    def get(self, name: str) -> str:
        if name in self.parameters:
            return self.parameters[name]
        if name in self.declared:
            return self.declared[name]
        raise InputWidgetNotDefined(f"No input widget named {name} is defined")


class Secrets:
    """``dbutils.secrets``: a dict of ``(scope, key) -> value``."""

    def __init__(self, values: Mapping[tuple[str, str], str] | None = None) -> None:
        self.values = dict(values or {})
        self.read: list[tuple[str, str]] = []

    def get(self, scope: str, key: str) -> str:
        self.read.append((scope, key))
        try:
            return self.values[(scope, key)]
        except KeyError:
            raise KeyError(f"Secret does not exist with scope: {scope} and key: {key}") from None


class TaskValues:
    """``dbutils.jobs.taskValues``."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def set(self, key: str, value: Any) -> None:
        self.values[key] = value


@dataclass
class Jobs:
    """``dbutils.jobs``."""

    taskValues: TaskValues = field(default_factory=TaskValues)


@dataclass
class DBUtils:
    """The ``dbutils`` object a notebook sees."""

    widgets: Widgets = field(default_factory=Widgets)
    secrets: Secrets = field(default_factory=Secrets)
    jobs: Jobs = field(default_factory=Jobs)


def make_dbutils(parameters: Mapping[str, str] | None = None,
                 secrets: Mapping[tuple[str, str], str] | None = None) -> DBUtils:
    """A ``dbutils`` whose job parameters and secrets are given."""
    return DBUtils(widgets=Widgets(parameters), secrets=Secrets(secrets))


def notebook_cells(path: Path) -> list[str]:
    """The cells of a Databricks source notebook (checks the header line)."""
    text = path.read_text(encoding="utf-8")
    first, _, rest = text.partition("\n")
    if first.strip() != HEADER:
        raise ValueError(f"{path}: first line is not '{HEADER}'")
    return [cell.strip("\n") for cell in rest.split(f"\n{CELL_SEPARATOR}\n")]


def is_markdown(cell: str) -> bool:
    """Whether a cell is a ``%md`` cell (every line is a ``# MAGIC`` line)."""
    lines = [ln for ln in cell.splitlines() if ln.strip()]
    return bool(lines) and all(ln.startswith("# MAGIC") for ln in lines)


def declared_widgets(path: Path) -> list[str]:
    """The names of the ``dbutils.widgets.text(...)`` calls in a notebook, in order."""
    return _WIDGET_TEXT.findall(path.read_text(encoding="utf-8"))


def run_notebook(path: Path, dbutils: DBUtils, spark: Any) -> dict[str, Any]:
    """Execute a notebook's code cells in order, as Databricks would, in one namespace.

    Args:
        path: the ``.py`` source notebook.
        dbutils: the stand-in.
        spark: the SparkSession, exposed as the ``spark`` global.

    Returns:
        The notebook's globals after the last cell.
    """
    namespace: dict[str, Any] = {"__name__": "__main__", "dbutils": dbutils, "spark": spark}
    for index, cell in enumerate(notebook_cells(path)):
        if is_markdown(cell):
            continue
        code = compile(cell, f"{path.name}[cell {index}]", "exec")
        exec(code, namespace)
    return namespace
