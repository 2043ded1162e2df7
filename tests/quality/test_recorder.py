"""The run-metrics recorder: rows wait for their lag, are written in commit order, never twice."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pyspark.sql import SparkSession

from pipelines.config.model import PipelineConfig
from quality.recorder import MetricsRecorder, ready, with_lags
from quality.results_read import read_run_metrics
from tests.quality.conftest import batch


def test_only_the_newest_rows_without_a_known_lag_wait_and_known_lags_fill_empty_ones() -> None:
    rows = [batch("r", 0), batch("r", 1), batch("r", 2), batch("r", 3)]

    assert ready(rows, {("q-1", 1): 4}) == 2  # 0 has no lag but an older id: not held back
    assert ready(rows, {("q-1", 3): 0}) == 4
    assert ready(rows, {}) == 0
    filled = with_lags(with_lags(rows, {("q-1", 1): 4}), {("q-1", 1): 99, ("q-1", 2): 1})
    assert [b.lag_records for b in filled] == [None, 4, 1, None]  # a known lag is kept


def always_due() -> Callable[[], float]:
    """A clock on which ``quality.metrics_every`` has passed at every flush."""
    return iter(range(0, 10**9, 10**6)).__next__


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_rows_are_written_at_a_flush_with_their_lag_and_the_final_flush_writes_the_rest(
        spark: SparkSession, config: PipelineConfig) -> None:
    said: list[str] = []
    recorder = MetricsRecorder(spark, config, said.append,
                               clock=always_due())
    for n in range(3):
        recorder.record(batch("run-1", n))
    recorder.record(batch("run-1", 3, replayed=True))  # changed nothing: no row

    assert not config.quality.metrics_ref.exists(spark)  # nothing is written per batch
    assert recorder.flush({("q-1", 0): 20, ("q-1", 1): 10})  # batch 2's progress is not out yet
    first = {r["batch_id"]: r["lag_records"] for r in read_run_metrics(spark, config)}
    assert recorder.flush({}, final=True)  # the query ended: the rest, lag unknown
    assert recorder.flush({}, final=True)  # nothing left: no write

    rows = {r["batch_id"]: r["lag_records"] for r in read_run_metrics(spark, config)}
    assert first == {0: 20, 1: 10}
    assert rows == {0: 20, 1: 10, 2: None}
    assert said == []


def test_a_failed_flush_warns_once_and_the_next_one_writes_every_row_by_merge(
        spark: SparkSession, config: PipelineConfig) -> None:
    said: list[str] = []
    recorder = MetricsRecorder(spark, config, said.append,
                               clock=always_due())
    metrics = Path(str(config.quality.metrics_path))
    metrics.mkdir(parents=True)
    (metrics / "_delta_log").write_text("not a Delta log\n")  # the write fails
    recorder.record(batch("run-1", 0))
    recorder.record(batch("run-1", 1))

    assert not recorder.flush({("q-1", 0): 3, ("q-1", 1): 0})
    recorder.record(batch("run-1", 2))
    assert not recorder.flush({("q-1", 2): 0})  # still failing: no second warning
    (metrics / "_delta_log").unlink()
    recorder.record(batch("run-1", 3))
    assert recorder.flush({("q-1", 3): 0})

    assert len(said) == 2, said
    assert said[0].startswith("warning: could not record the run metrics of batches 0, 1 in ")
    assert "their data is committed" in said[0] and "backfilled" in said[0]
    assert said[1].startswith("run metrics recorded again: 4 rows written")
    rows = sorted((r["batch_id"], r["lag_records"]) for r in read_run_metrics(spark, config))
    assert rows == [(0, 3), (1, 0), (2, 0), (3, 0)]


def test_between_writes_a_flush_only_keeps_the_lags_and_the_next_due_one_writes_them(
        spark: SparkSession, config: PipelineConfig) -> None:
    """``quality.metrics_every`` (5m by default): a lag reading a minute in writes nothing (no
    commit to the run-metrics table), but keeps the lags it read: by the write, Spark's recent
    progress no longer holds them."""
    assert config.quality.metrics_every == 300.0
    clock = Clock()
    recorder = MetricsRecorder(spark, config, [].append, clock=clock)
    for n in range(3):
        recorder.record(batch("run-1", n))

    clock.now += 60
    assert recorder.flush({("q-1", 0): 20, ("q-1", 1): 10})
    assert not config.quality.metrics_ref.exists(spark)  # not due: no commit
    clock.now += 240
    assert recorder.flush({("q-1", 2): 5})  # batches 0 and 1 rolled out of the progress
    rows = {r["batch_id"]: r["lag_records"] for r in read_run_metrics(spark, config)}
    assert rows == {0: 20, 1: 10, 2: 5}
    writes = config.quality.metrics_ref.history(spark).where("operation NOT LIKE 'CREATE%'")
    assert writes.count() == 1, writes.collect()  # one write, one commit

    recorder.record(batch("run-1", 3))
    clock.now += 1  # the query ends a second later: the final flush is due at once
    assert recorder.flush({}, final=True)
    assert {r["batch_id"] for r in read_run_metrics(spark, config)} == {0, 1, 2, 3}


def test_a_pipeline_with_a_staleness_check_writes_its_rows_at_every_reading(
        spark: SparkSession, config: PipelineConfig) -> None:
    """Its check reads the newest inserted Kafka timestamp from these rows: they go at once."""
    quality = config.quality.model_copy(update={"max_staleness": 900.0})
    stale = config.model_copy(update={"quality": quality})
    clock = Clock()
    recorder = MetricsRecorder(spark, stale, [].append, clock=clock)
    recorder.record(batch("run-1", 0))
    clock.now += 60
    assert recorder.flush({("q-1", 0): 1})
    assert {r["batch_id"]: r["lag_records"] for r in read_run_metrics(spark, stale)} == {0: 1}
