"""Event schemas declared in YAML: inline in the pipeline config, or in a file beside it.

The YAML shape (see README, "Describe your own topic")::

    name: orders_v1
    key: [order_id, line_no]        # a field, several fields, or "kafka.key"
    event_time: updated_at          # a timestamp field, or "kafka.timestamp"
    fields:
      order_id: {type: string, max_length: 64}
      amount: {type: "decimal(12,2)"}
      tags: {type: array, items: string}
      address: {type: struct, fields: {city: {type: string}}}
    headers: {trace_id: trace-id}   # column -> Kafka header name

Every mistake is one :class:`SchemaError` line naming the field and the problem.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from pipelines.errors import SchemaError
from schemas.base import EventSchema, FieldSpec

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_DECIMAL = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$")
_KINDS = ("string", "int", "long", "double", "boolean", "timestamp", "date", "object", "array",
          "struct")
_FIELD_KEYS = {"type", "required", "max_length", "non_empty", "formats", "format", "allowed",
               "items", "fields"}
_SCHEMA_KEYS = {"name", "key", "event_time", "fields", "headers"}
_TIME_FORMATS = {"iso": "iso", "epoch_ms": "epoch_ms", "epoch_s": "epoch_s"}


def is_schema_file(value: str) -> bool:
    """Whether a config's ``schema:`` string names a YAML file (not a registered schema)."""
    return value.endswith((".yaml", ".yml")) or "/" in value


def load_schema_file(path: str | Path) -> EventSchema:
    """Read a YAML schema file.

    Raises:
        SchemaError: the file is missing, not YAML, or not a valid schema.
    """
    file = Path(path)
    try:
        raw = yaml.safe_load(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise SchemaError(f"schema file {file}: cannot read it: {exc}") from None
    except yaml.YAMLError as exc:
        message = str(exc).replace("\n", " ")
        raise SchemaError(f"schema file {file}: not valid YAML: {message}") from None
    return schema_from_mapping(raw, where=f"schema file {file}")


def schema_from_mapping(raw: Any, where: str = "schema") -> EventSchema:
    """Build an :class:`EventSchema` from its YAML mapping.

    Args:
        raw: the parsed YAML (``name``, ``key``, ``event_time``, ``fields``, ``headers``).
        where: where it came from, named in errors.

    Returns:
        The schema.

    Raises:
        SchemaError: one line naming the key or field and the problem.
    """
    if not isinstance(raw, Mapping):
        raise SchemaError(f"{where}: expected a mapping with name, key, event_time and fields")
    unknown = sorted(set(raw) - _SCHEMA_KEYS)
    if unknown:
        raise SchemaError(f"{where}: unknown key(s) {unknown}; expected {sorted(_SCHEMA_KEYS)}")
    for required in ("name", "key", "event_time", "fields"):
        if required not in raw:
            raise SchemaError(f"{where}: missing '{required}'")
    name = raw["name"]
    if not isinstance(name, str) or not _NAME.match(name):
        raise SchemaError(f"{where}: name must be a word of letters, digits and _")
    fields = raw["fields"]
    if not isinstance(fields, Mapping) or not fields:
        raise SchemaError(f"{where}: fields must be a non-empty mapping of field name -> spec")
    specs = tuple(_field(str(k), v, f"{where}: field '{k}'") for k, v in fields.items())
    key = raw["key"]
    if isinstance(key, list) and all(isinstance(k, str) for k in key):
        key = tuple(key)
    elif not isinstance(key, str):
        raise SchemaError(f"{where}: key must be a field name, a list of them, or kafka.key")
    headers = raw.get("headers") or {}
    if not isinstance(headers, Mapping) or not all(
            isinstance(v, str) and v for v in headers.values()):
        raise SchemaError(f"{where}: headers must map column names to Kafka header names")
    for column in headers:
        _check_name(str(column), f"{where}: header column '{column}'")
    try:
        schema = EventSchema(name=name, fields=specs, key=key, time_field=str(raw["event_time"]),
                             headers=tuple((str(c), str(h)) for c, h in headers.items()))
    except ValueError as exc:
        raise SchemaError(f"{where}: {exc}") from None
    for spec in specs:
        if spec.name in schema.keys and not (spec.required and spec.non_empty):
            raise SchemaError(f"{where}: key field '{spec.name}' must be required and non-empty "
                              "(a null or blank key could never be deduplicated)")
    return schema


def _check_name(name: str, where: str) -> None:
    if not _NAME.match(name):
        raise SchemaError(f"{where}: a name must be letters, digits and _, not starting with a "
                          "digit")


def _field(name: str, raw: Any, where: str) -> FieldSpec:
    _check_name(name, where)
    if isinstance(raw, str):  # shorthand: `tags: string`
        raw = {"type": raw}
    if not isinstance(raw, Mapping) or "type" not in raw:
        raise SchemaError(f"{where}: expected a mapping with a type, e.g. {{type: string}}")
    unknown = sorted(set(raw) - _FIELD_KEYS)
    if unknown:
        raise SchemaError(f"{where}: unknown key(s) {unknown}; expected {sorted(_FIELD_KEYS)}")
    kind = str(raw["type"]).strip().lower()
    extra: dict[str, Any] = {}
    decimal = _DECIMAL.match(kind)
    if decimal:
        kind = "decimal"
        extra.update(precision=int(decimal.group(1)), scale=int(decimal.group(2)))
    elif kind not in _KINDS:
        raise SchemaError(f"{where}: unknown type '{raw['type']}'; types are "
                          f"{', '.join(_KINDS)} and decimal(p,s)")
    if kind == "array":
        if "items" not in raw:
            raise SchemaError(f"{where}: an array needs items (e.g. items: string)")
        extra["items"] = _field("item", raw["items"], f"{where} items")
    if kind == "struct":
        children = raw.get("fields")
        if not isinstance(children, Mapping) or not children:
            raise SchemaError(f"{where}: a struct needs fields (a mapping of name -> spec)")
        extra["children"] = tuple(_field(str(k), v, f"{where}.{k}") for k, v in children.items())
    if "format" in raw:
        fmt = raw["format"]
        if fmt not in _TIME_FORMATS:
            raise SchemaError(f"{where}: format must be one of {sorted(_TIME_FORMATS)}")
        extra["time_format"] = fmt
    for key, types in (("required", bool), ("non_empty", bool), ("max_length", int)):
        if key in raw:
            if not isinstance(raw[key], types) or (key == "max_length" and raw[key] < 1):
                raise SchemaError(f"{where}: {key} must be a {types.__name__}"
                                  + (" >= 1" if key == "max_length" else ""))
            extra[key] = raw[key]
    if "allowed" in raw:
        if not isinstance(raw["allowed"], list) or not raw["allowed"]:
            raise SchemaError(f"{where}: allowed must be a non-empty list of values")
        want = str if kind == "string" else int
        if kind in ("string", "int", "long") and any(
                not isinstance(v, want) or isinstance(v, bool) for v in raw["allowed"]):
            raise SchemaError(f"{where}: allowed values of a {kind} field must be "
                              f"{'strings' if want is str else 'integers'}")
        extra["allowed"] = tuple(raw["allowed"])
    if "formats" in raw:
        extra["formats"] = tuple(str(f) for f in raw["formats"])
    try:
        return FieldSpec(name=name, kind=kind, **extra)  # type: ignore[arg-type]
    except ValueError as exc:
        raise SchemaError(f"{where}: {str(exc).split(': ', 1)[-1]}") from None
