"""YAML-schema fields parsed in the JVM: every type lands typed; every violation has a reason."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest
from pyspark.sql import DataFrame, Row, SparkSession

from pipelines.sink.parse import classify, valid_events
from schemas.loader import load_schema_file, schema_from_mapping
from tests.support.orders import BASE_MS, ORDERS_SCHEMA, encode, order

SCHEMA = load_schema_file(ORDERS_SCHEMA)


def kafka_rows(spark: SparkSession, values: list[bytes], key: bytes | None = None,
               headers: list[list[tuple[str, bytes]]] | None = None) -> DataFrame:
    """Kafka source rows holding ``values`` at offsets 0, 1, ...; ``headers``: each record's."""
    now = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
    rows = [(key, v, "orders", 0, i, now, 0, headers[i] if headers else [])
            for i, v in enumerate(values)]
    return spark.createDataFrame(
        rows, "key binary, value binary, topic string, partition int, offset long, "
              "timestamp timestamp, timestampType int, "
              "headers array<struct<key: string, value: binary>>")


#: A valid order with one change, and the reason its record is quarantined with.
VIOLATIONS: dict[str, tuple[dict[str, Any], str]] = {
    # a string is not an int, even a numeric one; nor is a fraction
    "line_no-numeric-string": ({"line_no": "12"}, "bad_type:line_no"),
    "line_no-fraction": ({"line_no": 1.5}, "bad_type:line_no"),
    "line_no-beyond-32-bits": ({"line_no": 3_000_000_000}, "out_of_range:line_no"),
    "qty-float": ({"qty": 1.0}, "bad_type:qty"),
    "price-string": ({"price": "9.5"}, "bad_type:price"),
    # would be rounded into decimal(12,2); 11 integer digits > 10
    "amount-three-decimals": ({"amount": 1.234}, "out_of_range:amount"),
    "amount-eleven-digits": ({"amount": 12345678901.5}, "out_of_range:amount"),
    "paid-string": ({"paid": "true"}, "bad_type:paid"),
    "status-not-allowed": ({"status": "lost"}, "not_allowed:status"),
    "order_id-too-long": ({"order_id": "x" * 65}, "too_long:order_id"),
    "order_id-absent": ({"order_id": ...}, "missing:order_id"),
    # epoch_ms: an integer
    "updated_at-iso-text": ({"updated_at": "2026-03-01T12:00:00Z"}, "bad_type:updated_at"),
    "created_at-no-zone": ({"created_at": "2026-03-01 11:00:00"}, "bad_timestamp:created_at"),
    "ship_date-no-such-day": ({"ship_date": "2026-02-30"}, "bad_date:ship_date"),
    "ship_date-other-format": ({"ship_date": "04.03.2026"}, "bad_date:ship_date"),
    "tags-int-item": ({"tags": ["a", 1]}, "bad_item:tags"),
    "tags-not-a-list": ({"tags": "a"}, "bad_type:tags"),
    "address-no-city": ({"address": {"zip": "1"}}, "missing:address.city"),
    "address-int-city": ({"address": {"city": 7}}, "bad_type:address.city"),
    "address-a-list": ({"address": []}, "bad_type:address"),
    "attrs-a-list": ({"attrs": [1]}, "bad_type:attrs"),
}
#: The good records, before the violations in the batch: by offset.
TYPED, HEADERLESS, OPTIONAL_ABSENT = 0, 1, 2
OPTIONAL = order(paid=None, created_at=..., ship_date=..., attrs=None, address={"city": "Lyon"})


@dataclass(frozen=True)
class Parsed:
    """One classified batch: offset ``TYPED`` (every field, a ``trace-id`` header),
    ``HEADERLESS`` (the same, no header), ``OPTIONAL_ABSENT`` (:data:`OPTIONAL`), then one
    record per :data:`VIOLATIONS` case, in order."""

    classified: DataFrame
    reasons: dict[int, str | None]  # by offset
    valid: dict[int, Row]  # valid_events rows, by offset


@pytest.fixture(scope="module")
def parsed(spark: SparkSession) -> Parsed:
    """Each test judges its own record(s) of ONE batch: a Spark parse costs seconds, and
    every check is per record (a reason is never about another row)."""
    records = [order(), order(), OPTIONAL, *[order(**c) for c, _ in VIOLATIONS.values()]]
    headers = [[("trace-id", b"t-42")], *[[] for _ in records[1:]]]
    classified = classify(kafka_rows(spark, [encode(r) for r in records], headers=headers),
                          SCHEMA, 100_000)
    reasons = {r["kafka_offset"]: r["_reason"]
               for r in classified.select("kafka_offset", "_reason").collect()}
    valid = {r["kafka_offset"]: r for r in valid_events(classified, SCHEMA).collect()}
    assert len(reasons) == len(records)
    return Parsed(classified, reasons, valid)


def test_a_record_with_every_field_type_becomes_a_typed_row(parsed: Parsed) -> None:
    assert parsed.reasons[TYPED] is None
    row = parsed.valid[TYPED]
    assert row.asDict(recursive=True) | {"ingested_at": None} == {
        "order_id": "o-1", "line_no": 1, "qty": 3, "price": 9.5, "amount": Decimal("28.50"),
        "paid": True, "status": "paid",
        "updated_at": dt.datetime(2026, 3, 1, 12, 0, 0, 1000),  # epoch ms, session zone UTC
        "created_at": dt.datetime(2026, 3, 1, 10, 0), "ship_date": dt.date(2026, 3, 4),
        "tags": ["a", "b"], "address": {"city": "Lyon", "zip": "69001"},
        "attrs": '{"gift":true}', "trace_id": "t-42", "event_date": dt.date(2026, 3, 1),
        "kafka_topic": "orders", "kafka_partition": 0, "kafka_offset": TYPED,
        "kafka_timestamp": dt.datetime(2026, 3, 1), "ingested_at": None}
    assert [f.name for f in parsed.classified.schema.fields][:14] == [
        *SCHEMA.target_schema().fieldNames()[:14]]


@pytest.mark.parametrize("case", list(VIOLATIONS))
def test_each_violation_is_quarantined_with_a_reason_naming_the_field(
        parsed: Parsed, case: str) -> None:
    offset = OPTIONAL_ABSENT + 1 + list(VIOLATIONS).index(case)
    assert parsed.reasons[offset] == VIOLATIONS[case][1], case
    assert offset not in parsed.valid


def test_optional_fields_may_be_absent_or_null(parsed: Parsed) -> None:
    assert parsed.reasons[OPTIONAL_ABSENT] is None
    assert OPTIONAL_ABSENT in parsed.valid


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


def test_a_missing_header_is_a_null_column(parsed: Parsed) -> None:
    row = parsed.valid[HEADERLESS]
    assert row["trace_id"] is None and row["updated_at"] == \
        dt.datetime.fromtimestamp((BASE_MS + 1) / 1000, dt.UTC).replace(tzinfo=None)
