"""The batch's one job before its MERGEs: its rows and the counts observed on them."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession

from pipelines.sink.materialize import release
from pipelines.sink.prepare import prepare
from tests.support.configs import make_config

DAY = dt.date(2026, 3, 10)


def kafka_rows(spark: SparkSession, values: list[bytes]) -> DataFrame:
    stamp = dt.datetime(2026, 3, 1)
    rows = [(None, v, "orders", 0, 10 + i, stamp + dt.timedelta(seconds=i), 0)
            for i, v in enumerate(values)]
    return spark.createDataFrame(rows, "key binary, value binary, topic string, partition int, "
                                       "offset long, timestamp timestamp, timestamptype int")


def event(event_id: str, day: dt.date) -> bytes:
    return json.dumps({"event_id": event_id, "event_type": "t",
                       "event_time": f"{day.isoformat()}T12:00:00Z"}).encode()


def test_counts_come_back_with_the_rows_and_raw_bytes_stay_only_on_bad_records(
        spark: SparkSession, lake: Path) -> None:
    cfg = make_config(lake, "127.0.0.1:1", "orders")
    later = DAY + dt.timedelta(days=1)
    values = [event("a", DAY), b"{bad", event("a", DAY), event("b", later), b"[1]",
              event("a", later)]
    got = prepare(kafka_rows(spark, values), cfg.event_schema(), cfg)
    try:
        assert (got.records_in, got.quarantined, got.unique) == (6, 2, 2)
        assert got.values == {"event_date": [DAY, later]}
        assert got.bad_offsets == (11, 14)
        assert got.fresh.newest_event_time == dt.datetime(2026, 3, 11, 12, tzinfo=dt.UTC)
        rows = {(r["kafka_offset"], r["_reason"] is None, r["raw_value"] is None)
                for r in got.rows.collect()}
        # the first copy of "a" (offset 10) survives; good rows keep no raw bytes
        assert rows == {(10, True, True), (13, True, True), (11, False, False),
                        (14, False, False)}
        events = got.events(cfg.event_schema(), cfg).collect()
        assert sorted(r["event_id"] for r in events) == ["a", "b"]
    finally:
        release(got.rows)


def test_upsert_keeps_the_latest_version_and_counts_its_deletes(
        spark: SparkSession, lake: Path) -> None:
    cfg = make_config(lake, "127.0.0.1:1", "orders",
                      target={"mode": "upsert", "dedup_window": "0d",
                              "delete_when": "event_type = 'gone'"})
    gone = json.dumps({"event_id": "a", "event_type": "gone",
                       "event_time": f"{DAY.isoformat()}T13:00:00Z"}).encode()
    got = prepare(kafka_rows(spark, [event("a", DAY), gone, b"{bad"]), cfg.event_schema(), cfg)
    try:
        assert (got.records_in, got.quarantined, got.unique) == (3, 1, 1)
        assert got.counts == {"deletes": 1}
        [row] = got.events(cfg.event_schema(), cfg).collect()
        assert (row["kafka_offset"], row["_deleted"]) == (11, True)
    finally:
        release(got.rows)
