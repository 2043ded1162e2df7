"""The environment-variable reference: deltasink's own variables and those the code reads.

Three kinds, each found in the code: the process settings (:data:`env.PROCESS_SETTINGS`), the
config overrides (one per key of the config model), and any other variable a module of
``pipelines``, ``quality`` or ``schemas`` reads, found by scanning their source for
``os.environ`` / ``os.getenv`` calls with a literal name.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from pipelines.config import env
from pipelines.reference.config import config_keys
from pipelines.reference.markdown import cell, code, generated_note, table

ROOT = Path(__file__).resolve().parents[2]
#: The packages whose source is scanned for environment reads.
SCANNED = ("pipelines", "quality", "schemas")
#: What each variable read outside deltasink's own namespace does. A variable the scan finds
#: that is missing here fails ``tests/docs`` (so a new one cannot go undocumented).
OTHER_VARIABLES = MappingProxyType({
    "SPARK_REMOTE": "a Spark Connect URL, as PySpark reads it: runs the pipeline as a Connect "
                    "client when the config has no `spark.remote`",
    "DATABRICKS_RUNTIME_VERSION": "set by Databricks: deltasink uses the runtime's session and "
                                  "points JAAS login modules at the runtime's shaded Kafka "
                                  "classes",
    "SPARK_LOCAL_IP": "defaulted to `127.0.0.1` for a local session, unless already set",
    "XDG_CACHE_HOME": "where `~/.cache` is; deltasink's cache is `$XDG_CACHE_HOME/deltasink`",
    "JAVA_HOME": "the Java installation that runs the local JVMs (else `java` on the PATH)",
    "SPARK_CONNECT_MODE_ENABLED": "removed from the environment of the local Spark Connect "
                                  "server, which is a classic application",
    "AWS_REGION": "Amazon MSK with IAM: the cluster's region when neither the bootstrap host "
                  "nor the JAAS config (`awsStsRegion`) names it",
    "AWS_DEFAULT_REGION": "the same, when `AWS_REGION` is not set",
})


@dataclass(frozen=True)
class EnvRead:
    """A literal environment-variable name read in the code."""

    name: str
    where: str
    """``path:line`` of the first read."""


_ENV_CALLS = frozenset({"get", "getenv", "setdefault", "pop", "__getitem__", "__contains__"})


def _environ(node: ast.expr) -> bool:
    """Whether ``node`` is ``os.environ`` (or a name ending in ``environ``)."""
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or \
        (isinstance(node, ast.Name) and node.id == "environ")


def _literal(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _reads(tree: ast.AST) -> list[tuple[str, int]]:
    found = []
    for node in ast.walk(tree):
        name: str | None = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            target = node.func.value
            if (node.func.attr in _ENV_CALLS and _environ(target)) or (
                    node.func.attr == "getenv" and isinstance(target, ast.Name)
                    and target.id == "os"):
                name = _literal(node.args[0])
        elif isinstance(node, ast.Subscript) and _environ(node.value):
            name = _literal(node.slice)
        elif isinstance(node, ast.Compare) and len(node.comparators) == 1 \
                and isinstance(node.ops[0], ast.In | ast.NotIn) and _environ(node.comparators[0]):
            name = _literal(node.left)
        if name:
            found.append((name, getattr(node, "lineno", 0)))
    return found


def environment_reads(root: Path = ROOT) -> list[EnvRead]:
    """Every literal variable name the scanned packages read, first read first, sorted by name."""
    first: dict[str, str] = {}
    for package in SCANNED:
        for file in sorted((root / package).rglob("*.py")):
            for name, line in _reads(ast.parse(file.read_text(encoding="utf-8"))):
                first.setdefault(name, f"{file.relative_to(root).as_posix()}:{line}")
    return [EnvRead(name, where) for name, where in sorted(first.items())]


def override_names() -> list[tuple[str, str]]:
    """(variable, config key) for every config override: one per key of the config model."""
    names = []
    for key in config_keys():
        if key.section:
            continue
        parts = key.key.split(".")
        if len(parts) == 1:
            if parts[0] in env.TOP_LEVEL_KEYS:
                names.append((env.PREFIX + parts[0].upper(), key.key))
            continue
        var = env.PREFIX + env.SEPARATOR.join(p.upper() for p in parts)
        if key.key in ("source.options", "spark.conf"):
            var += env.SEPARATOR + "<KEY>"
        names.append((var, key.key))
    return names


def render() -> str:
    """The environment-variable reference page (Markdown)."""
    reads = {r.name: r.where for r in environment_reads()}
    settings = [[code(name), cell(text), code(reads.get(name, "pipelines/config/env.py"))]
                for name, text in env.PROCESS_SETTINGS.items()]
    overrides = [[code(var), code(key)] for var, key in override_names()]
    others = [[code(name), cell(OTHER_VARIABLES.get(name, "**undocumented**")), code(where)]
              for name, where in reads.items() if not name.startswith(env.PREFIX)]
    return "\n".join([
        "# Environment variables\n",
        generated_note("`pipelines/config/env.py`, the config model, and a scan of "
                       "`pipelines/`, `quality/` and `schemas/` for environment reads"),
        "`DELTASINK_*` variables come in two namespaces that cannot collide "
        "(`pipelines/config/env.py`). Any other `DELTASINK_X` (one underscore) is ignored "
        "with a warning naming it, never its value.\n",
        "## Process settings\n",
        "A single underscore after the prefix. They configure the process, not a pipeline.\n",
        table(["variable", "what it sets", "read in"], settings),
        "## Config overrides\n",
        "A double underscore between the parts of a key: `DELTASINK_<SECTION>__<KEY>`. Values "
        "are read as YAML scalars (`true`, `10`), except under `source.options` and "
        "`spark.conf`, where they stay strings and the key's underscores become dots "
        "(`DELTASINK_SOURCE__OPTIONS__SASL_JAAS_CONFIG` sets `sasl.jaas.config`). An override "
        "of a key the model does not have is an error naming the variable (exit 2). The three "
        "top-level keys keep single-part names.\n",
        table(["variable", "config key"], overrides),
        "## Other variables the code reads\n",
        table(["variable", "effect", "read in"], others),
    ])
