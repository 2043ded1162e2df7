"""One schema field of a parsed JSON record: its checks (with quarantine reasons) and its value.

Everything here builds Spark SQL expressions over a variant (``try_parse_json``'s result), so it
all runs in the JVM; array elements are checked and converted with Spark's higher-order
functions (``forall``, ``transform``), not Python. Types are strict: the JSON type must match
the field's kind (``schema_of_variant``), nothing is cast from a string.

Reasons, per field, first failure wins: ``missing:<f>`` · ``bad_type:<f>`` · ``out_of_range:<f>``
(an int beyond 32 bits, a decimal that does not fit or would be rounded) · ``empty:<f>`` ·
``too_long:<f>`` · ``not_allowed:<f>`` · ``bad_timestamp:<f>`` · ``bad_date:<f>`` ·
``bad_item:<f>`` (an array element of the wrong type). Nested fields are named by their path
(``address.city``).
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column
from pyspark.sql import functions as F

from schemas.base import FieldSpec

#: An ISO-8601 timestamp must end with a zone: Z, +hh, +hhmm or +hh:mm.
_ZONE_SUFFIX = r"(?i)(z|[+-][0-9]{2}(:?[0-9]{2})?)$"
_DATE = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
#: Years an event time may have (UTC). Spark parses far wider ranges, but event_date must also
#: be a Python date and a java.sql.Date literal (4-digit years) for the partition-pruned MERGE.
YEARS = (1000, 9999)
_JSON_KIND = {"string": "STRING", "int": "BIGINT", "long": "BIGINT", "boolean": "BOOLEAN",
              "date": "STRING", "object": "OBJECT", "array": "ARRAY", "struct": "OBJECT"}


def child(parent: Column, name: str) -> Column:
    """The variant at key ``name`` of the object variant ``parent`` (null when absent)."""
    return F.variant_get(parent, f"$.{name}", "variant")


def absent(value: Column) -> Column:
    """True when the key is missing or JSON null."""
    return value.isNull() | F.is_variant_null(value)


def utc(stamp: Column) -> Column:
    """The UTC wall-clock time of a timestamp, whatever the session time zone."""
    return F.to_utc_timestamp(stamp, F.current_timezone())


def _as(value: Column, sql_type: str) -> Column:
    return F.try_variant_get(value, "$", sql_type)


def _type_ok(spec: FieldSpec, value: Column) -> Column:
    """Whether the JSON type fits the field's kind (a present value)."""
    kind = F.schema_of_variant(value)
    if spec.kind == "timestamp" and spec.time_format != "iso":
        return kind == F.lit("BIGINT")
    if spec.kind in ("double", "decimal"):
        return (kind == F.lit("BIGINT")) | (kind == F.lit("DOUBLE")) | F.startswith(
            kind, F.lit("DECIMAL"))
    return F.startswith(kind, F.lit(_JSON_KIND.get(spec.kind, "STRING")))


def _range_ok(spec: FieldSpec, value: Column) -> Column | None:
    if spec.kind == "int":
        return _as(value, "int").isNotNull()
    if spec.kind == "decimal":  # exact: no rounding into the declared scale
        exact = _as(value, "decimal(38,18)")
        fitted = value_of(spec, value)  # null when it does not fit decimal(p,s)
        return F.coalesce(exact == fitted, F.lit(False)) | (exact.isNull() & fitted.isNotNull())
    return None


def _timestamp(spec: FieldSpec, value: Column) -> Column:
    if spec.time_format == "epoch_ms":
        return F.timestamp_millis(_as(value, "long"))
    if spec.time_format == "epoch_s":
        return F.timestamp_seconds(_as(value, "long"))
    text = _as(value, "string")
    iso = F.when(text.rlike(_ZONE_SUFFIX), text.try_cast("timestamp"))
    if not spec.formats:
        return iso
    return F.coalesce(iso, *[F.try_to_timestamp(text, F.lit(f)) for f in spec.formats])


def _scalar_checks(spec: FieldSpec, value: Column, path: str,
                   typed: Column | None = None) -> list[tuple[Column, str]]:
    """(failure, reason) pairs after the type check, for a present scalar value (``typed``:
    its :func:`value_of`, if the caller computed it already)."""
    checks: list[tuple[Column, str]] = []
    in_range = _range_ok(spec, value)
    if in_range is not None:
        checks.append((~in_range, f"out_of_range:{path}"))
    text = _as(value, "string")
    if spec.kind == "string" and spec.non_empty:
        checks.append((F.trim(text) == F.lit(""), f"empty:{path}"))
    if spec.max_length is not None:
        checks.append((F.length(text) > F.lit(spec.max_length), f"too_long:{path}"))
    if spec.allowed:
        checks.append((~value_of(spec, value).isin(list(spec.allowed)), f"not_allowed:{path}"))
    if spec.kind == "timestamp":
        stamp = _timestamp(spec, value) if typed is None else typed
        year = F.year(utc(stamp))
        checks.append((stamp.isNull() | (year < F.lit(YEARS[0])) | (year > F.lit(YEARS[1])),
                       f"bad_timestamp:{path}"))
    if spec.kind == "date":
        checks.append((~text.rlike(_DATE) | value_of(spec, value).isNull(), f"bad_date:{path}"))
    return checks


def checks(spec: FieldSpec, value: Column, path: str,
           typed: Column | None = None) -> list[tuple[Column, str]]:
    """(failure condition, reason) pairs for one field at variant ``value``, in order.

    Args:
        spec: the field.
        value: its variant (null when the key is absent).
        path: its name in reasons (``address.city`` for a nested field).
        typed: a scalar field's :func:`value_of`, when the caller computes it once per row
            (a timestamp's parse is the dearest check); None: the checks compute it.
    """
    missing = absent(value)
    out: list[tuple[Column, str]] = []
    if spec.required:
        out.append((missing, f"missing:{path}"))
    present = ~missing
    out.append((present & ~_type_ok(spec, value), f"bad_type:{path}"))
    if spec.kind == "struct":
        for sub in spec.children:
            out += [(present & c, r) for c, r in checks(sub, child(value, sub.name),
                                                         f"{path}.{sub.name}")]
    elif spec.kind == "array" and spec.items is not None:
        items = spec.items
        every = F.forall(_as(value, "array<variant>"), lambda e: valid(items, e))
        out.append((present & ~every, f"bad_item:{path}"))
    elif spec.kind != "object":
        out += [(present & c, r) for c, r in _scalar_checks(spec, value, path, typed)]
    return out


def valid(spec: FieldSpec, value: Column) -> Column:
    """Whether variant ``value`` passes every check of ``spec`` (for array elements)."""
    failed = reduce(lambda a, b: a | b,
                    [F.coalesce(c, F.lit(True)) for c, _ in checks(spec, value, spec.name)])
    return ~failed


def value_of(spec: FieldSpec, value: Column) -> Column:
    """The typed column value of variant ``value`` (meaningful only when its checks pass)."""
    if spec.kind == "object":
        return F.to_json(value)
    if spec.kind == "struct":
        return F.when(~absent(value), F.struct(
            *[value_of(sub, child(value, sub.name)).alias(sub.name) for sub in spec.children]))
    if spec.kind == "array" and spec.items is not None:
        items = spec.items
        return F.transform(_as(value, "array<variant>"), lambda e: value_of(items, e))
    if spec.kind == "timestamp":
        return _timestamp(spec, value)
    if spec.kind == "date":
        return _as(value, "string").try_cast("date")
    if spec.kind == "decimal":
        return _as(value, f"decimal({spec.precision},{spec.scale})")
    return _as(value, spec.kind)
