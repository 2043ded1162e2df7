"""The sample producer's legacy-format events: poison under events_v1, valid under events_v2."""

from __future__ import annotations

import datetime as dt

from pyspark.sql import SparkSession

from pipelines.kafka.produce import plan_records
from pipelines.sink.parse import classify, valid_events
from schemas import get_schema
from tests.pipelines.test_parse import kafka_rows


def test_legacy_events_are_quarantined_by_v1_and_read_by_v2(spark: SparkSession) -> None:
    records, summary = plan_records(20, duplicate_rate=0.0, poison_rate=0.0, seed=3,
                                    id_prefix="e", legacy_rate=0.25)
    assert len(summary.legacy_ids) == 5 and len(records) == 25
    assert "5 legacy-format events" in summary.describe()
    legacy = [v for _k, v in records if v is not None and b"-legacy-" in v]
    frame = kafka_rows(spark, legacy)
    v1 = classify(frame, get_schema("events_v1"), 10_000)
    assert {r["_reason"] for r in v1.collect()} == {"missing:event_type"}
    v2 = get_schema("events_v2")
    rows = valid_events(classify(frame, v2, 10_000), v2).collect()
    assert sorted(r["event_id"] for r in rows) == sorted(summary.legacy_ids)
    today = dt.datetime.now(dt.UTC).date()
    assert all(today - dt.timedelta(days=4) <= r["event_date"] <= today for r in rows)


def test_no_legacy_rate_plans_the_same_records_as_before() -> None:
    plain, _ = plan_records(50, duplicate_rate=0.1, poison_rate=0.1, seed=7, id_prefix="e")
    again, summary = plan_records(50, duplicate_rate=0.1, poison_rate=0.1, seed=7,
                                  id_prefix="e", legacy_rate=0.0)
    assert plain == again and summary.legacy_ids == ()
