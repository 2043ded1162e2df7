"""Builders for the quality tests: a real config in a temp lake, and real target Delta tables."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from pipelines.config.model import PipelineConfig
from pipelines.sink.metrics import BatchMetrics, RunResult
from schemas import get_schema
from tests.support.configs import make_config

DAY1 = date(2026, 11, 20)
DAY2 = date(2026, 11, 21)

TargetWriter = Callable[[Sequence[tuple[str, date]]], None]


@pytest.fixture
def config(lake: Path) -> PipelineConfig:
    """A real pipeline config whose tables all live in this test's lake (no broker needed)."""
    return make_config(lake, "127.0.0.1:9", "orders")


def target_row(event_id: str, day: date, *, event_time: datetime | None = None,
               offset: int = 0) -> tuple[Any, ...]:
    """One target row in ``events_v1.target_schema()`` column order."""
    when = event_time or datetime(day.year, day.month, day.day, 12, 0, tzinfo=UTC)
    now = datetime.now(UTC)
    return (event_id, "order_placed", when, '{"amount": 1}', day, "orders", 0, offset, when, now)


@pytest.fixture
def write_target(spark: SparkSession, config: PipelineConfig) -> TargetWriter:
    """Append ``(event_id, event_date)`` rows straight into the target Delta table."""
    schema = get_schema("events_v1").target_schema()

    def write(rows: Sequence[tuple[str, date]]) -> None:
        config.target.ref.create_if_missing(spark, schema, config.target.partition_by)
        data = [target_row(key, day, offset=i) for i, (key, day) in enumerate(rows)]
        (spark.createDataFrame(data, schema).write.format("delta").mode("append")
         .save(config.target.path))

    return write


def batch(run_id: str, batch_id: int, *, records_in: int = 100, quarantined: int = 0,
          inserted: int | None = None, replayed: bool = False, query_id: str = "q-1",
          dates: tuple[date, ...] = (), started: datetime | None = None) -> BatchMetrics:
    """A consistent batch: whatever is neither quarantined nor duplicate was inserted."""
    dup_batch, dup_merge = 2, 1
    return BatchMetrics(
        pipeline="orders_bronze", run_id=run_id, query_id=query_id, batch_id=batch_id,
        records_in=records_in, quarantined=quarantined, duplicates_in_batch=dup_batch,
        duplicates_by_merge=dup_merge,
        inserted=inserted if inserted is not None else records_in - quarantined - 3,
        duration_s=1.5, started_at=started or datetime.now(UTC) + timedelta(seconds=batch_id),
        replayed=replayed, target_version=batch_id, event_dates=dates,
        stage_seconds={"parse": 0.2, "merge": 1.1})


def run_of(run_id: str, *batches: BatchMetrics) -> RunResult:
    """A run made of ``batches``."""
    return RunResult(pipeline="orders_bronze", run_id=run_id, batches=tuple(batches))
