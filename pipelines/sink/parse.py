"""Kafka records → typed event rows, or quarantine rows with a reason. All of it runs in the JVM.

:func:`classify` adds a ``_reason`` column (null for a good record) and the parsed event columns;
:func:`valid_events` and :func:`quarantine_rows` split the result. Checks, first failure wins:

``tombstone`` (null value) · ``oversized`` (value over ``max_record_bytes``) · the decoder's
(:mod:`pipelines.formats.decoded`): ``invalid_utf8`` · ``invalid_json`` · ``not_an_object`` for
JSON, the ``avro: ...`` reasons of :mod:`pipelines.formats.avro` for Avro · then, per schema
field: ``missing:<f>`` (absent or null),
``bad_type:<f>``, ``out_of_range:<f>``, ``empty:<f>``, ``too_long:<f>``, ``not_allowed:<f>``,
``bad_timestamp:<f>`` (unparseable, no zone, or a UTC year outside 1000..9999), ``bad_date:<f>``,
``bad_item:<f>`` (see :mod:`pipelines.sink.fields`) · ``missing:kafka.key`` (a schema keyed on
the Kafka key, a record without one) · ``invalid_utf8:kafka.key`` (such a key that is not UTF-8
text) · ``invalid_utf8:<column>`` (a header the schema keeps as a column, not UTF-8 text).

Odd but decided inputs (issue 33), each tested in ``tests/pipelines/test_bad_inputs.py``:

* **A UTF-8 byte order mark** before the JSON is skipped: the record is valid (RFC 8259 lets a
  parser ignore it; Windows tools write it). ``raw_value`` keeps the bytes as sent.
* **Duplicate keys** in one JSON object (``{"event_id": "a", "event_id": "b"}``) are
  ``invalid_json``: which value the producer meant is unknowable, and picking one would land an
  event under an id nobody may have sent. Spark's JSON parser refuses them.
* **NaN, Infinity, -Infinity** are not JSON (RFC 8259): ``invalid_json``, wherever they appear.
* **A Kafka key or kept header that is not UTF-8**: quarantined with ``invalid_utf8:...``, not
  landed with its bytes mangled into a string (two different keys could then dedup as one).
  Headers the schema does not keep, and keys of a schema not keyed on ``kafka.key``, are not
  read, so their bytes do not matter.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from pipelines.formats.decoded import VARIANT, Decoder, once_per_row, skipped
from pipelines.formats.json import JsonDecoder
from pipelines.sink import fields
from schemas.base import KAFKA_KEY, KAFKA_KEY_COLUMN, KAFKA_TIMESTAMP, EventSchema, FieldSpec

#: Prefix of the columns holding each top-level field's variant (dropped by ``classify``).
_FIELD = "_field_"
#: Prefix of the columns holding each top-level timestamp field's parsed value.
_STAMP = "_stamp_"
INGESTED_AT = "ingested_at"
QUARANTINE_COLUMNS = ("kafka_topic", "kafka_partition", "kafka_offset", "kafka_timestamp",
                      "kafka_key", "raw_value", "reason", "pipeline", "batch_id", "quarantined_at",
                      "record_hash", "redriven_at", "redriven_version")


def _field_variant(schema: EventSchema, spec: FieldSpec) -> Column:
    """The column holding the variant of top-level field ``spec`` (see :func:`_with_fields`)."""
    return F.col(f"{_FIELD}{schema.fields.index(spec)}")


def _with_fields(parsed: DataFrame, schema: EventSchema) -> DataFrame:
    """``parsed`` with each top-level field's variant as a column of its own, once per row.

    A field's checks and its value all read its variant. Written inline, each of them carried
    its own ``variant_get`` of the record, and the generated code took more of them per row than
    one. Measured warm on ``events_v1`` (one session, alternating, medians of four): 500,000
    records took 8.5 s to classify before, 6.5 s after; the rows are the same. The guard keeps
    the optimizer from inlining the column back into each use.
    """
    value = F.col(VARIANT)
    parsed = parsed.withColumns({f"{_FIELD}{i}": once_per_row(fields.child(value, spec.name))
                                 for i, spec in enumerate(schema.fields)})
    stamps = {f"{_STAMP}{i}": once_per_row(fields.value_of(spec, F.col(f"{_FIELD}{i}")))
              for i, spec in enumerate(schema.fields) if spec.kind == "timestamp"}
    return parsed.withColumns(stamps) if stamps else parsed


def _typed(schema: EventSchema, spec: FieldSpec) -> Column | None:
    """The column holding a top-level timestamp field's parsed value, None for other kinds.

    The value, its ``bad_timestamp`` check and ``event_date`` all read it. Written inline, each
    parsed the text again (a zone-suffix match and a cast): five matches per row in the plan.
    Measured warm on ``events_v1``, 500,000 records, one process per build, alternating,
    medians of five: ``classify`` took 4.14 / 4.05 s before, 3.28 / 3.23 s after.
    """
    return F.col(f"{_STAMP}{schema.fields.index(spec)}") if spec.kind == "timestamp" else None


def _value(schema: EventSchema, spec: FieldSpec) -> Column:
    """A top-level field's typed value."""
    typed = _typed(schema, spec)
    return fields.value_of(spec, _field_variant(schema, spec)) if typed is None else typed


def _header_bytes(raw: DataFrame, name: str) -> Column:
    """The bytes of Kafka header ``name`` (the first one if repeated), or null."""
    if "headers" not in raw.columns:  # a redrive: quarantine rows keep no headers
        return F.lit(None).cast("binary")
    match = F.filter(F.col("headers"), lambda h: h["key"] == F.lit(name))
    return F.get(match, 0)["value"]


