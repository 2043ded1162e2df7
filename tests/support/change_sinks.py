"""A change stream's batch sink fed DataFrames directly (no broker), and its target's state."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipelines.config.model import PipelineConfig
from pipelines.sink.batch import BatchSink
from pipelines.sink.metrics import BatchMetrics
from pipelines.sink.tables import ensure_sink_tables
from tests.support.change_events import Version
from tests.support.configs import change_stream_config


def change_sink(spark: SparkSession, lake: Path, mode: str, seen: list[BatchMetrics],
                guard: Callable[[SparkSession, int], None] = lambda _s, _b: None,
                **overrides: Any) -> tuple[PipelineConfig, BatchSink]:
    """A change stream's config and the batch sink of one query of it (its tables made)."""
    cfg = change_stream_config(lake, mode=mode, **overrides)
    ensure_sink_tables(spark, cfg, cfg.event_schema())
    return cfg, new_sink(cfg, seen, guard)


def new_sink(cfg: PipelineConfig, seen: list[BatchMetrics],
             guard: Callable[[SparkSession, int], None] = lambda _s, _b: None) -> BatchSink:
    """Another query's batch sink (a restart: nothing learned yet, the same checkpoint)."""
    return BatchSink(cfg, cfg.event_schema(), "run-changes", lambda _s: "query-changes",
                     lambda _s, b: {"shop.public.items": {0: 1000 * (b + 1)}},
                     guard=guard, on_batch=seen.append)


def replica_state(spark: SparkSession, cfg: PipelineConfig
                  ) -> dict[int, tuple[str | None, int | None]]:
    """The replica's rows: id -> (name, qty); fails on a key held twice."""
    rows = cfg.target.ref.read(spark).select("id", "name", "qty").collect()
    out = {int(r["id"]): (r["name"], r["qty"]) for r in rows}
    assert len(out) == len(rows), "a key is in the replica twice"
    return out


def history_state(spark: SparkSession, cfg: PipelineConfig) -> list[Version]:
    """The history's versions: (id, name, qty, start, end), sorted."""
    rows = cfg.target.ref.read(spark).select(
        "id", "name", "qty", F.col("__START_AT").cast("long").alias("s"),
        F.col("__END_AT").cast("long").alias("e")).collect()
    return sorted((int(r["id"]), r["name"], r["qty"], int(r["s"]),
                   None if r["e"] is None else int(r["e"])) for r in rows)
