"""One Connect-typed value of a change event, decoded in the JVM: a Spark value, or a failure.

Each decoder reads the value's variant (the JSON converter's payload, parsed once per record)
and gives the typed value, whether it was present but undecodable (the record is quarantined
as ``bad_value:<column>`` or ``out_of_range:<column>``), and whether it is Debezium's
placeholder for a value it did not send (a TOAST-ed Postgres column an update left unchanged,
``__debezium_unavailable_value``): such a column keeps its value from before, not the
placeholder (the write modes see to it).

Decimals are exact: the two's-complement bytes become a ``decimal(38,0)`` by a fold over their
bytes (``aggregate``), then the decimal text with its scale, then the column's decimal type; a
value that does not fit exactly (more digits, or a scale it would be rounded to) is
``out_of_range``, never rounded. No Python UDF anywhere.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    DataType,
    DecimalType,
    MapType,
    StringType,
    StructType,
    TimestampNTZType,
)

from pipelines.formats.debezium import connect
from pipelines.formats.debezium.connect import ConnectField, spark_type

#: Debezium's ``unavailable.value.placeholder`` (its default).
UNAVAILABLE = "__debezium_unavailable_value"
_UNAVAILABLE_BYTES = base64.b64encode(UNAVAILABLE.encode()).decode()
_SQL = {"int8": "tinyint", "int16": "smallint", "int32": "int", "int64": "bigint",
        "boolean": "boolean", "string": "string"}
_DAY_MICROS = 86_400_000_000
_WIDE = "decimal(38,0)"


@dataclass(frozen=True)
class Decoding:
    """A decoded value: the value (null when absent or failed), and the failure flags."""

    value: Column
    bad: Column
    out_of_range: Column
    unavailable: Column


def absent(value: Column) -> Column:
    """A missing key or a JSON null."""
    return value.isNull() | F.is_variant_null(value)


def _get(value: Column, sql: str) -> Column:
    return F.try_variant_get(value, "$", sql)


def unscaled(data: Column) -> Column:
    """The signed big-endian two's-complement integer of ``data`` as ``decimal(38,0)``; null
    when it has no bytes or more than 38 digits."""
    text = F.hex(data)
    size = F.length(data)
    negative = F.conv(F.substring(text, 1, 1), 16, 10).cast("int") >= F.lit(8)
    digits = F.when(negative, F.translate(text, "0123456789ABCDEF", "FEDCBA9876543210")) \
        .otherwise(text)  # a negative number is -(NOT x + 1)
    magnitude = F.aggregate(
        F.sequence(F.lit(1), size), F.lit(0).cast(_WIDE),
        lambda acc, i: F.try_add(F.try_multiply(acc, F.lit(256).cast(_WIDE)),
                                 F.conv(F.substring(digits, i * 2 - 1, F.lit(2)), 16, 10)
                                 .cast(_WIDE)).cast(_WIDE))
    signed = F.when(negative, -F.try_add(magnitude, F.lit(1).cast(_WIDE))).otherwise(magnitude)
    return F.when(size > 0, signed)


def decimal_text(number: Column, scale: Column) -> Column:
    """The exact decimal text of unscaled ``number`` at ``scale`` (``-0.01`` for -1 at 2)."""
    digits = F.abs(number).cast("string")
    padded = F.lpad(digits, F.greatest(F.length(digits), scale + F.lit(1)), "0")
    whole = F.substring(padded, F.lit(1), F.length(padded) - scale)
    fraction = F.substring(padded, F.length(padded) - scale + 1, scale)
    sign = F.when(number < 0, F.lit("-")).otherwise(F.lit(""))
    return F.concat(sign, whole, F.when(scale > 0, F.concat(F.lit("."), fraction))
                    .otherwise(F.lit("")))


def exact_decimal(text: Column, into: DecimalType) -> tuple[Column, Column]:
    """``text`` as ``into``, and whether it did not fit exactly (too many digits, or digits
    past ``into``'s scale that are not zeros)."""
    value = text.try_cast(into)
    fraction = F.regexp_extract(text, r"\.([0-9]+)$", 1)
    rounded = F.length(fraction) > F.lit(into.scale)
    lost = rounded & ~F.substring(fraction, into.scale + 1, 1000).rlike("^0*$")
    return value, text.isNotNull() & (value.isNull() | lost)


def _time_text(units: Column, per_second: int) -> Column:
    """A time of day in ``per_second`` units as ``HH:MM:SS[.ffffff]`` (Postgres's own text:
    trailing zeros of the fraction dropped)."""
    micros = units * F.lit(1_000_000 // per_second) if per_second <= 1_000_000 \
        else F.floor(units / F.lit(per_second // 1_000_000))
    seconds = F.floor(micros / F.lit(1_000_000))
    fraction = (micros - seconds * F.lit(1_000_000)).cast("long")

    def two(n: Column) -> Column:
        return F.lpad(n.cast("long").cast("string"), 2, "0")

    clock = F.concat_ws(":", two(F.floor(seconds / 3600)), two(F.floor(seconds % 3600 / 60)),
                        two(seconds % 60))
    tail = F.regexp_replace(F.lpad(fraction.cast("string"), 6, "0"), "0+$", "")
    return F.when(units.isNotNull(), F.concat(clock, F.when(fraction > 0, F.concat(
        F.lit("."), tail)).otherwise(F.lit(""))))


def _local_timestamp(units: Column, per_second: int) -> Column:
    """A zone-less timestamp from ``per_second`` units since 1970 (no session time zone)."""
    micros = units * F.lit(1_000_000 // per_second) if per_second <= 1_000_000 \
        else F.floor(units / F.lit(per_second // 1_000_000))
    days = F.floor(micros / F.lit(_DAY_MICROS))
    rest = micros - days * F.lit(_DAY_MICROS)
    day = F.date_from_unix_date(days.cast("int")).cast("timestamp_ntz")
    return day + F.make_dt_interval(F.lit(0), F.lit(0), F.lit(0),
                                    rest.cast("decimal(20,0)") / F.lit(1_000_000))


def _natural(schema: ConnectField, value: Column) -> tuple[Column, DataType]:
    """The value as its schema's own Spark type (decimals as their exact text)."""
    name = schema.logical
    if name == connect.DECIMAL:
        data = F.try_to_binary(_get(value, "string"), F.lit("base64"))
        scale = int(schema.parameters.get("scale", "0"))
        return decimal_text(unscaled(data), F.lit(scale)), spark_type(schema)
    if name == connect.VARIABLE_DECIMAL:
        data = F.try_to_binary(F.try_variant_get(value, "$.value", "string"), F.lit("base64"))
        scale = F.try_variant_get(value, "$.scale", "int")
        return decimal_text(unscaled(data), scale), spark_type(schema)
    if name in connect.DATES:
        return F.date_from_unix_date(_get(value, "int")), spark_type(schema)
    if name in connect.TIMES:
        return _time_text(_get(value, "bigint"), connect.TIMES[name]), StringType()
    if name in connect.LOCAL_TIMESTAMPS:
        return (_local_timestamp(_get(value, "bigint"), connect.LOCAL_TIMESTAMPS[name]),
                TimestampNTZType())
    if name == connect.INSTANT:
        return F.timestamp_millis(_get(value, "bigint")), spark_type(schema)
    if name == connect.ZONED_TIMESTAMP:
        return _get(value, "string").try_cast("timestamp"), spark_type(schema)
    kind = schema.type
    if kind in ("float", "double", "float32", "float64"):  # NaN, Infinity arrive as strings
        return _get(value, "float" if kind in ("float", "float32") else "double"), \
            spark_type(schema)
    if kind == "bytes":
        return F.try_to_binary(_get(value, "string"), F.lit("base64")), spark_type(schema)
    if kind in _SQL:
        return _get(value, _SQL[kind]), spark_type(schema)
    raise connect.ConnectSchemaError(f"field {schema.name}: no decoder for {kind}")


def decode(schema: ConnectField, value: Column, into: DataType | None = None) -> Decoding:
    """Decode ``value`` (a variant) with Connect ``schema`` into Spark type ``into`` (default:
    the schema's own, :func:`pipelines.formats.debezium.connect.spark_type`).

    ``into`` may be wider than the schema's type (a column widened since): the value is cast,
    exactly. A struct, array or map is decoded element by element with the higher-order
    functions; any element that fails fails the value.
    """
    into = into or spark_type(schema)
    present = ~absent(value)
    no = F.lit(False)
    if schema.type == "struct" and schema.logical != connect.VARIABLE_DECIMAL:
        types = {f.name: f.dataType for f in into.fields} if isinstance(into, StructType) else {}
        parts = [(f.name, decode(f, F.variant_get(value, path_of(f.name), "variant"),
                                 types.get(f.name))) for f in schema.fields]
        failed = _any([d.bad | d.out_of_range for _, d in parts])
        return Decoding(F.when(present, F.struct(*[d.value.alias(n) for n, d in parts])),
                        present & failed, no, no)
    if schema.type == "array" and schema.items is not None:
        items = schema.items
        element = into.elementType if isinstance(into, ArrayType) else None
        array = _get(value, "array<variant>")
        converted = F.transform(array, lambda e: decode(items, e, element).value)
        failed = F.exists(array, lambda e: decode(items, e, element).bad
                          | decode(items, e, element).out_of_range)
        return Decoding(converted, present & (array.isNull() | failed), no, no)
    if schema.type == "map" and schema.values is not None:
        values = schema.values
        target = into.valueType if isinstance(into, MapType) else None
        entries = _get(value, "map<string,variant>")
        converted = F.transform_values(entries, lambda _k, v: decode(values, v, target).value)
        failed = F.exists(F.map_values(entries), lambda v: decode(values, v, target).bad)
        return Decoding(converted, present & (entries.isNull() | failed), no, no)
    natural, kind = _natural(schema, value)
    unavailable = _unavailable(schema, value)
    out_of_range = no
    if isinstance(into, DecimalType) and isinstance(kind, DecimalType):
        typed, out_of_range = exact_decimal(natural, into)
        bad = natural.isNull()
    elif into == kind:
        typed, bad = natural, natural.isNull()
    else:  # a column widened since this schema (int into bigint), or a decimal as text
        typed = natural.try_cast(into)
        bad = natural.isNull() | typed.isNull()
    keep = present & ~unavailable
    return Decoding(F.when(keep, typed), keep & bad, keep & ~bad & out_of_range, unavailable)


def _unavailable(schema: ConnectField, value: Column) -> Column:
    if schema.type == "string":
        return F.coalesce(_get(value, "string") == F.lit(UNAVAILABLE), F.lit(False))
    if schema.type == "bytes" and schema.logical is None:
        return F.coalesce(_get(value, "string") == F.lit(_UNAVAILABLE_BYTES), F.lit(False))
    return F.lit(False)


def _any(flags: list[Column]) -> Column:
    out = F.lit(False)
    for flag in flags:
        out = out | F.coalesce(flag, F.lit(False))
    return out


def path_of(name: str) -> str:
    """The JSON path of a top-level field (``$.name``, or ``$['odd name']``)."""
    return f"$.{name}" if name.isidentifier() else "$['{}']".format(name.replace("'", "\\'"))
