"""The target MERGE's dedup window: copies re-stamped onto another date, partition pruning."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.sink.merge import AUTO_COMPACT, expand_dates, merge_settings
from pipelines.sink.metrics import BatchMetrics
from tests.support.configs import make_config
from tests.support.merge_batches import kafka_batch, rows_per_id, sink_for

DAY = dt.date(2026, 3, 10)


def test_expand_dates_widens_each_date_and_merges_overlaps() -> None:
    got = expand_dates([DAY, DAY + dt.timedelta(days=1)], 1)
    assert got == [DAY + dt.timedelta(days=d) for d in (-1, 0, 1, 2)]
    assert expand_dates([DAY], 0) == [DAY]
    assert expand_dates([dt.date(9999, 12, 31)], 1) == [dt.date(9999, 12, 30),
                                                         dt.date(9999, 12, 31)]


@pytest.mark.extended
def test_other_date_copies_are_not_counted_by_default_and_say_so_with_a_null(
        spark: SparkSession, lake: Path) -> None:
    cfg = make_config(lake, "127.0.0.1:1", "orders", target={"dedup_window": "2d"})
    seen: list[BatchMetrics] = []
    sink = sink_for(spark, cfg, seen)
    sink(kafka_batch(spark, [("e1", DAY), ("e2", DAY)], 0), 0)
    sink(kafka_batch(spark, [("e1", DAY + dt.timedelta(days=2)), ("e3", DAY)], 2), 1)

    assert rows_per_id(spark, cfg) == {"e1": [DAY], "e2": [DAY], "e3": [DAY]}  # still caught
    # Nothing dropped: none came from another date. Dropped but not counted: unknown, not 0.
    assert [(b.duplicates_by_merge, b.duplicates_other_date) for b in seen] == [(0, 0), (1, None)]
    assert "other_date" not in seen[1].stage_seconds  # no join was run for it


@pytest.mark.parametrize("window", [0, pytest.param(2, marks=pytest.mark.extended)])
def test_a_copy_with_a_shifted_event_time_is_caught_within_the_window_only(
        spark: SparkSession, lake: Path, window: int) -> None:
    cfg = make_config(lake, "127.0.0.1:1", "orders", target={"dedup_window": f"{window}d"},
                      quality={"count_other_date_copies": True})
    seen: list[BatchMetrics] = []
    sink = sink_for(spark, cfg, seen)
    plus = [DAY + dt.timedelta(days=d) for d in range(4)]
    sink(kafka_batch(spark, [("e1", DAY), ("e2", DAY)], 0), 0)
    # e1 re-stamped 2 days later (inside a 2-day window), e2 3 days later (outside), e3 new.
    sink(kafka_batch(spark, [("e1", plus[2]), ("e2", plus[3]), ("e3", plus[2])], 2), 1)
    # e2 again, between its two rows: with the window it matches both (no multiple-match error).
    sink(kafka_batch(spark, [("e2", plus[1])], 5), 2)

    got = rows_per_id(spark, cfg)
    if window:
        assert got == {"e1": [DAY], "e2": [DAY, plus[3]], "e3": [plus[2]]}
        assert [(b.inserted, b.duplicates_by_merge, b.duplicates_other_date)
                for b in seen] == [(2, 0, 0), (2, 1, 1), (0, 1, 1)]
    else:  # window 0: the key is (event_date, event_id), every re-stamped copy lands again
        assert got == {"e1": [DAY, plus[2]], "e2": [DAY, plus[1], plus[3]], "e3": [plus[2]]}
        assert [b.duplicates_other_date for b in seen] == [0, 0, 0]
    for b in seen:  # the identity of BatchMetrics still holds
        assert b.records_in == (b.quarantined + b.duplicates_in_batch + b.duplicates_by_merge
                                + b.inserted)


@pytest.mark.extended
def test_the_window_reads_only_the_widened_dates(spark: SparkSession, lake: Path) -> None:
    cfg = make_config(lake, "127.0.0.1:1", "orders", target={"dedup_window": "2d"})
    seen: list[BatchMetrics] = []
    sink = sink_for(spark, cfg, seen)
    far = DAY + dt.timedelta(days=5)
    sink(kafka_batch(spark, [("a", DAY), ("b", far)], 0), 0)
    for data in (Path(cfg.target.ref.location) / f"event_date={far}").glob("*.parquet"):
        data.unlink()  # a MERGE that read this partition would now fail
    sink(kafka_batch(spark, [("c", DAY + dt.timedelta(days=2)), ("a", DAY)], 2), 1)
    assert seen[-1].inserted == 1 and seen[-1].duplicates_by_merge == 1
    with pytest.raises(Exception, match=r"(?i)not.*(found|exist)"):
        sink(kafka_batch(spark, [("d", DAY + dt.timedelta(days=3))], 4), 2)  # reads DAY+5


def test_the_merge_reads_only_files_within_the_batch_s_key_range(spark: SparkSession,
                                                                lake: Path) -> None:
    """Keys that grow with time (a sequence, sequential ids): a batch's MERGE skips the files
    whose key statistics lie outside the batch's own keys, on the same date and times."""
    cfg = make_config(lake, "127.0.0.1:1", "orders", target={"dedup_window": "0d"})
    seen: list[BatchMetrics] = []
    sink = sink_for(spark, cfg, seen)
    sink(kafka_batch(spark, [("a-1", DAY), ("a-2", DAY)], 0), 0)
    old = set(Path(cfg.target.ref.location).rglob("*.parquet"))
    sink(kafka_batch(spark, [("b-1", DAY), ("b-2", DAY)], 2), 1)
    for data in old:
        data.unlink()  # a MERGE that opened one of the a-* files would now fail
    sink(kafka_batch(spark, [("b-2", DAY), ("b-3", DAY)], 4), 2)  # keys b-2..b-3
    assert seen[-1].inserted == 1 and seen[-1].duplicates_by_merge == 1  # b-2 still caught
    with pytest.raises(Exception, match=r"(?i)not.*(found|exist)"):
        sink(kafka_batch(spark, [("a-15", DAY)], 6), 3)  # inside a-1..a-2: opens their file


def test_merge_settings_turn_auto_compaction_on_only_when_asked_and_put_it_back(
        spark: SparkSession) -> None:
    """A continuous run's target MERGE compacts after its commit
    (``target.compact_while_streaming``); no other MERGE, and nothing after it, does."""
    before = spark.conf.get(AUTO_COMPACT, None)
    with merge_settings(spark):
        assert spark.conf.get(AUTO_COMPACT, None) == before
    with merge_settings(spark, compact=True):
        assert spark.conf.get(AUTO_COMPACT) == "true"
    assert spark.conf.get(AUTO_COMPACT, None) == before != "true"
