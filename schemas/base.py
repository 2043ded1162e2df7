"""The building blocks of an event schema, declared as code.

A schema module (``schemas/<name>.py``) defines one module-level ``SCHEMA = EventSchema(...)``.
The sink turns that declaration into JVM-side parsing and checks (see ``pipelines.sink.parse``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from pyspark.sql.types import (
    DataType,
    DateType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

FieldKind = Literal["string", "timestamp", "object"]
#: Spark datetime pattern letters that parse a zone or an offset.
_ZONE_LETTERS = "XxZOV"

_SPARK_TYPES: dict[FieldKind, DataType] = {
    "string": StringType(),
    "timestamp": TimestampType(),
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
    """One top-level field of the JSON event.

    Attributes:
        name: the JSON key, also the column name.
        kind: ``string`` (a JSON string), ``timestamp`` (an ISO-8601 string with a zone), or
            ``object`` (a JSON object, stored as JSON text).
        required: whether a record without it (or with null) is quarantined.
        max_length: for strings, the longest accepted value.
        non_empty: for strings, whether a blank value is quarantined.
        formats: for timestamps, extra accepted Spark datetime patterns (tried after ISO-8601,
            in order, with ``try_to_timestamp`` in the JVM), e.g. ``"dd.MM.yyyy HH:mm:ssXXX"``.
            Each must parse a zone (a pattern letter ``X``, ``x``, ``Z``, ``O`` or ``V``): a
            time without one would depend on the session's time zone.
    """

    name: str
    kind: FieldKind
    required: bool = True
    max_length: int | None = None
    non_empty: bool = True
    formats: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.formats and self.kind != "timestamp":
            raise ValueError(f"field {self.name}: formats are for timestamp fields only")
        for pattern in self.formats:
            letters = re.sub(r"'[^']*'", "", pattern)  # quoted text is literal, not a pattern
            if not any(c in letters for c in _ZONE_LETTERS):
                raise ValueError(f"field {self.name}: format {pattern!r} parses no zone; add "
                                 "one of X, x, Z, O or V (e.g. 'yyyy-MM-dd HH:mm:ssXXX')")

    @property
    def spark_type(self) -> DataType:
        """The column type in the target table."""
        return _SPARK_TYPES[self.kind]


@dataclass(frozen=True)
class EventSchema:
    """A named event schema: its fields, its key and the field that drives ``event_date``."""

    name: str
    fields: tuple[FieldSpec, ...]
    key: str
    time_field: str

    def __post_init__(self) -> None:
        names = [f.name for f in self.fields]
        if len(set(names)) != len(names):
            raise ValueError(f"schema {self.name}: duplicate field names")
        by_name = {f.name: f for f in self.fields}
        if self.key not in by_name or by_name[self.key].kind != "string":
            raise ValueError(f"schema {self.name}: key '{self.key}' must be a string field")
        if self.time_field not in by_name or by_name[self.time_field].kind != "timestamp":
            raise ValueError(f"schema {self.name}: '{self.time_field}' must be a timestamp field")

    def field(self, name: str) -> FieldSpec:
        """The field called ``name``."""
        return next(f for f in self.fields if f.name == name)

    def target_schema(self) -> StructType:
        """The Spark schema of target rows: the event's fields, then the sink's columns."""
        own = [StructField(f.name, f.spark_type, not f.required) for f in self.fields]
        return StructType(own + list(KAFKA_COLUMNS))
