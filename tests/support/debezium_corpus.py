"""The corpus of real Debezium messages (tests/data/debezium/) as Spark's Kafka rows, and what
deltasink must make of them: the decoded values of its ``types`` table, per column."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from tests.support.topic_records import TopicRecord, read_jsonl

CORPUS = Path(__file__).resolve().parents[1] / "data" / "debezium"
#: When the corpus's records were "sent" (their Kafka timestamp; the corpus keeps none).
SENT = dt.datetime(2026, 1, 1)
#: The ``types`` table's columns pinned for schemas off (its Postgres types, as Debezium sends
#: them with its defaults); ``ratio`` (numeric, no precision) exact, as text.
TYPES_PINNED = {"fields": {
    "id": "int", "big": "bigint", "small": "smallint", "name": "string", "active": "boolean",
    "price": "decimal(12,2)", "ratio": "numeric", "score": "double", "born": "date",
    "wakes": {"type": "time", "unit": "us"}, "wakes_ms": {"type": "time", "unit": "ms"},
    "seen": {"type": "timestamp_ntz", "unit": "us"},
    "seen_ms": {"type": "timestamp_ntz", "unit": "ms"}, "seen_tz": "timestamp",
    "wakes_tz": "string", "doc": "json", "docb": "json", "uid": "string", "mood": "string",
    "raw": "binary", "added": "string"}}
#: Record 0 (a snapshot read of row 1): every column set.
FULL_ROW: dict[str, Any] = {
    "id": 1, "big": 9007199254740993, "small": 7, "name": "Zoë 😀", "active": True,
    "price": Decimal("1234567890.12"), "ratio": "3.14159265358979", "score": 2.5,
    "born": dt.date(2024, 2, 29), "wakes": "13:45:30.123456", "wakes_ms": "13:45:30.123",
    "seen": dt.datetime(2024, 2, 29, 13, 45, 30, 123456),
    "seen_ms": dt.datetime(2024, 2, 29, 13, 45, 30, 123000),
    "seen_tz": dt.datetime(2024, 2, 29, 11, 45, 30, 123456),
    "wakes_tz": "11:45:30Z", "doc": '{"a": [1, 2],  "kept": "as typed"}',
    "docb": '{"a": 1, "b": {"c": null}}', "uid": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
    "mood": "happy", "raw": b"\xde\xad\xbe\xef"}
#: Record 2 (an insert of row 3): the edge values.
EDGE_ROW: dict[str, Any] = {
    "id": 3, "big": -9223372036854775808, "small": -32768, "name": "", "active": False,
    "price": Decimal("-0.01"), "ratio": "0.00000000000000000001", "score": float("nan"),
    "born": dt.date(1969, 7, 20), "wakes": "00:00:00", "wakes_ms": "23:59:59.999",
    "seen": dt.datetime(1900, 1, 1), "seen_ms": dt.datetime(1969, 12, 31, 23, 59, 59, 999000),
    "seen_tz": dt.datetime(1969, 12, 31, 23, 59, 59, 999999), "wakes_tz": "05:30:00Z",
    "doc": "[]", "docb": '[1, "a", null]', "uid": "00000000-0000-0000-0000-000000000000",
    "mood": "sad", "raw": b""}


def corpus(name: str) -> list[TopicRecord]:
    """The records of ``tests/data/debezium/<name>.jsonl``."""
    return read_jsonl(CORPUS / f"{name}.jsonl")


def kafka_rows(spark: SparkSession, records: Sequence[TopicRecord], first_offset: int = 0,
               partition: int | None = None) -> DataFrame:
    """``records`` as Spark's Kafka source rows: their bytes, from ``first_offset`` on (a
    record sent again sits at a higher offset), in their partition or ``partition``."""
    rows = [(None if r.key is None else r.key.encode(),
             None if r.value is None else r.value.encode(), r.topic,
             r.partition if partition is None else partition, first_offset + i, SENT, 0)
            for i, r in enumerate(records)]
    return spark.createDataFrame(rows, "key binary, value binary, topic string, partition int, "
                                       "offset long, timestamp timestamp, timestampType int")


def plain(value: Any) -> Any:
    """A value as compared in the tests (binary as bytes)."""
    return bytes(value) if isinstance(value, bytearray) else value