def _header(raw: DataFrame, name: str) -> Column:
    """The value of Kafka header ``name`` as UTF-8 text (the first one if repeated), or null."""
    return _header_bytes(raw, name).cast("string")


def classify(raw: DataFrame, schema: EventSchema, max_record_bytes: int,
             keep: tuple[str, ...] = (), decoder: Decoder | None = None) -> DataFrame:
    """Parse Kafka rows against ``schema`` and give each one a reason to quarantine, or null.

    Args:
        raw: rows from Spark's Kafka source (``key, value, topic, partition, offset, timestamp``).
        schema: the event schema.
        max_record_bytes: values longer than this are quarantined as ``oversized``.
        keep: more columns of ``raw`` to pass through unchanged (a redrive keeps the old reason).
        decoder: how values are decoded (:mod:`pipelines.formats.decoded`): JSON (the
            default), or Avro in the Confluent wire format (:mod:`pipelines.formats.avro`).

    Returns:
        ``raw``'s Kafka columns renamed ``kafka_*``, ``raw_value``, one column per schema field,
        ``event_date`` (the UTC date of the time field), ``_reason`` and the ``keep`` columns.
    """
    value = F.col("value")
    size_ok = F.length(value) <= F.lit(max_record_bytes)
    decoded = (decoder or JsonDecoder()).decode(raw, value.isNotNull() & size_ok)
    parsed = decoded.rows
    envelope: list[tuple[Column, Column | str]] = [
        (value.isNull(), "tombstone"), (~size_ok, "oversized"), *decoded.checks]
    parsed = _with_fields(parsed, schema)
    checks = envelope + [c for spec in schema.fields
                         for c in fields.checks(spec, _field_variant(schema, spec), spec.name,
                                                _typed(schema, spec))]
    if KAFKA_KEY in schema.keys:
        checks.append((F.col("key").isNull(), f"missing:{KAFKA_KEY}"))
        checks.append((~F.is_valid_utf8(F.col("key")), f"invalid_utf8:{KAFKA_KEY}"))
    for column, header in schema.headers:
        sent = _header_bytes(raw, header)
        checks.append((sent.isNotNull() & ~F.is_valid_utf8(sent), f"invalid_utf8:{column}"))
    reason = F.coalesce(*[F.when(cond, F.lit(text) if isinstance(text, str) else text)
                          for cond, text in checks])
    event_time = F.col("timestamp") if schema.time_field == KAFKA_TIMESTAMP else \
        _value(schema, schema.field(schema.time_field))
    return parsed.select(
        *[_value(schema, spec).alias(spec.name) for spec in schema.fields],
        *[_header(raw, header).alias(column) for column, header in schema.headers],
        F.to_date(fields.utc(event_time)).alias("event_date"),
        F.col("topic").alias("kafka_topic"),
        F.col("partition").cast("long").alias("kafka_partition"),
        F.col("offset").alias("kafka_offset"),
        F.col("timestamp").alias("kafka_timestamp"),
        F.col("key").alias("kafka_key"),
        value.alias("raw_value"),
        reason.alias("_reason"),
        *[F.col(c) for c in keep],
    )


def valid_events(classified: DataFrame, schema: EventSchema,
                 keep: tuple[str, ...] = ()) -> DataFrame:
    """The good records, as target rows (schema fields, ``event_date``, Kafka coordinates).

    ``ingested_at`` is the current time, or the input's own ``ingested_at`` column if it has one
    (a batch that materialized it already); ``keep`` passes more input columns through.
    """
    columns = [F.col(spec.name) for spec in schema.fields]
    columns += [F.col(column) for column, _ in schema.headers]
    if KAFKA_KEY in schema.keys:
        columns.append(F.col("kafka_key").cast("string").alias(KAFKA_KEY_COLUMN))
    ingested = F.col(INGESTED_AT) if INGESTED_AT in classified.columns else \
        F.current_timestamp().alias(INGESTED_AT)
    return classified.where(F.col("_reason").isNull()).select(
        *columns, "event_date", "kafka_topic", "kafka_partition", "kafka_offset",
        "kafka_timestamp", ingested, *[F.col(c) for c in keep])


def record_hash() -> Column:
    """A 64-bit hash of a Kafka record's key and value (nulls hash too; never null).

    Part of the quarantine key: it tells apart two records at the same coordinates (a recreated
    topic, another cluster) and is the same for every replay of one record.
    """
    return F.xxhash64(F.col("kafka_key"), F.col("raw_value"), F.col("kafka_key").isNull(),
                      F.col("raw_value").isNull())


def quarantine_rows(classified: DataFrame, pipeline: str, batch_id: int) -> DataFrame:
    """The bad records, with their raw bytes, reason, coordinates, hash, batch id and time (a
    skipped record, :data:`pipelines.formats.decoded.SKIP`, is not one).

    ``redriven_at`` and ``redriven_version`` are null: ``deltasink quarantine redrive`` sets them.
    """
    reason = F.col("_reason")
    return classified.where(reason.isNotNull() & ~skipped(reason)).select(
        "kafka_topic", "kafka_partition", "kafka_offset", "kafka_timestamp", "kafka_key",
        "raw_value", F.col("_reason").alias("reason"), F.lit(pipeline).alias("pipeline"),
        F.lit(batch_id).cast("long").alias("batch_id"),
        F.current_timestamp().alias("quarantined_at"), record_hash().alias("record_hash"),
        F.lit(None).cast("timestamp").alias("redriven_at"),
        F.lit(None).cast("long").alias("redriven_version"))
