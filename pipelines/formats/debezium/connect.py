"""Kafka Connect schemas, as Debezium's JSON converter writes them, and the Spark type of each.

With ``schemas.enable=true`` every record carries its schema: a ``struct`` of fields, each a
Connect type (``int8`` .. ``int64``, ``float``, ``double``, ``boolean``, ``string``,
``bytes``, ``array``, ``map``, ``struct``), optionally named as a *logical type* with
parameters. The logical types land as these Spark types (:func:`spark_type`):

* ``org.apache.kafka.connect.data.Decimal`` (base64 two's complement, ``scale`` in its
  parameters): ``decimal(p,s)``;
* ``io.debezium.data.VariableScaleDecimal`` (``{scale, value}``): ``decimal(38,18)``;
* ``io.debezium.time.Date``, ``org.apache.kafka.connect.data.Date`` (days since 1970): ``date``;
* ``io.debezium.time.Time`` / ``MicroTime`` / ``NanoTime``, ``...connect.data.Time`` (ms, µs,
  ns of the day): ``string``, ``HH:MM:SS.ffffff`` (Spark 4.0 has no time type);
* ``io.debezium.time.Timestamp`` / ``MicroTimestamp`` / ``NanoTimestamp`` (ms, µs, ns since
  1970, no zone): ``timestamp_ntz``;
* ``org.apache.kafka.connect.data.Timestamp`` (ms since 1970, an instant) and
  ``io.debezium.time.ZonedTimestamp`` (ISO-8601 text with a zone): ``timestamp``;
* ``io.debezium.time.ZonedTime``, ``io.debezium.data.Json``, ``Uuid``, ``Enum``, ``EnumSet``,
  ``Xml``: ``string`` (their text).

Any other name is its Connect type's mapping: ``int8`` byte, ``int16`` short, ``int32`` int,
``int64`` bigint, ``float`` float, ``double`` double, ``boolean``, ``string``, ``bytes``
binary, ``array``/``map``/``struct`` the same, recursively. A column of Postgres ``numeric``
without a precision (``VariableScaleDecimal``) has no fixed scale; it lands as decimal(38,18),
and a value that would not fit exactly is quarantined (``out_of_range:<column>``). Nanoseconds
below a microsecond are dropped: Spark's timestamps hold microseconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql.types import (
    ArrayType,
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
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from pipelines.errors import SchemaError

DECIMAL = "org.apache.kafka.connect.data.Decimal"
VARIABLE_DECIMAL = "io.debezium.data.VariableScaleDecimal"
#: A pinned ``decimal(p,s)`` of a schema-less record: Decimal bytes or a VariableScaleDecimal.
ANY_DECIMAL = "deltasink.PinnedDecimal"
#: Where a ``VariableScaleDecimal`` lands when no ``schema.fields`` entry pins it.
VARIABLE_DECIMAL_TYPE = DecimalType(38, 18)
DATES = ("io.debezium.time.Date", "org.apache.kafka.connect.data.Date")
#: Logical time-of-day types -> how many of their units make a second.
TIMES = {"io.debezium.time.Time": 1_000, "org.apache.kafka.connect.data.Time": 1_000,
         "io.debezium.time.MicroTime": 1_000_000, "io.debezium.time.NanoTime": 1_000_000_000}
#: Logical local (zone-less) timestamps -> units per second.
LOCAL_TIMESTAMPS = {"io.debezium.time.Timestamp": 1_000,
                    "io.debezium.time.MicroTimestamp": 1_000_000,
                    "io.debezium.time.NanoTimestamp": 1_000_000_000}
INSTANT = "org.apache.kafka.connect.data.Timestamp"
ZONED_TIMESTAMP = "io.debezium.time.ZonedTimestamp"
_PRIMITIVES: dict[str, DataType] = {
    "int8": ByteType(), "int16": ShortType(), "int32": IntegerType(), "int64": LongType(),
    "float": FloatType(), "double": DoubleType(), "float32": FloatType(),
    "float64": DoubleType(), "boolean": BooleanType(),
    "string": StringType(), "bytes": BinaryType(),
}


class ConnectSchemaError(SchemaError):
    """A Connect schema this module cannot read (its message names the field)."""


@dataclass(frozen=True)
class ConnectField:
    """One Connect schema (a struct's field, an array's items, a map's keys or values).

    Attributes:
        name: the field's name (empty for items, keys and values).
        type: the Connect type.
        logical: the logical type's name, or None.
        parameters: the logical type's parameters (``scale``, ``connect.decimal.precision``).
        optional: whether the value may be null.
        fields: a struct's fields.
        items: an array's element schema.
        keys: a map's key schema.
        values: a map's value schema.
    """

    name: str
    type: str
    logical: str | None = None
    parameters: Mapping[str, str] = field(default_factory=dict)
    optional: bool = True
    fields: tuple[ConnectField, ...] = ()
    items: ConnectField | None = None
    keys: ConnectField | None = None
    values: ConnectField | None = None

    @classmethod
    def parse(cls, raw: Any, name: str = "") -> ConnectField:
        """A Connect schema from its JSON converter form (a dict).

        Raises:
            ConnectSchemaError: not a Connect schema.
        """
        if not isinstance(raw, Mapping) or not isinstance(raw.get("type"), str):
            raise ConnectSchemaError(f"field {name or '?'}: not a Connect schema")
        kind = raw["type"]
        own = str(raw.get("field") or name)
        if kind not in _PRIMITIVES and kind not in ("array", "map", "struct"):
            raise ConnectSchemaError(f"field {own}: unknown Connect type {kind!r}")

        def child(key: str) -> ConnectField | None:
            return cls.parse(raw[key], f"{own}.{key}") if key in raw else None

        children = tuple(cls.parse(f, f"{own}.{f.get('field', '?')}")
                         for f in raw.get("fields") or ()) if kind == "struct" else ()
        return cls(name=own, type=kind, logical=raw.get("name"),
                   parameters={str(k): str(v) for k, v in (raw.get("parameters") or {}).items()},
                   optional=bool(raw.get("optional", True)), fields=children,
                   items=child("items"), keys=child("keys"), values=child("values"))

    def field(self, name: str) -> ConnectField | None:
        """A struct's field called ``name``, or None."""
        return next((f for f in self.fields if f.name == name), None)

    def signature(self) -> str:
        """A text that two schemas share exactly when they decode alike."""
        parts = [*self.fields, *(p for p in (self.items, self.keys, self.values) if p)]
        inner = ",".join(p.signature() for p in parts)
        params = ",".join(f"{k}={v}" for k, v in sorted(self.parameters.items()))
        return f"{self.name}:{self.type}:{self.logical or ''}:{params}[{inner}]"


def spark_type(schema: ConnectField) -> DataType:
    """The Spark type a Connect schema's values land as (see the module's table)."""
    name = schema.logical
    if name in (DECIMAL, ANY_DECIMAL):
        scale = int(schema.parameters.get("scale", "0"))
        precision = int(schema.parameters.get("connect.decimal.precision", "38"))
        precision = min(max(precision, scale, 1), 38)
        return DecimalType(precision, min(scale, precision))
    if name == VARIABLE_DECIMAL:
        return VARIABLE_DECIMAL_TYPE
    if name in DATES:
        return DateType()
    if name in TIMES:
        return StringType()
    if name in LOCAL_TIMESTAMPS:
        return TimestampNTZType()
    if name in (INSTANT, ZONED_TIMESTAMP):
        return TimestampType()
    if schema.type == "struct":
        return StructType([StructField(f.name, spark_type(f), True) for f in schema.fields])
    if schema.type == "array" and schema.items is not None:
        return ArrayType(spark_type(schema.items), True)
    if schema.type == "map" and schema.keys is not None and schema.values is not None:
        return MapType(spark_type(schema.keys), spark_type(schema.values), True)
    if schema.type in _PRIMITIVES:
        return _PRIMITIVES[schema.type]
    raise ConnectSchemaError(f"field {schema.name}: a {schema.type} without its element schema")
