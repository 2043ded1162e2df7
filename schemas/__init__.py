"""The registry of event schemas: one module per schema, each defining ``SCHEMA``.

Adding a schema means adding ``schemas/<name>.py``; nothing else changes. A pipeline may instead
declare its schema in YAML (:mod:`schemas.loader`); :func:`resolve_schema` takes either.
"""

from __future__ import annotations

import importlib
import pkgutil

from pipelines.errors import SchemaError
from schemas.base import EventSchema, FieldSpec

__all__ = ["EventSchema", "FieldSpec", "available_schemas", "get_schema", "resolve_schema"]

_NOT_SCHEMAS = {"base", "changes", "loader"}


def available_schemas() -> list[str]:
    """The names of all registered schemas."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name not in _NOT_SCHEMAS)


def get_schema(name: str) -> EventSchema:
    """Look up a registered schema by name.

    Args:
        name: the module name under ``schemas/``, e.g. ``events_v1``.

    Returns:
        The module's ``SCHEMA``.

    Raises:
        SchemaError: no such schema (the message lists the known ones).
    """
    if name not in available_schemas():
        known = ", ".join(available_schemas())
        raise SchemaError(f"unknown schema '{name}'; registered schemas: {known}")
    module = importlib.import_module(f"schemas.{name}")
    schema = getattr(module, "SCHEMA", None)
    if not isinstance(schema, EventSchema):
        raise SchemaError(f"schemas/{name}.py does not define SCHEMA = EventSchema(...)")
    return schema


def resolve_schema(source: object) -> EventSchema:
    """The schema a config's ``schema:`` value names.

    Args:
        source: a registered name (``events_v1``), a YAML mapping, or a YAML file's path
            (absolute: the config loader resolves it against the config file's folder).

    Raises:
        SchemaError: unknown, unreadable or invalid.
    """
    from schemas.loader import is_schema_file, load_schema_file, schema_from_mapping

    if isinstance(source, dict):
        return schema_from_mapping(source)
    if not isinstance(source, str):
        raise SchemaError("schema must be a registered name, a mapping or a YAML file's path")
    if is_schema_file(source):
        return load_schema_file(source)
    return get_schema(source)
