"""YAML-schema fields parsed in the JVM: every type lands typed; every violation has a reason."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from pipelines.sink.parse import classify, valid_events
from schemas.loader import load_schema_file, schema_from_mapping
from tests.support.orders import BASE_MS, ORDERS_SCHEMA, encode, order

SCHEMA = load_schema_file(ORDERS_SCHEMA)


def kafka_rows(spark: SparkSession, values: list[bytes], key: bytes | None = None,
               headers: list[tuple[str, bytes]] | None = None) -> DataFrame:
    now = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
    rows = [(key, v, "orders", 0, i, now, 0, headers or []) for i, v in enumerate(values)]
    return spark.createDataFrame(
        rows, "key binary, value binary, topic string, partition int, offset long, "
              "timestamp timestamp, timestampType int, "
              "headers array<struct<key: string, value: binary>>")


def reason(spark: SparkSession, record: dict[str, Any]) -> str | None:
    row = classify(kafka_rows(spark, [encode(record)]), SCHEMA, 100_000).first()
    assert row is not None
    return row["_reason"]


def test_a_record_with_every_field_type_becomes_a_typed_row(spark: SparkSession) -> None:
    raw = kafka_rows(spark, [encode(order())], headers=[("trace-id", b"t-42")])
    classified = classify(raw, SCHEMA, 100_000)
    assert classified.first()["_reason"] is None  # type: ignore[index]
    row = valid_events(classified, SCHEMA).first()
    assert row is not None
    assert row.asDict(recursive=True) | {"ingested_at": None} == {
        "order_id": "o-1", "line_no": 1, "qty": 3, "price": 9.5, "amount": Decimal("28.50"),
        "paid": True, "status": "paid",
        "updated_at": dt.datetime(2026, 3, 1, 12, 0, 0, 1000),  # epoch ms, session zone UTC
        "created_at": dt.datetime(2026, 3, 1, 10, 0), "ship_date": dt.date(2026, 3, 4),
        "tags": ["a", "b"], "address": {"city": "Lyon", "zip": "69001"},
        "attrs": '{"gift":true}', "trace_id": "t-42", "event_date": dt.date(2026, 3, 1),
        "kafka_topic": "orders", "kafka_partition": 0, "kafka_offset": 0,
        "kafka_timestamp": dt.datetime(2026, 3, 1), "ingested_at": None}
    assert [f.name for f in classified.schema.fields][:14] == [*SCHEMA.target_schema()
                                                                .fieldNames()[:14]]


@pytest.mark.parametrize(("changes", "expected"), [
    ({"line_no": "12"}, "bad_type:line_no"),  # a string is not an int, even a numeric one
    ({"line_no": 1.5}, "bad_type:line_no"),  # nor is a fraction
    ({"line_no": 3_000_000_000}, "out_of_range:line_no"),  # beyond 32 bits
    ({"qty": 1.0}, "bad_type:qty"),
    ({"price": "9.5"}, "bad_type:price"),
    ({"amount": 1.234}, "out_of_range:amount"),  # would be rounded into decimal(12,2)
    ({"amount": 12345678901.5}, "out_of_range:amount"),  # 11 integer digits > 10
    ({"paid": "true"}, "bad_type:paid"),
    ({"status": "lost"}, "not_allowed:status"),
    ({"order_id": "x" * 65}, "too_long:order_id"),
    ({"order_id": ...}, "missing:order_id"),
    ({"updated_at": "2026-03-01T12:00:00Z"}, "bad_type:updated_at"),  # epoch_ms: an integer
    ({"created_at": "2026-03-01 11:00:00"}, "bad_timestamp:created_at"),  # no zone
    ({"ship_date": "2026-02-30"}, "bad_date:ship_date"),
    ({"ship_date": "04.03.2026"}, "bad_date:ship_date"),
    ({"tags": ["a", 1]}, "bad_item:tags"),
    ({"tags": "a"}, "bad_type:tags"),
    ({"address": {"zip": "1"}}, "missing:address.city"),
    ({"address": {"city": 7}}, "bad_type:address.city"),
    ({"address": []}, "bad_type:address"),
    ({"attrs": [1]}, "bad_type:attrs"),
])
def test_each_violation_is_quarantined_with_a_reason_naming_the_field(
        spark: SparkSession, changes: dict[str, Any], expected: str) -> None:
    assert reason(spark, order(**changes)) == expected


def test_optional_fields_may_be_absent_or_null(spark: SparkSession) -> None:
    record = order(paid=None, created_at=..., ship_date=..., attrs=None,
                   address={"city": "Lyon"})
    assert reason(spark, record) is None


def test_the_kafka_key_and_timestamp_can_be_the_key_and_the_event_time(
        spark: SparkSession) -> None:
    schema = schema_from_mapping({"name": "clicks", "key": "kafka.key",
                                  "event_time": "kafka.timestamp",
                                  "fields": {"page": {"type": "string"}}})
    good = classify(kafka_rows(spark, [b'{"page": "/"}'], key=b"user-7"), schema, 1000)
    row = valid_events(good, schema).first()
    assert row is not None
    assert (row["page"], row["kafka_key"], row["event_date"]) == ("/", "user-7",
                                                                  dt.date(2026, 3, 1))
    assert "kafka_key" in schema.target_schema().fieldNames()
    keyless = classify(kafka_rows(spark, [b'{"page": "/"}']), schema, 1000).first()
    assert keyless is not None and keyless["_reason"] == "missing:kafka.key"


def test_a_missing_header_is_a_null_column(spark: SparkSession) -> None:
    classified = classify(kafka_rows(spark, [encode(order())]), SCHEMA, 100_000)
    row = valid_events(classified, SCHEMA).first()
    assert row is not None and row["trace_id"] is None and row["updated_at"] == \
        dt.datetime.fromtimestamp((BASE_MS + 1) / 1000, dt.UTC).replace(tzinfo=None)
