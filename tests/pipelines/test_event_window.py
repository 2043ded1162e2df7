"""An event-time dedup window: copies caught within it on any date, and a MERGE that reads only
the time slice a batch's keys can be in."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.sink.event_window import MAX_SPANS, bucket_seconds, dates_of, spans
from pipelines.sink.metrics import BatchMetrics
from tests.support.configs import make_config
from tests.support.merge_batches import kafka_batch, sink_for

HOUR = dt.timedelta(hours=1)
DAY = dt.datetime(2026, 3, 10)
UTC = dt.UTC


def at(hours: float, day: dt.datetime = DAY) -> dt.datetime:
    return day + dt.timedelta(hours=hours)


def test_buckets_are_a_quarter_window_between_a_minute_and_an_hour() -> None:
    assert [bucket_seconds(w) for w in (dt.timedelta(seconds=30), 15 * dt.timedelta(minutes=1),
                                        HOUR, 36 * HOUR)] == [60, 225, 900, 3600]


def test_spans_widen_each_bucket_by_the_window_and_merge_overlaps() -> None:
    width = bucket_seconds(HOUR)  # 900 s
    start = int(at(12).replace(tzinfo=UTC).timestamp()) // width
    got = spans([start, start + 1, start + 40], HOUR)
    assert got == [(at(11).replace(tzinfo=UTC), at(13.5).replace(tzinfo=UTC)),
                   (at(21).replace(tzinfo=UTC), at(23.25).replace(tzinfo=UTC))]
    assert spans([], HOUR) == []


def test_spans_are_capped_by_joining_the_closest_and_never_narrowed() -> None:
    width = bucket_seconds(dt.timedelta(minutes=4))  # 60 s
    buckets = [i * 10 for i in range(MAX_SPANS + 5)]  # 10 min apart: none overlap
    got = spans(buckets, dt.timedelta(minutes=4))
    assert len(got) == MAX_SPANS
    epoch = dt.datetime(1970, 1, 1, tzinfo=UTC)
    for b in buckets:  # every bucket's own span is still inside one of them
        low = epoch + dt.timedelta(seconds=b * width) - dt.timedelta(minutes=4)
        high = epoch + dt.timedelta(seconds=(b + 1) * width) + dt.timedelta(minutes=4)
        assert any(lo <= low and high <= hi for lo, hi in got)


def test_a_span_across_midnight_reads_both_dates() -> None:
    assert dates_of([(at(23).replace(tzinfo=UTC), at(25).replace(tzinfo=UTC))]) == [
        DAY.date(), DAY.date() + dt.timedelta(days=1)]


def test_spans_and_dates_at_the_ends_of_time_stop_there_instead_of_overflowing() -> None:
    last = dt.datetime(9999, 12, 31, 23, 30, tzinfo=UTC)  # the latest time the parser lets in
    bucket = int(last.timestamp()) // bucket_seconds(HOUR)
    (low, high), = spans([bucket], HOUR)
    assert low <= last - HOUR and high == dt.datetime.max.replace(tzinfo=UTC)
    assert dates_of([(low, high)]) == [dt.date(9999, 12, 31)]
    first = dt.datetime(1, 1, 1, 0, 30, tzinfo=UTC)
    (low, high), = spans([int(first.timestamp()) // bucket_seconds(HOUR)], HOUR)
    assert low == dt.datetime.min.replace(tzinfo=UTC) and high >= first + HOUR
    assert dates_of([(low, high)]) == []  # before year 1000: no event_date can hold it


@pytest.mark.parametrize("partition_by", [["event_date"], []])
def test_a_copy_is_caught_within_the_window_on_any_date_and_lands_again_beyond_it(
        spark: SparkSession, lake: Path, partition_by: list[str]) -> None:
    cfg = make_config(lake, "127.0.0.1:1", "orders",
                      target={"dedup_window": "1h", "partition_by": partition_by},
                      quality={"count_other_date_copies": True})
    seen: list[BatchMetrics] = []
    sink = sink_for(spark, cfg, seen)
    sink(kafka_batch(spark, [("e1", at(23.75)), ("e2", at(10)), ("e3", at(23.5))], 0), 0)
    # e1 re-stamped 40 min later, past midnight (caught); e2 2.5 h later (beyond: lands);
    # e3 sent again unchanged (caught); e4 new.
    again = [("e1", at(24 + 1 / 3)), ("e2", at(12.5)), ("e3", at(23.5)), ("e4", at(24.25))]
    sink(kafka_batch(spark, again, 3), 1)
    # e2 between its two rows, within the window of both: matches both, no multiple-match error.
    sink(kafka_batch(spark, [("e2", at(11.5))], 7), 2)
    sink(kafka_batch(spark, again, 3), 1)  # batch 1 replayed: a skip, proven

    rows = {}
    for r in cfg.target.ref.read(spark).orderBy("event_time").collect():
        rows.setdefault(r["event_id"], []).append(r["event_time"])
    assert rows == {"e1": [at(23.75)], "e2": [at(10), at(12.5)], "e3": [at(23.5)],
                    "e4": [at(24.25)]}
    assert [(b.inserted, b.duplicates_by_merge, b.duplicates_other_date, b.replayed)
            for b in seen] == [(3, 0, 0, False), (2, 2, 1, False), (0, 1, 0, False),
                               (0, 0, 0, True)]


def test_the_merge_reads_only_the_files_of_its_time_slice(spark: SparkSession, lake: Path
                                                          ) -> None:
    cfg = make_config(lake, "127.0.0.1:1", "orders", target={"dedup_window": "1h"})
    seen: list[BatchMetrics] = []
    sink = sink_for(spark, cfg, seen)
    sink(kafka_batch(spark, [("night", at(0.5))], 0), 0)
    partition = Path(cfg.target.ref.location) / f"event_date={DAY.date()}"
    night_files = set(partition.glob("*.parquet"))
    assert night_files
    sink(kafka_batch(spark, [("noon", at(12))], 1), 1)
    for data in night_files:
        data.unlink()  # a MERGE that read the 00:30 file would now fail

    sink(kafka_batch(spark, [("noon", at(12 + 5 / 60)), ("later", at(12 + 10 / 60))], 2), 2)
    assert (seen[-1].inserted, seen[-1].duplicates_by_merge) == (1, 1)  # same date, no 00:30
    with pytest.raises(Exception, match=r"(?i)not.*(found|exist)"):
        sink(kafka_batch(spark, [("early", at(1 + 20 / 60))], 4), 3)  # within 1 h of 00:30
