"""The sample producer's legacy-format events: poison under events_v1, valid under events_v2."""

from __future__ import annotations

import datetime as dt
import json
import uuid

import pytest
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


def _times(records: list[tuple[bytes | None, bytes | None]]) -> list[tuple[str, dt.datetime]]:
    """(event id, event time) of each record, in send order."""
    out = []
    for _key, value in records:
        event = json.loads(value or b"{}")
        out.append((event["event_id"],
                    dt.datetime.fromisoformat(event["event_time"].replace("Z", "+00:00"))))
    return out


def test_uuid_ids_are_distinct_v4_uuids_from_the_seed_and_change_nothing_else() -> None:
    seq, _ = plan_records(200, duplicate_rate=0.1, poison_rate=0.0, seed=5, id_prefix="e")
    rand, summary = plan_records(200, duplicate_rate=0.1, poison_rate=0.0, seed=5,
                                 id_prefix="e", ids="uuid")
    assert len(set(summary.event_ids)) == 200
    assert all(uuid.UUID(i).version == 4 and str(uuid.UUID(i)) == i for i in summary.event_ids)
    again, _ = plan_records(200, duplicate_rate=0.1, poison_rate=0.0, seed=5, id_prefix="e",
                            ids="uuid")
    other, _ = plan_records(200, duplicate_rate=0.1, poison_rate=0.0, seed=6, id_prefix="e",
                            ids="uuid")
    assert again == rand and {i for i, _ in _times(other)}.isdisjoint(summary.event_ids)
    # the same times, copies and their places: only the ids differ
    assert [t for _, t in _times(rand)] == [t for _, t in _times(seq)]
    assert [k is None for k, _ in rand] == [k is None for k, _ in seq]


def test_arrival_times_rise_in_send_order_over_the_span_ending_at_end() -> None:
    end = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)
    span = dt.timedelta(hours=6)
    records, summary = plan_records(1000, duplicate_rate=0.06, poison_rate=0.0, seed=9,
                                    id_prefix="e", times="arrival", span=span, end=end)
    assert summary.duplicates == 60 and len(records) == 1060
    first: dict[str, dt.datetime] = {}
    for event_id, when in _times(records):
        assert first.setdefault(event_id, when) == when  # a copy keeps its original's time
    originals = [first[i] for i in summary.event_ids]
    assert originals == sorted(originals) and len(set(originals)) == 1000
    assert originals[0] == end - span and end - dt.timedelta(minutes=1) < originals[-1] < end
    same, _ = plan_records(1000, duplicate_rate=0.06, poison_rate=0.0, seed=9, id_prefix="e",
                           times="arrival", span=span, end=end)
    assert same == records


def test_the_default_layout_and_ids_are_the_spread_and_the_sequence() -> None:
    plain, _ = plan_records(50, duplicate_rate=0.1, poison_rate=0.1, seed=7, id_prefix="e")
    named, _ = plan_records(50, duplicate_rate=0.1, poison_rate=0.1, seed=7, id_prefix="e",
                            ids="seq", times="spread", days=3)
    assert plain == named
    wide, _ = plan_records(500, duplicate_rate=0.0, poison_rate=0.0, seed=7, id_prefix="e",
                           days=60)
    dates = {when.date() for _, when in _times(wide)}
    assert len(dates) > 40  # spread over 60 days, not 3


def test_an_unknown_id_kind_or_layout_is_refused() -> None:
    with pytest.raises(ValueError, match="ids must be one of"):
        plan_records(1, duplicate_rate=0.0, poison_rate=0.0, seed=1, id_prefix="e",
                     ids="ulid")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="times must be one of"):
        plan_records(1, duplicate_rate=0.0, poison_rate=0.0, seed=1, id_prefix="e",
                     times="sorted")  # type: ignore[arg-type]
