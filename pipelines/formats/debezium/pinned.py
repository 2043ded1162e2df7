"""Pinned columns (``schema.fields``) as the Connect schema a schema-less record is decoded with.

With the JSON converter's ``schemas.enable=false`` a record carries values only; each pinned
type names how Debezium encodes it (``schemas/changes.py``), so the pins become one Connect
struct schema, decoded by the same code as a learned one.
"""

from __future__ import annotations

from collections.abc import Iterable

from pipelines.formats.debezium import connect
from pipelines.formats.debezium.connect import ConnectField
from schemas.changes import PinnedField

_PRIMITIVE = {"tinyint": "int8", "smallint": "int16", "int": "int32", "bigint": "int64",
              "float": "float", "double": "double", "boolean": "boolean", "string": "string",
              "json": "string", "binary": "bytes"}
_UNIT = {"ms": "", "us": "Micro", "ns": "Nano"}


def connect_field(pin: PinnedField) -> ConnectField:
    """The Connect schema a pinned column's values arrive in, schemas off."""
    if pin.kind in _PRIMITIVE:
        return ConnectField(pin.name, _PRIMITIVE[pin.kind])
    if pin.kind == "date":
        return ConnectField(pin.name, "int32", "io.debezium.time.Date")
    if pin.kind == "timestamp":
        return ConnectField(pin.name, "string", connect.ZONED_TIMESTAMP)
    if pin.kind == "timestamp_ntz":
        return ConnectField(pin.name, "int64", f"io.debezium.time.{_UNIT[pin.unit]}Timestamp")
    if pin.kind == "time":
        return ConnectField(pin.name, "int64", f"io.debezium.time.{_UNIT[pin.unit]}Time")
    if pin.kind == "numeric":  # any decimal, as its exact text
        return ConnectField(pin.name, "bytes", connect.ANY_DECIMAL)
    if pin.kind == "decimal":
        kind = pin.spark_type.simpleString()  # decimal(p,s)
        precision, scale = kind[len("decimal("):-1].split(",")
        return ConnectField(pin.name, "bytes", connect.ANY_DECIMAL,
                            {"scale": scale, "connect.decimal.precision": precision})
    raise connect.ConnectSchemaError(f"field {pin.name}: no Connect type for {pin.kind}")


def pinned_schema(pins: Iterable[PinnedField], name: str = "after") -> ConnectField | None:
    """The pins as one struct schema, or None without pins."""
    fields = tuple(connect_field(p) for p in pins)
    return ConnectField(name, "struct", fields=fields) if fields else None
