"""One Connect-typed value of a change event, decoded in the JVM: a Spark value, or a failure.

Each decoder reads the value's variant (the JSON converter's payload, parsed once per record)
and gives the typed value, whether it was present but undecodable (the record is quarantined
as ``bad_value:<column>`` or ``out_of_range:<column>``), and whether it is Debezium's
placeholder for a value it did not send (a TOAST-ed Postgres column an update left unchanged,
``__debezium_unavailable_value``): such a column keeps its value from before, not the
placeholder (the write modes see to it).

Decimals are exact (:mod:`pipelines.formats.debezium.decimals`): a value that does not fit
exactly is ``out_of_range``, never rounded. No Python UDF anywhere.
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
from pipelines.formats.debezium.decimals import decimal_text, exact_decimal, unscaled
from pipelines.formats.decoded import let

#: Debezium's ``unavailable.value.placeholder`` (its default).
UNAVAILABLE = "__debezium_unavailable_value"
_UNAVAILABLE_BYTES = base64.b64encode(UNAVAILABLE.encode()).decode()
_SQL = {"int8": "tinyint", "int16": "smallint", "int32": "int", "int64": "bigint",
        "boolean": "boolean", "string": "string"}
_DAY_MICROS = 86_400_000_000


@dataclass(frozen=True)
class Decoding:
    """A decoded value's parts: the value (null when absent or failed), and the failure flags.

    :func:`decode` gives them as one struct column (``v``, ``b``, ``o``, ``u``), so a caller that
    computes it once per row reads each part from it (:meth:`of`).
    """

    value: Column
    bad: Column
    out_of_range: Column
    unavailable: Column

    @classmethod
    def of(cls, decoded: Column) -> Decoding:
        """The parts of :func:`decode`'s struct."""
        return cls(decoded["v"], decoded["b"], decoded["o"], decoded["u"])


def absent(value: Column) -> Column:
    """A missing key or a JSON null."""
    return value.isNull() | F.is_variant_null(value)


def _get(value: Column, sql: str) -> Column:
    return F.try_variant_get(value, "$", sql)


