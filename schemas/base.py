"""The building blocks of an event schema, declared as code or loaded from YAML.

A schema module (``schemas/<name>.py``) defines one module-level ``SCHEMA = EventSchema(...)``;
a pipeline config may instead declare its schema in YAML (``schemas.loader``). The sink turns
either into JVM-side parsing and checks (see ``pipelines.sink.parse``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

FieldKind = Literal["string", "int", "long", "double", "decimal", "boolean", "timestamp", "date",
                    "object", "array", "struct"]
TimeFormat = Literal["iso", "epoch_ms", "epoch_s"]
#: Spark datetime pattern letters that parse a zone or an offset.
_ZONE_LETTERS = "XxZOV"
#: The key source that means "the Kafka message key"; its target column is ``kafka_key``.
KAFKA_KEY = "kafka.key"
KAFKA_KEY_COLUMN = "kafka_key"
#: The time source that means "the Kafka record timestamp" (column ``kafka_timestamp``).
KAFKA_TIMESTAMP = "kafka.timestamp"
#: Field kinds a dedup key may have: compared with ``=`` in the MERGE.
KEY_KINDS = ("string", "int", "long", "decimal", "boolean", "date", "timestamp")

_SIMPLE_TYPES: dict[str, DataType] = {
    "string": StringType(), "int": IntegerType(), "long": LongType(), "double": DoubleType(),
    "boolean": BooleanType(), "timestamp": TimestampType(), "date": DateType(),
    "object": StringType(),  # stored as its JSON text
}

#: Columns the sink adds to every target row, after the event's own fields.
KAFKA_COLUMNS: tuple[StructField, ...] = (
    StructField("event_date", DateType(), False),
    StructField("kafka_topic", StringType(), False),
    StructField("kafka_partition", LongType(), False),
    StructField("kafka_offset", LongType(), False),
    StructField("kafka_timestamp", TimestampType(), True),
    StructField("ingested_at", TimestampType(), False),
)


@dataclass(frozen=True)
class FieldSpec:
    """One field of the JSON event (top level, or inside a struct or an array).

    Attributes:
        name: the JSON key, also the column name.
        kind: ``string``, ``int`` (32-bit), ``long``, ``double``, ``decimal`` (see
            ``precision``/``scale``), ``boolean``, ``timestamp``, ``date`` (``yyyy-MM-dd``),
            ``object`` (a JSON object, stored as JSON text), ``array`` (of ``items``) or
            ``struct`` (of ``children``). JSON types are checked strictly: ``"12"`` is not an
            int, ``1.5`` is not an int, ``"true"`` is not a boolean.
        required: whether a record without it (or with null) is quarantined.
        max_length: for strings, the longest accepted value.
        non_empty: for strings, whether a blank value is quarantined.
        formats: for ISO timestamps, extra accepted Spark datetime patterns (tried after
            ISO-8601, in order, with ``try_to_timestamp`` in the JVM), e.g.
            ``"dd.MM.yyyy HH:mm:ssXXX"``. Each must parse a zone (a pattern letter ``X``, ``x``,
            ``Z``, ``O`` or ``V``): a time without one would depend on the session's time zone.
        time_format: for timestamps, ``iso`` (a string with a zone), ``epoch_ms`` or
            ``epoch_s`` (a JSON integer).
        allowed: for strings, ints and longs, the only accepted values (empty: any).
        precision: for decimals, the total number of digits.
        scale: for decimals, the digits after the point.
        items: for arrays, the element type (its name is unused).
        children: for structs, the nested fields.
    """

    name: str
    kind: FieldKind
    required: bool = True
    max_length: int | None = None
    non_empty: bool = True
    formats: tuple[str, ...] = ()
    time_format: TimeFormat = "iso"
    allowed: tuple[str | int, ...] = ()
    precision: int = 10
    scale: int = 0
    items: FieldSpec | None = None
    children: tuple[FieldSpec, ...] = ()

    def __post_init__(self) -> None:
        if self.formats and (self.kind != "timestamp" or self.time_format != "iso"):
            raise ValueError(f"field {self.name}: formats are for ISO timestamp fields only")
        for pattern in self.formats:
            letters = re.sub(r"'[^']*'", "", pattern)  # quoted text is literal, not a pattern
            if not any(c in letters for c in _ZONE_LETTERS):
                raise ValueError(f"field {self.name}: format {pattern!r} parses no zone; add "
                                 "one of X, x, Z, O or V (e.g. 'yyyy-MM-dd HH:mm:ssXXX')")
        if (self.kind == "array") != (self.items is not None):
            raise ValueError(f"field {self.name}: an array needs items, and only arrays have them")
        if (self.kind == "struct") != bool(self.children):
            raise ValueError(f"field {self.name}: a struct needs fields; only structs have them")
        if self.kind == "decimal" and not 0 <= self.scale <= self.precision <= 38:
            raise ValueError(f"field {self.name}: decimal({self.precision},{self.scale}) needs "
                             "0 <= scale <= precision <= 38")
        if self.allowed and self.kind not in ("string", "int", "long"):
            raise ValueError(f"field {self.name}: allowed values are for string, int and long")
        if self.max_length is not None and self.kind != "string":
            raise ValueError(f"field {self.name}: max_length is for strings only")

    @property
    def spark_type(self) -> DataType:
        """The column type in the target table."""
        if self.kind == "decimal":
            return DecimalType(self.precision, self.scale)
        if self.kind == "array" and self.items is not None:
            return ArrayType(self.items.spark_type, True)
        if self.kind == "struct":
            # Nested columns are all nullable: the parser enforces `required` inside them, and
            # ALTER TABLE ADD COLUMNS (schema evolution) can only add nullable nested fields.
            return StructType([StructField(c.name, c.spark_type, True) for c in self.children])
        return _SIMPLE_TYPES[self.kind]


@dataclass(frozen=True)
class EventSchema:
    """A named event schema: its fields, its key, its event time and its header columns.

    Attributes:
        name: the schema's name (logs, errors).
        fields: the event's top-level fields.
        key: the dedup key: a field name, several (a composite key), or ``kafka.key``.
        time_field: the timestamp field that drives ``event_date``, or ``kafka.timestamp``.
        headers: (column, Kafka header name) pairs: each header's value as a UTF-8 string
            column (null when the record lacks the header).
    """

    name: str
    fields: tuple[FieldSpec, ...]
    key: str | tuple[str, ...]
    time_field: str
    headers: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        names = [f.name for f in self.fields] + [c for c, _ in self.headers]
        if len(set(names)) != len(names):
            raise ValueError(f"schema {self.name}: duplicate field or header column names")
        taken = set(names) & ({c.name for c in KAFKA_COLUMNS} | {KAFKA_KEY_COLUMN})
        if taken:
            raise ValueError(f"schema {self.name}: {sorted(taken)} are columns the sink adds")
        by_name = {f.name: f for f in self.fields}
        for key in self.keys:
            spec = by_name.get(key)
            if key != KAFKA_KEY and (spec is None or spec.kind not in KEY_KINDS):
                raise ValueError(f"schema {self.name}: key '{key}' must be {KAFKA_KEY} or a "
                                 f"field of kind {', '.join(KEY_KINDS)}")
        if len(set(self.keys)) != len(self.keys) or not self.keys:
            raise ValueError(f"schema {self.name}: the key must name distinct fields")
        if self.time_field != KAFKA_TIMESTAMP and (
                self.time_field not in by_name or by_name[self.time_field].kind != "timestamp"):
            raise ValueError(f"schema {self.name}: '{self.time_field}' must be a timestamp field "
                             f"or {KAFKA_TIMESTAMP}")

    @property
    def keys(self) -> tuple[str, ...]:
        """The key's sources: field names and/or ``kafka.key``."""
        return (self.key,) if isinstance(self.key, str) else tuple(self.key)

    @property
    def key_columns(self) -> tuple[str, ...]:
        """The dedup key's columns in the target (``kafka.key`` is ``kafka_key``)."""
        return tuple(KAFKA_KEY_COLUMN if k == KAFKA_KEY else k for k in self.keys)

    @property
    def time_column(self) -> str:
        """The target column that holds the event time."""
        return "kafka_timestamp" if self.time_field == KAFKA_TIMESTAMP else self.time_field

    def field(self, name: str) -> FieldSpec:
        """The field called ``name``."""
        return next(f for f in self.fields if f.name == name)

    def target_schema(self) -> StructType:
        """The Spark schema of target rows: the event's fields, headers, then the sink's columns."""
        own = [StructField(f.name, f.spark_type, not f.required) for f in self.fields]
        own += [StructField(column, StringType(), True) for column, _ in self.headers]
        if KAFKA_KEY in self.keys:
            own.append(StructField(KAFKA_KEY_COLUMN, StringType(), False))
        return StructType(own + list(KAFKA_COLUMNS))
