"""Debezium change events -> change rows, or a reason to quarantine them. All of it in the JVM.

A record's value is the JSON converter's envelope, ``{"schema": ..., "payload": ...}`` with
schemas on, the payload alone with schemas off. The payload is Debezium's change: ``op``
(``r`` a snapshot's read, ``c``, ``u``, ``d``, ``t`` a truncate), the row ``before`` and
``after`` it, and the ``source`` block (where in the database it happened). Each record is
decoded with its own schema, picked by its id among the learned ones
(:mod:`pipelines.formats.debezium.shapes`); a column two schema versions type alike is decoded
once, whatever the version.

A change row holds the row's columns (a delete's: ``before``, often only the key), the key's
columns from the message key, ``_op``, ``_position`` (:mod:`.position`), ``_source_ts``
(``source.ts_ms``), ``_deleted``, ``_truncate``, ``_unchanged`` (the columns Debezium did not
send: TOAST-ed values an update left as they were), then the sink's Kafka columns.

Reasons, first failure wins: ``skip:tombstone`` (a null value: the tombstone after a delete;
counted, never quarantined) · ``oversized`` · the JSON decoder's · ``skip:unknown-schema`` (a
schema this run has not learned yet: the batch is classified again once it has) · ``debezium:
unreadable schema ...`` · ``debezium: no schema ...`` (schemas off and no ``schema.fields``) ·
``debezium: not a change event`` (no ``op``) · ``debezium: unknown op ...`` · ``debezium: <op>
without after`` · ``missing:kafka.key`` · ``invalid_json:kafka.key`` · ``missing:<key column>``
· ``debezium: no source position`` · ``bad_value:<column>`` · ``out_of_range:<column>``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, DataType, StringType, StructType

from pipelines.formats.debezium.connect import ConnectField
from pipelines.formats.debezium.position import position
from pipelines.formats.debezium.values import Decoding, decode, path_of
from pipelines.formats.decoded import SKIP, VARIANT, once_per_row
from pipelines.formats.json import JsonDecoder
from schemas.changes import OP, POSITION, SOURCE_TS

DELETED, TRUNCATE, UNCHANGED = "_deleted", "_truncate", "_unchanged"
TOMBSTONE = f"{SKIP}tombstone"
UNKNOWN = f"{SKIP}unknown-schema"
#: Columns of an unknown schema's records, for the batch's observation to learn them from.
LEARN_VALUE, LEARN_KEY, LEARN_NAMES = "_learn_value", "_learn_key", "_learn_names"
OPS = ("r", "c", "u", "d", "t")
_P, _K, _SID, _KID, _ENV, _KENV = "_payload", "_keyv", "_sid", "_kid", "_env", "_kenv"


@dataclass(frozen=True)
class Plan:
    """How a batch's change events are decoded.

    Attributes:
        columns: the row columns and their types (:meth:`Shapes.plan`).
        keys: the key's columns.
        values: value-schema id -> the row's struct schema.
        key_schemas: key-schema id -> the key's struct schema.
        pinned: the pinned columns as one struct schema (schema-less records), or None.
        unreadable: schema id -> why it could not be read.
    """

    columns: StructType
    keys: tuple[str, ...]
    values: Mapping[int, ConnectField] = field(default_factory=dict)
    key_schemas: Mapping[int, ConnectField] = field(default_factory=dict)
    pinned: ConnectField | None = None
    unreadable: Mapping[int, str] = field(default_factory=dict)


def _child(parent: Column, name: str) -> Column:
    return F.variant_get(parent, path_of(name), "variant")


def _absent(value: Column) -> Column:
    return value.isNull() | F.is_variant_null(value)


def _choose(options: list[tuple[Column, Column]], kind: DataType) -> Column:
    """One decoding per record: the first option whose condition holds (none: a null value,
    no failure)."""
    none = F.struct(F.lit(None).cast(kind).alias("v"), F.lit(False).alias("b"),
                    F.lit(False).alias("o"), F.lit(False).alias("u"))
    out: Column | None = None
    for cond, decoded in options:
        out = F.when(cond, decoded) if out is None else out.when(cond, decoded)
    return none if out is None else out.otherwise(none)


def _column(name: str, kind: DataType, row: Column, plan: Plan) -> Column:
    """Column ``name`` of each record's row, decoded with the record's own schema."""
    groups: dict[str, tuple[ConnectField, list[int]]] = {}
    for sid, schema in plan.values.items():
        f = schema.field(name)
        if f is not None:
            groups.setdefault(f.signature(), (f, []))[1].append(sid)
    options = [(F.col(_SID).isin(ids), decode(f, _child(row, name), kind))
               for f, ids in groups.values()]
    pinned = plan.pinned.field(name) if plan.pinned is not None else None
    if pinned is not None:
        options.insert(0, (~F.col(_ENV), decode(pinned, _child(row, name), kind)))
    if pinned is None and len(groups) == 1:
        return options[0][1]  # every schema that has it types it alike: no choice per record
    return _choose(options, kind)


def _key_column(name: str, kind: DataType, plan: Plan) -> Column:
    """Key column ``name`` from the message key: its schema's, or (schemas off) typed like
    the pinned or learned column."""
    value = _child(F.col(_K), name)
    options = []
    for sid, schema in plan.key_schemas.items():
        f = schema.field(name)
        if f is not None:
            options.append((F.col(_KID) == F.lit(sid), decode(f, value, kind)))
    bare = plan.pinned.field(name) if plan.pinned is not None else None
    if bare is None:
        bare = next((f for s in plan.values.values() if (f := s.field(name))), None)
    if bare is not None:
        options.append((~F.col(_KENV), decode(bare, value, kind)))
    return _choose(options, kind)


def classify_changes(raw: DataFrame, plan: Plan, max_record_bytes: int,
                     keep: tuple[str, ...] = ()) -> DataFrame:
    """Decode Debezium change events and give each a reason to quarantine, or null.

    Args:
        raw: rows from Spark's Kafka source.
        plan: how to decode them (:class:`Plan`).
        max_record_bytes: values longer than this are quarantined as ``oversized``.
        keep: more columns of ``raw`` to pass through.

    Returns:
        The change rows (see the module), ``_reason``, and the learning columns.
    """
    value, key = F.col("value"), F.col("key")
    size_ok = F.length(value) <= F.lit(max_record_bytes)
    decoded = JsonDecoder().decode(raw, value.isNotNull() & size_ok)
    v = F.col(VARIANT)
    enveloped = ~_absent(_child(v, "schema")) & ~_absent(_child(v, "payload"))
    schema_text = F.to_json(_child(v, "schema"))
    rows = decoded.rows.withColumn(_ENV, once_per_row(F.coalesce(enveloped, F.lit(False))))
    rows = rows.withColumns({
        _P: once_per_row(F.when(F.col(_ENV), _child(v, "payload")).otherwise(v)),
        LEARN_VALUE: once_per_row(F.when(F.col(_ENV), schema_text))})
    key_text = F.ltrim(key.cast("string"), F.lit("\ufeff"))
    kv = F.when(key.isNotNull() & F.is_valid_utf8(key), F.try_parse_json(key_text))
    rows = rows.withColumn("_kraw", once_per_row(kv))
    kraw = F.col("_kraw")
    key_enveloped = F.coalesce(~_absent(_child(kraw, "schema")) & ~_absent(_child(kraw, "payload")),
                               F.lit(False))
    rows = rows.withColumns({
        _KENV: key_enveloped,
        _K: once_per_row(F.when(key_enveloped, _child(kraw, "payload")).otherwise(kraw)),
        LEARN_KEY: once_per_row(F.when(key_enveloped, F.to_json(_child(kraw, "schema"))))})
    rows = rows.withColumns({_SID: F.xxhash64(F.col(LEARN_VALUE)),
                             _KID: F.xxhash64(F.col(LEARN_KEY))})
    payload = F.col(_P)
    op = F.try_variant_get(payload, "$.op", "string")
    row = F.when(op == F.lit("d"), _child(payload, "before")).otherwise(_child(payload, "after"))
    rows = rows.withColumns({OP: once_per_row(op), "_row": once_per_row(row),
                             "_source": once_per_row(_child(payload, "source"))})
    op, row, source = F.col(OP), F.col("_row"), F.col("_source")
    truncate = op == F.lit("t")
    keys = set(plan.keys)
    decoders = {f.name: (_key_column(f.name, f.dataType, plan) if f.name in keys
                         else _column(f.name, f.dataType, row, plan)) for f in plan.columns}
    # Each column decoded once per row: its checks and its value read the one struct.
    slots = {name: f"_c{i}" for i, name in enumerate(decoders)}
    if slots:  # (an empty withColumns fails under Spark Connect)
        rows = rows.withColumns({slot: once_per_row(decoders[name])
                                 for name, slot in slots.items()})
    columns = {name: Decoding.of(F.col(slot)) for name, slot in slots.items()}
    rows = rows.withColumn("_where", once_per_row(
        position(source, F.col("partition"), F.col("offset"))))
    known = sorted(plan.values)
    value_known = F.col(_SID).isin(known) if known else F.lit(False)
    key_known = F.col(_KID).isin(sorted(plan.key_schemas)) if plan.key_schemas else F.lit(False)
    names = F.to_json(F.json_object_keys(F.to_json(kraw)))
    bare_key = ~F.col(_KENV) & kraw.isNotNull()
    expected = F.lit('["' + '","'.join(plan.keys) + '"]')
    unreadable = [(F.col(_SID) == F.lit(sid), F.lit(f"debezium: unreadable schema ({why})"))
                  for sid, why in plan.unreadable.items()]
    checks: list[tuple[Column, Column | str]] = [
        (value.isNull(), TOMBSTONE), (~size_ok, "oversized"), *decoded.checks,
        *unreadable,
        (F.col(_ENV) & ~value_known, UNKNOWN),
        (~F.col(_ENV) & F.lit(plan.pinned is None),
         "debezium: no schema (the JSON converter's schemas.enable=false): pin the columns in "
         "schema.fields"),
        (op.isNull(), "debezium: not a change event (no op)"),
        (~op.isin(*OPS), F.concat(F.lit("debezium: unknown op "), op)),
        (op.isin("r", "c", "u") & _absent(row), F.concat(F.lit("debezium: "), op,
                                                         F.lit(" without after"))),
        (~truncate & key.isNull(), "missing:kafka.key"),
        (~truncate & kraw.isNull(), "invalid_json:kafka.key"),
        (~truncate & F.col(_KENV) & ~key_known, UNKNOWN),
        (~truncate & bare_key & F.lit(not plan.keys), UNKNOWN),
        (~truncate & bare_key & (names != expected),
         F.concat(F.lit("debezium: the key's fields "), names, F.lit(" are not "), expected)),
    ]
    for name in plan.keys:
        got = columns[name]
        checks += [(~truncate & got.value.isNull() & ~got.bad, f"missing:{name}"),
                   (~truncate & got.bad, f"bad_value:{name}")]
    where = F.col("_where")
    checks.append((where.isNull(), "debezium: no source position"))
    for name, got in columns.items():
        if name not in keys:
            checks += [(got.bad, f"bad_value:{name}"), (got.out_of_range, f"out_of_range:{name}")]
    rows = rows.withColumn("_reason", once_per_row(F.coalesce(*[
        F.when(cond, F.lit(text) if isinstance(text, str) else text) for cond, text in checks])))
    learning = F.col("_reason") == F.lit(UNKNOWN)
    stamp = F.coalesce(F.try_variant_get(source, "$.ts_ms", "bigint"),
                       F.try_variant_get(payload, "$.ts_ms", "bigint"))
    source_ts = F.coalesce(F.timestamp_millis(stamp), F.col("timestamp"))
    toasted = [F.when(got.unavailable, F.lit(name)) for name, got in columns.items()
               if isinstance(plan.columns[name].dataType, StringType | BinaryType)]
    unchanged = F.filter(F.array(*toasted), lambda n: n.isNotNull()) if toasted else \
        F.array().cast("array<string>")
    return rows.select(
        *[F.when(~truncate, got.value).alias(name) for name, got in columns.items()],
        op.alias(OP), where.alias(POSITION), source_ts.alias(SOURCE_TS),
        (op == F.lit("d")).alias(DELETED), truncate.alias(TRUNCATE), unchanged.alias(UNCHANGED),
        F.to_date(F.to_utc_timestamp(source_ts, F.current_timezone())).alias("event_date"),
        F.col("topic").alias("kafka_topic"),
        F.col("partition").cast("long").alias("kafka_partition"),
        F.col("offset").alias("kafka_offset"),
        F.col("timestamp").alias("kafka_timestamp"),
        key.alias("kafka_key"), value.alias("raw_value"), "_reason",
        F.when(learning & F.col(_ENV) & ~value_known, F.struct(
            F.col(_SID).alias("id"), F.col(LEARN_VALUE).alias("text"))).alias(LEARN_VALUE),
        F.when(learning & F.col(_KENV) & ~key_known, F.struct(
            F.col(_KID).alias("id"), F.col(LEARN_KEY).alias("text"))).alias(LEARN_KEY),
        F.when(learning & bare_key, names).alias(LEARN_NAMES),
        *[F.col(c) for c in keep])
