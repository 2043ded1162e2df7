"""Load a :class:`PipelineConfig` from YAML plus ``DELTASINK_*`` environment overrides."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from pipelines.config.model import PipelineConfig, resolve_relative_paths
from pipelines.errors import ConfigError

ENV_PREFIX = "DELTASINK_"
_NOT_OVERRIDABLE = {"CONFIG", "FAULT", "HOME", "LOG_LEVEL", "JVM_CACHE"}


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
    if not file.is_file():
        raise ConfigError(f"config file not found: {file} (pass --config PATH to a YAML file)")
    try:
        raw = yaml.safe_load(file.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{file}: not valid YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{file}: expected a mapping of keys at the top level")
    raw = apply_env_overrides(raw, os.environ if environ is None else environ)
    raw = resolve_relative_paths(raw, file.resolve().parent)
    return parse_config(raw, source=str(file))


def parse_config(raw: Mapping[str, Any], source: str = "<config>") -> PipelineConfig:
    """Validate an already-parsed mapping (no env overrides, no path resolution).

    Args:
        raw: the config mapping.
        source: where it came from, named in error messages.

    Returns:
        The frozen config.

    Raises:
        ConfigError: naming each bad key and ``source``.
    """
    try:
        return PipelineConfig.model_validate({**raw, "config_file": source})
    except ValidationError as exc:
        raise ConfigError(f"{source}: invalid config:\n" + _describe(exc)) from None


def _describe(exc: ValidationError) -> str:
    lines = []
    for err in exc.errors():
        key = ".".join(str(p) for p in err["loc"]) or "(top level)"
        if err["type"] == "extra_forbidden":
            lines.append(f"  - unknown key '{key}'")
        elif err["type"] == "missing":
            lines.append(f"  - missing required key '{key}'")
        else:
            # Never echo the input value: it may be a secret.
            lines.append(f"  - {key}: {err['msg']}")
    return "\n".join(lines)


def apply_env_overrides(raw: Mapping[str, Any], environ: Mapping[str, str]) -> dict[str, Any]:
    """Overlay ``DELTASINK_A__B__C=value`` variables onto the mapping.

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
    for var, value in sorted(environ.items()):
        if not var.startswith(ENV_PREFIX) or var[len(ENV_PREFIX):] in _NOT_OVERRIDABLE:
            continue
        parts = [p.lower() for p in var[len(ENV_PREFIX):].split("__") if p]
        if not parts:
            continue
        if parts[:2] in (["source", "options"], ["spark", "conf"]) and len(parts) == 3:
            parts[2] = parts[2].replace("_", ".")
            parsed: Any = value  # options are strings, secrets are never re-typed
        else:
            parsed = yaml.safe_load(value) if value else value
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
