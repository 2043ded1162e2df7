"""parse.classify: every poison kind gets its reason; good records become typed rows."""

from __future__ import annotations

import datetime as dt

import pytest
from pyspark.sql import DataFrame, SparkSession

from pipelines.kafka.produce import POISON_KINDS
from pipelines.sink.parse import classify, quarantine_rows, valid_events
from schemas import get_schema

SCHEMA = get_schema("events_v1")
GOOD = (b'{"event_id":"e1","event_type":"t","event_time":"2026-03-01T23:30:00-02:00",'
        b'"payload":{"a":1},"extra":"ignored"}')


def kafka_rows(spark: SparkSession, values: list[bytes | None]) -> DataFrame:
    now = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
    rows = [(None, v, "orders", 0, i, now, 0) for i, v in enumerate(values)]
    return spark.createDataFrame(
        rows, "key binary, value binary, topic string, partition int, offset long, "
              "timestamp timestamp, timestampType int")


def reasons(spark: SparkSession, values: list[bytes | None], limit: int = 1000) -> list[str | None]:
    out = classify(kafka_rows(spark, values), SCHEMA, limit).select("kafka_offset", "_reason")
    out = out.orderBy("kafka_offset")
    return [r["_reason"] for r in out.collect()]


def test_good_record_becomes_a_typed_row_with_utc_event_date(spark: SparkSession) -> None:
    rows = valid_events(classify(kafka_rows(spark, [GOOD]), SCHEMA, 10_000), SCHEMA).collect()
    assert len(rows) == 1
    row = rows[0]
    assert row["event_id"] == "e1"
    assert row["event_time"] == dt.datetime(2026, 3, 2, 1, 30)  # session time zone is UTC
    assert row["event_date"] == dt.date(2026, 3, 2)  # the UTC date, not the local one
    assert row["payload"] == '{"a":1}'
    assert row["kafka_topic"] == "orders" and row["kafka_offset"] == 0


def test_every_poison_kind_gets_a_reason(spark: SparkSession) -> None:
    import random

    rng = random.Random(0)
    values = [POISON_KINDS[k](rng, i)[1] for i, k in enumerate(POISON_KINDS)]
    got = dict(zip(POISON_KINDS, reasons(spark, values, limit=1_048_576), strict=True))
    assert got == {
        "invalid_json": "invalid_json", "not_an_object": "not_an_object",
        "missing_key": "missing:event_id", "null_key": "missing:event_id",
        "empty_key": "empty:event_id", "wrong_type": "bad_type:event_id",
        "bad_timestamp": "bad_timestamp:event_time", "invalid_utf8": "invalid_utf8",
        "tombstone": "tombstone", "oversized": "oversized",
    }


def test_edge_values(spark: SparkSession) -> None:
    def event(eid: str = '"k"', ts: str = '"2026-01-01T00:00:00Z"', extra: str = "") -> bytes:
        return f'{{"event_id":{eid},"event_type":"t","event_time":{ts}{extra}}}'.encode()

    cases = {
        event(eid='"' + "x" * 256 + '"'): None,
        event(eid='"' + "x" * 257 + '"'): "too_long:event_id",
        event(ts='"2026-01-01T00:00:00"'): "bad_timestamp:event_time",  # no zone
        event(ts='"2026-01-01T00:00:00+0530"'): None,
        event(ts='"0001-01-01T00:00:00Z"'): "bad_timestamp:event_time",
        event(ts='"99999-01-01T00:00:00Z"'): "bad_timestamp:event_time",
        event(ts='"9999-12-31T23:00:00-05:00"'): "bad_timestamp:event_time",  # UTC year 10000
        event(ts='"1000-01-01T00:00:00Z"'): None,
        event(ts="1700000000"): "bad_type:event_time",
        event(extra=',"payload":[1]'): "bad_type:payload",
        event(extra=',"payload":null'): None,
        event(eid='"\' OR 1=1 --"'): None,
        event(eid='"emoji \\ud83d\\ude00 \\u0001"'): None,
        b"null": "not_an_object",
        b'"just a string"': "not_an_object",
        b"[" * 5000 + b"]" * 5000: "invalid_json",
    }
    assert reasons(spark, list(cases), limit=1_000_000) == list(cases.values())


def test_quarantine_rows_keep_raw_bytes_and_coordinates(spark: SparkSession) -> None:
    classified = classify(kafka_rows(spark, [GOOD, b"\xff\xfe"]), SCHEMA, 10_000)
    rows = quarantine_rows(classified, "p1", 7).collect()
    assert len(rows) == 1
    q = rows[0]
    assert bytes(q["raw_value"]) == b"\xff\xfe"
    assert (q["reason"], q["kafka_offset"], q["pipeline"], q["batch_id"]) == \
        ("invalid_utf8", 1, "p1", 7)


def test_record_hash_tells_records_apart_and_repeats_on_replay(spark: SparkSession) -> None:
    values: list[bytes | None] = [b"{bad", b"{bad", b"{other", None, b""]
    classified = classify(kafka_rows(spark, values), SCHEMA, 10_000)
    hashes = [r["record_hash"] for r in
              quarantine_rows(classified, "p1", 0).orderBy("kafka_offset").collect()]
    assert None not in hashes
    assert hashes[0] == hashes[1]  # same bytes: same hash, whatever the offset
    assert len(set(hashes[1:])) == 4  # other bytes, a tombstone and an empty value all differ
    replay = classify(kafka_rows(spark, values), SCHEMA, 10_000)
    assert [r["record_hash"] for r in quarantine_rows(replay, "p1", 3)
            .orderBy("kafka_offset").collect()] == hashes


@pytest.mark.parametrize("ansi", ["true", "false"])
def test_no_poison_kind_fails_the_batch_with_ansi_on_or_off(spark: SparkSession,
                                                            ansi: str) -> None:
    """Serverless runs with ``spark.sql.ansi.enabled=true`` (Spark 4's default too), where a
    failing cast raises instead of giving null: every bad record must still get its reason,
    and the valid rows and quarantine rows must still compute."""
    import random

    rng = random.Random(1)
    poison = [POISON_KINDS[k](rng, i)[1] for i, k in enumerate(POISON_KINDS)]
    edge = [b'{"event_id":"k","event_type":"t","event_time":"99999-01-01T00:00:00Z"}',
            b'{"event_id":"k","event_type":"t","event_time":1700000000}',
            b'{"event_id":"k","event_type":"t","event_time":"2026-01-01T00:00:00Z",'
            b'"payload":[1]}']
    before = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", ansi)
    try:
        classified = classify(kafka_rows(spark, [GOOD, *poison, *edge]), SCHEMA, 1_048_576)
        got = [r["_reason"] for r in
               classified.orderBy("kafka_offset").select("_reason").collect()]
        valid, bad = valid_events(classified, SCHEMA), quarantine_rows(classified, "p", 0)
        for rows in (valid, bad):  # every column computed (a Python datetime stops at 9999)
            rows.write.format("noop").mode("overwrite").save()
        ids, quarantined = [r["event_id"] for r in valid.collect()], bad.count()
    finally:
        spark.conf.set("spark.sql.ansi.enabled", before or "true")
    assert got[0] is None and all(got[1:]), got
    assert ids == ["e1"]
    assert quarantined == len(poison) + len(edge)
