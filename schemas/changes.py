"""The columns of a change stream's target (``source.format: debezium``), and pinned fields.

A Debezium topic describes its own rows: with the JSON converter's schemas on, every record
carries the table's Connect schema, so the target's data columns are learned from the records
(``pipelines/formats/debezium/``). What is fixed is the change's own columns, below, and the
sink's Kafka columns. :data:`CHANGE_SCHEMA` is the schema a Debezium pipeline's config reports:
those change columns, keyed by nothing a user sets (the key is the message key's fields).

``schema.fields`` pins columns (needed with schemas off, where records carry no schema)::

    schema:
      fields:
        id: int
        price: decimal(12,2)
        seen: {type: timestamp_ntz, unit: us}
        wakes: {type: time, unit: us}

Types: ``tinyint`` ``smallint`` ``int`` ``bigint`` ``float`` ``double`` ``boolean`` ``string``
``binary`` (base64) ``date`` (days since 1970) ``timestamp`` (ISO-8601 text with a zone)
``timestamp_ntz`` and ``time`` (a number of ``unit``: ``ms``, ``us`` (the default) or ``ns``;
``time`` lands as ``HH:MM:SS.ffffff`` text) ``decimal(p,s)`` (Connect's Decimal bytes, or a
VariableScaleDecimal) ``numeric`` (either, as its exact decimal text) and ``json`` (text).
With schemas on, a pinned type replaces the learned one: a Postgres ``numeric`` without
precision as ``decimal(38,10)``, or as exact ``string``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    TimestampNTZType,
    TimestampType,
)

from pipelines.errors import SchemaError
from schemas.base import EventSchema, FieldSpec

#: The change's operation: ``r`` (a snapshot's read), ``c``, ``u``, ``d``.
OP = "_op"
#: The change's source position (``pipelines/formats/debezium/position.py``).
POSITION = "_position"
#: When the change was made in the database (``source.ts_ms``).
SOURCE_TS = "_source_ts"
CHANGE_COLUMNS = (OP, POSITION, SOURCE_TS)
#: An SCD2 version's interval: the positions (or ``sequence_by`` values) of the change that
#: opened it and of the one that closed it (null while it is the key's current version).
START_AT, END_AT = "__START_AT", "__END_AT"
#: The change columns as a schema (what a Debezium pipeline's ``event_schema()`` is).
CHANGE_SCHEMA = EventSchema(
    name="debezium",
    fields=(FieldSpec(OP, "string", max_length=1), FieldSpec(POSITION, "decimal", precision=38),
            FieldSpec(SOURCE_TS, "timestamp")),
    key=POSITION, time_field=SOURCE_TS)
UNITS = ("ms", "us", "ns")
_DECIMAL = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_TYPES: dict[str, DataType] = {
    "tinyint": ByteType(), "smallint": ShortType(), "int": IntegerType(),
    "bigint": LongType(), "float": FloatType(), "double": DoubleType(),
    "boolean": BooleanType(), "string": StringType(), "binary": BinaryType(),
    "date": DateType(), "timestamp": TimestampType(), "timestamp_ntz": TimestampNTZType(),
    "time": StringType(), "json": StringType(), "numeric": StringType(),
}


@dataclass(frozen=True)
class PinnedField:
    """One ``schema.fields`` entry of a Debezium pipeline.

    Attributes:
        name: the column.
        kind: the type as written (``decimal`` for any ``decimal(p,s)``).
        spark_type: the column's Spark type.
        unit: for ``timestamp_ntz`` and ``time``, the unit of the number sent.
    """

    name: str
    kind: str
    spark_type: DataType
    unit: str = "us"


def pinned_fields(raw: Any, where: str = "schema") -> tuple[PinnedField, ...]:
    """The pinned fields of a Debezium pipeline's ``schema:`` (none when it is not set).

    Raises:
        SchemaError: one line naming the field and the problem.
    """
    if raw is None:
        return ()
    if not isinstance(raw, Mapping) or set(raw) - {"fields"}:
        raise SchemaError(f"{where}: with source.format: debezium, schema takes only fields "
                          "(column -> type); the columns come from the events' own schema")
    fields = raw.get("fields") or {}
    if not isinstance(fields, Mapping):
        raise SchemaError(f"{where}.fields: expected a mapping of column -> type")
    return tuple(_pinned(str(name), spec, f"{where}.fields.{name}")
                 for name, spec in fields.items())


def _pinned(name: str, spec: Any, where: str) -> PinnedField:
    if not _NAME.match(name):
        raise SchemaError(f"{where}: a name must be letters, digits and _")
    if isinstance(spec, str):
        spec = {"type": spec}
    if not isinstance(spec, Mapping) or "type" not in spec or set(spec) - {"type", "unit"}:
        raise SchemaError(f"{where}: expected a type, or {{type: ..., unit: ...}}")
    kind = str(spec["type"]).strip().lower()
    unit = str(spec.get("unit", "us"))
    if unit not in UNITS or ("unit" in spec and kind not in ("timestamp_ntz", "time")):
        raise SchemaError(f"{where}: unit is for timestamp_ntz and time only, one of "
                          f"{', '.join(UNITS)}")
    decimal = _DECIMAL.match(kind)
    if decimal:
        precision, scale = int(decimal.group(1)), int(decimal.group(2))
        if not 0 <= scale <= precision <= 38 or precision == 0:
            raise SchemaError(f"{where}: decimal(p,s) needs 0 <= s <= p <= 38")
        return PinnedField(name, "decimal", DecimalType(precision, scale), unit)
    if kind not in _TYPES:
        raise SchemaError(f"{where}: unknown type {spec['type']!r}; types are "
                          f"{', '.join(_TYPES)} and decimal(p,s)")
    return PinnedField(name, kind, _TYPES[kind], unit)
