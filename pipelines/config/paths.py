"""Where a config's paths point: defaults filled in, relative paths made absolute.

Every local path of a config (and a schema file) is relative to the config file's folder, never
to the working directory; a path key left out gets its default first and is resolved the same
way. The loader calls :func:`resolve_relative_paths` before the model is built.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from pipelines.config.model import PipelineConfig, QualityConfig
from schemas.loader import is_schema_file

#: The config keys that hold a local path (section "" is the top level).
PATH_KEYS: tuple[tuple[str, str], ...] = (
    ("target", "path"),
    ("target", "quarantine_path"),
    ("target", "deletes_path"),
    ("target", "changes_path"),
    ("quality", "docs_dir"),
    ("quality", "results_path"),
    ("quality", "metrics_path"),
    ("", "checkpoint"),
    ("source.avro", "schema_file"),
)
#: Path keys with a default, and the key that replaces the path when set (a catalog table).
#: (``target.quarantine_path``'s default is derived from the target, see ``quarantine_ref``.)
PATH_DEFAULTS: tuple[tuple[str, str, str | None], ...] = (
    ("quality", "docs_dir", None),
    ("quality", "results_path", "results_table"),
    ("quality", "metrics_path", "metrics_table"),
)
_SECTIONS: dict[str, type[BaseModel]] = {"quality": QualityConfig}


def resolve_relative_paths(raw: dict[str, Any], base: Path) -> dict[str, Any]:
    """Make local path values absolute, relative to ``base`` (the config file's folder).

    A path key left out gets its default first, which is then resolved like a value written
    in the file (``quality.results_path`` becomes ``<base>/lake/_quality/results``), so no
    path depends on the working directory. URIs (``s3://``, ``abfss://``, ``dbfs:/``) and
    absolute paths are left alone.

    Args:
        raw: the parsed YAML mapping (not modified).
        base: the folder that relative paths are relative to.

    Returns:
        A copy of ``raw`` with defaults filled in and relative paths made absolute.
    """
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in raw.items()}
    if isinstance(out.get("source"), dict) and isinstance(out["source"].get("avro"), dict):
        out["source"]["avro"] = dict(out["source"]["avro"])  # not the caller's mapping
    for section, key, alternative in PATH_DEFAULTS:
        holder = out.setdefault(section, {})
        if isinstance(holder, dict) and key not in holder and not (
                alternative and holder.get(alternative)):
            holder[key] = _SECTIONS[section].model_fields[key].default
    for section, key in PATH_KEYS:
        where: Any = out
        for part in section.split(".") if section else ():
            where = where.get(part) if isinstance(where, dict) else None
        if not isinstance(where, dict):
            continue
        value = where.get(key)
        if isinstance(value, str) and value and ":" not in value and not value.startswith("/"):
            where[key] = str((base / value).resolve())
    schema = out.get("schema")
    if isinstance(schema, str) and is_schema_file(schema) and not schema.startswith("/"):
        out["schema"] = str((base / schema).resolve())
    return out


def is_local(location: str) -> bool:
    """Whether the location is a plain local (or FUSE-mounted) folder rather than a URI."""
    return "://" not in location and not location.startswith(("dbfs:", "file:"))


def locations(config: PipelineConfig) -> list[str]:
    """The folders of a pipeline's tables given by path, and its checkpoint (a catalog table's
    location is the catalog's)."""
    refs = (config.target.ref, config.target.quarantine_ref, config.quality.results_ref,
            config.quality.metrics_ref, *(ref for _, ref in config.companion_tables()))
    return [*(r.path for r in refs if r.path), config.checkpoint]
