"""Load a :class:`PipelineConfig` from YAML plus ``DELTASINK_*`` environment overrides."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from pipelines.config import env
from pipelines.config.model import PipelineConfig
from pipelines.config.paths import resolve_relative_paths
from pipelines.errors import ConfigError

_OPTIONAL_SECTIONS = ("quality", "spark", "databricks")


def load_config(path: str | Path, environ: Mapping[str, str] | None = None) -> PipelineConfig:
    """Load and validate a pipeline config.

    Args:
        path: the YAML file.
        environ: the environment to read overrides from (default: ``os.environ``).

    Returns:
        The frozen config, with relative paths resolved against the file's folder.

    Raises:
        ConfigError: the file is missing, is not YAML, has an unknown key or a bad value.
    """
    file = Path(path)
    raw = read_config_file(file)
    environ = os.environ if environ is None else environ
    raw = apply_env_overrides(raw, environ)
    raw = resolve_relative_paths(raw, file.resolve().parent)
    origins = {".".join(path): var for var, path in env.overrides(environ).items()}
    return parse_config(raw, source=str(file), origins=origins)


def read_config_file(file: Path) -> dict[str, Any]:
    """The parsed YAML mapping of a config file, before overrides and path resolution.

    Raises:
        ConfigError: the file is missing, unreadable, not YAML or not a mapping.
    """
    if file.is_dir():
        raise ConfigError(f"{file} is a folder, not a config file (pass --config PATH to a "
                          "YAML file)")
    if not file.is_file():
        raise ConfigError(f"config file not found: {file} (pass --config PATH to a YAML file)")
    try:
        raw = yaml.load(file.read_text(encoding="utf-8"), Loader=_StrictLoader)  # a SafeLoader
    except yaml.YAMLError as exc:
        raise ConfigError(f"{file}: not valid YAML{_yaml_problem(exc)}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{file}: not UTF-8 text (byte {exc.start}); save the config file "
                          "as UTF-8") from None
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read the config file: "
                          f"{exc.strerror or exc}") from None
    if raw is None:
        raise ConfigError(f"{file}: the config file is empty (or only comments); "
                          "`deltasink init` writes a starter config")
    if not isinstance(raw, dict):
        raise ConfigError(f"{file}: expected a mapping of keys at the top level, found a "
                          f"{_yaml_kind(raw)}")
    # An optional section whose keys are all commented out reads as null: it means "defaults".
    raw = {k: v for k, v in raw.items() if not (v is None and k in _OPTIONAL_SECTIONS)}
    return raw


class _StrictLoader(yaml.SafeLoader):
    """YAML's safe loader, but a key given twice in one mapping is an error.

    Plain YAML keeps the last value silently: ``name:`` twice, or two ``target:`` sections
    after a merge of two files, would run a pipeline nobody wrote.
    """

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)  # type: ignore[no-untyped-call]
            try:
                duplicate = key in seen
            except TypeError:  # an unhashable key: SafeLoader reports it below
                break
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """One line for a YAML error: where (line, column) and what, without the quoted source."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    context = getattr(exc, "context", None)
    opened = getattr(exc, "context_mark", None)
    if context and opened is not None and (mark is None or opened.line != mark.line):
        context += f" from line {opened.line + 1}"
    return f"{where}: {problem}" + (f" ({context})" if context else "")


def _yaml_kind(value: object) -> str:
    return {list: "list", str: "string", int: "number", float: "number",
            bool: "boolean"}.get(type(value), type(value).__name__)


def parse_config(raw: Mapping[str, Any], source: str = "<config>",
                 origins: Mapping[str, str] | None = None) -> PipelineConfig:
    """Validate an already-parsed mapping (no env overrides, no path resolution).

    Args:
        raw: the config mapping.
        source: where it came from, named in error messages.
        origins: dotted key -> the environment variable that set it, named in error messages.

    Returns:
        The frozen config.

    Raises:
        ConfigError: naming each bad key and ``source``.
    """
    try:
        return PipelineConfig.model_validate({**raw, "config_file": source})
    except ValidationError as exc:
        raise ConfigError(f"{source}: invalid config:\n" + _describe(exc, origins or {})) from None


def _describe(exc: ValidationError, origins: Mapping[str, str]) -> str:
    lines = []
    for err in exc.errors():
        key = ".".join(str(p) for p in err["loc"]) or "(top level)"
        if err["type"] == "extra_forbidden":
            line = f"  - unknown key '{key}'"
        elif err["type"] == "missing":
            line = f"  - missing required key '{key}'"
        else:
            # Never echo the input value: it may be a secret.
            line = f"  - {key}: {err['msg']}"
        unknown = err["type"] == "extra_forbidden"  # DELTASINK_FOO__BAR: the key 'foo' is unknown
        var = next((v for path, v in origins.items() if path == key
                    or key.startswith(path + ".") or (unknown and path.startswith(key + "."))),
                   None)
        lines.append(line + (f" (set by environment variable {var})" if var else ""))
    return "\n".join(lines)


def apply_env_overrides(raw: Mapping[str, Any], environ: Mapping[str, str]) -> dict[str, Any]:
    """Overlay ``DELTASINK_A__B__C=value`` variables onto the mapping.

    Only config overrides count (see :mod:`pipelines.config.env`): process settings such as
    ``DELTASINK_SPARK_LOG`` are not config keys, and other ``DELTASINK_X`` are ignored.
    Path segments are lower-cased; under ``source.options`` and ``spark.conf`` underscores become
    dots (``SPARK_EXECUTOR_MEMORY`` is ``spark.executor.memory``).
    Values are parsed as YAML scalars, so ``true`` and ``10`` keep their types.

    Args:
        raw: the mapping from the file (not modified).
        environ: the environment.

    Returns:
        A new mapping with the overrides applied.
    """
    out: dict[str, Any] = _deep_copy(raw)
    for var, parts in env.overrides(environ).items():
        value = environ[var]
        if parts[:2] in (["source", "options"], ["spark", "conf"]) and len(parts) == 3:
            parts[2] = parts[2].replace("_", ".")
            parsed: Any = value  # options are strings, secrets are never re-typed
        else:
            try:
                parsed = yaml.safe_load(value) if value else value
            except yaml.YAMLError:  # never echo the value: it may be a secret
                raise ConfigError(f"environment variable {var}: not a valid YAML value") from None
        holder = out
        for part in parts[:-1]:
            nxt = holder.setdefault(part, {})
            if not isinstance(nxt, dict):
                raise ConfigError(f"environment variable {var}: '{part}' is not a section")
            holder = nxt
        holder[parts[-1]] = parsed
    return out


def _deep_copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _deep_copy(v) for k, v in value.items()}
    return value
