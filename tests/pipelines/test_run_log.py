"""A run's batches in bounded memory (``pipelines/sink/run_log.py``): a continuous run of weeks
holds the newest batches one by one, and its result's counts and dates stay exact."""

from __future__ import annotations

import tracemalloc
from datetime import UTC, date, datetime, timedelta

import pytest

from pipelines.sink.metrics import BatchMetrics, RunResult
from pipelines.sink.run_log import RunLog

DAY = date(2026, 11, 1)


def batch(n: int, *, replayed: bool = False) -> BatchMetrics:
    """Batch ``n``: 10 records in, 1 quarantined, 2 copies, 7 inserted, on day ``n % 40``."""
    return BatchMetrics(pipeline="p", run_id="r", query_id="q", batch_id=n, records_in=10,
                        quarantined=1, duplicates_in_batch=1, duplicates_by_merge=1,
                        inserted=7, duration_s=1.0, started_at=datetime(2026, 11, 1, tzinfo=UTC),
                        replayed=replayed, event_dates=(DAY + timedelta(days=n % 40),),
                        stage_seconds={"merge": 0.5})


@pytest.mark.parametrize("keep", [1, 7, 1000])
def test_the_result_counts_every_batch_whatever_is_held(keep: int) -> None:
    batches = [batch(n, replayed=n % 10 == 3) for n in range(250)]
    log = RunLog(keep)
    for b in batches:
        log.add(b)
    whole = RunResult("p", "r", tuple(batches))  # every batch held: the reference

    got = log.result("p", "r")

    assert got.batch_count == whole.batch_count == 250
    assert (got.records_in, got.quarantined, got.inserted) == (
        whole.records_in, whole.quarantined, whole.inserted) == (2250, 225, 1575)
    assert got.event_dates == whole.event_dates and len(got.event_dates) == 40
    assert got.batches == tuple(batches[-keep:])  # the newest, in commit order


def test_a_short_run_holds_every_batch_and_folds_nothing() -> None:
    log = RunLog()
    for n in range(3):
        log.add(batch(n))
    result = log.result("p", "r")
    assert [b.batch_id for b in result.batches] == [0, 1, 2]
    assert result.folded.batches == 0 and result.batch_count == 3


def test_the_memory_a_run_holds_stops_growing_after_its_kept_batches() -> None:
    log = RunLog(100)
    for n in range(200):
        log.add(batch(n))
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for n in range(200, 20_200):
            log.add(batch(n))
        grown = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(before, "filename"))
    finally:
        tracemalloc.stop()
    assert log.result("p", "r").batch_count == 20_200
    # 20,000 more batches of ~1 KB each: held one by one they would add ~20 MB.
    assert grown < 200_000, grown


def test_keep_must_hold_at_least_one_batch() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        RunLog(0)