def _micros(units: Column, per_second: int) -> Column:
    if per_second <= 1_000_000:
        return units * F.lit(1_000_000 // per_second)
    return F.floor(units / F.lit(per_second // 1_000_000))


def _time_text(units: Column, per_second: int) -> Column:
    """A time of day in ``per_second`` units as ``HH:MM:SS[.ffffff]`` (Postgres's own text:
    trailing zeros of the fraction dropped)."""
    def two(n: Column) -> Column:
        return F.lpad(n.cast("long").cast("string"), 2, "0")

    def text(micros: Column) -> Column:
        seconds = F.floor(micros / F.lit(1_000_000))
        fraction = (micros - seconds * F.lit(1_000_000)).cast("long")
        clock = F.concat_ws(":", two(F.floor(seconds / 3600)),
                            two(F.floor(seconds % 3600 / 60)), two(seconds % 60))
        tail = F.regexp_replace(F.lpad(fraction.cast("string"), 6, "0"), "0+$", "")
        return F.when(micros.isNotNull(), F.concat(clock, F.when(fraction > 0, F.concat(
            F.lit("."), tail)).otherwise(F.lit(""))))

    return let(_micros(units, per_second), text)


def _local_timestamp(units: Column, per_second: int) -> Column:
    """A zone-less timestamp from ``per_second`` units since 1970 (no session time zone)."""
    def stamp(micros: Column) -> Column:
        days = F.floor(micros / F.lit(_DAY_MICROS))
        rest = micros - days * F.lit(_DAY_MICROS)
        day = F.date_from_unix_date(days.cast("int")).cast("timestamp_ntz")
        return day + F.make_dt_interval(F.lit(0), F.lit(0), F.lit(0),
                                        rest.cast("decimal(20,0)") / F.lit(1_000_000))

    return let(_micros(units, per_second), stamp)


def _natural(schema: ConnectField, value: Column) -> tuple[Column, DataType]:
    """The value as its schema's own Spark type (decimals as their exact text)."""
    name = schema.logical

    def fixed() -> Column:
        return decimal_text(unscaled(F.try_to_binary(_get(value, "string"), F.lit("base64"))),
                            F.lit(int(schema.parameters.get("scale", "0"))))

    def variable() -> Column:
        return decimal_text(unscaled(F.try_to_binary(
            F.try_variant_get(value, "$.value", "string"), F.lit("base64"))),
            F.try_variant_get(value, "$.scale", "int"))

    if name == connect.DECIMAL:
        return fixed(), spark_type(schema)
    if name == connect.VARIABLE_DECIMAL:
        return variable(), spark_type(schema)
    if name == connect.ANY_DECIMAL:  # pinned, schemas off: the value's shape says which
        shaped = F.startswith(F.schema_of_variant(value), F.lit("OBJECT"))
        return F.when(shaped, variable()).otherwise(fixed()), spark_type(schema)
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


def _parts(value: Column, bad: Column, out_of_range: Column, unavailable: Column) -> Column:
    return F.struct(value.alias("v"), bad.alias("b"), out_of_range.alias("o"),
                    unavailable.alias("u"))


def decode(schema: ConnectField, value: Column, into: DataType | None = None) -> Column:
    """Decode ``value`` (a variant) with Connect ``schema`` into Spark type ``into`` (default:
    the schema's own, :func:`pipelines.formats.debezium.connect.spark_type`).

    ``into`` may be wider than the schema's type (a column widened since): the value is cast,
    exactly. A struct, array or map is decoded element by element with the higher-order
    functions; any element that fails fails the value.

    Returns:
        One struct column: the value and its flags (:meth:`Decoding.of` names them).
    """
    kind = into or spark_type(schema)
    return let(value, lambda v: _decode(schema, v, kind))


def _decode(schema: ConnectField, value: Column, into: DataType) -> Column:
    present = ~absent(value)
    no = F.lit(False)
    if schema.type == "struct" and schema.logical != connect.VARIABLE_DECIMAL:
        types = {f.name: f.dataType for f in into.fields} if isinstance(into, StructType) else {}
        parts = [decode(f, F.variant_get(value, path_of(f.name), "variant"),
                        types.get(f.name)) for f in schema.fields]

        def whole(got: Column) -> Column:
            names = [f.name for f in schema.fields]
            failed = _any([got[n]["b"] | got[n]["o"] for n in names])
            return _parts(F.when(present, F.struct(*[got[n]["v"].alias(n) for n in names])),
                          present & failed, no, no)

        return let(F.struct(*[p.alias(f.name) for p, f in zip(parts, schema.fields,
                                                               strict=True)]), whole)
    if schema.type == "array" and schema.items is not None:
        items = schema.items
        element = into.elementType if isinstance(into, ArrayType) else None
        return let(F.transform(_get(value, "array<variant>"),
                               lambda e: decode(items, e, element)),
                   lambda got: _parts(F.transform(got, lambda d: d["v"]), present & (
                       got.isNull() | F.exists(got, lambda d: d["b"] | d["o"])), no, no))
    if schema.type == "map" and schema.values is not None:
        entries = schema.values
        target = into.valueType if isinstance(into, MapType) else None
        return let(F.transform_values(_get(value, "map<string,variant>"),
                                      lambda _k, v: decode(entries, v, target)),
                   lambda got: _parts(F.transform_values(got, lambda _k, d: d["v"]), present & (
                       got.isNull() | F.exists(F.map_values(got), lambda d: d["b"] | d["o"])),
                       no, no))
    natural, kind = _natural(schema, value)
    unavailable = _unavailable(schema, value)
    keep = present & ~unavailable

    def typed(n: Column) -> Column:
        if isinstance(into, DecimalType) and isinstance(kind, DecimalType):
            exact, out_of_range = exact_decimal(n, into)
            return _parts(F.when(keep, exact), keep & n.isNull(),
                          keep & n.isNotNull() & out_of_range, unavailable)
        if into == kind:
            return _parts(F.when(keep, n), keep & n.isNull(), no, unavailable)
        # a column widened since this schema (int into bigint), or a decimal as its text
        return let(n.try_cast(into), lambda t: _parts(F.when(keep, t),
                                                      keep & (n.isNull() | t.isNull()), no,
                                                      unavailable))

    return let(natural, typed)

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
