"""Micro-batches fed straight to a BatchSink (no stream): Kafka-shaped rows, and what landed."""

from __future__ import annotations

import datetime as dt
import json

from pyspark.sql import DataFrame, SparkSession

from pipelines.config.model import PipelineConfig
from pipelines.sink.batch import BatchSink
from pipelines.sink.metrics import BatchMetrics
from pipelines.sink.tables import ensure_sink_tables
from schemas import get_schema


def kafka_batch(spark: SparkSession, events: list[tuple[str, dt.date]], first_offset: int
                ) -> DataFrame:
    """Rows shaped like Spark's Kafka source, one JSON event per (event_id, event date or time).

    A date stands for its noon (UTC); a naive datetime is read as UTC.
    """
    rows = []
    for i, (event_id, day) in enumerate(events):
        when = day.isoformat() if isinstance(day, dt.datetime) else f"{day.isoformat()}T12:00:00"
        value = json.dumps({"event_id": event_id, "event_type": "t",
                            "event_time": f"{when}Z"}).encode()
        stamp = dt.datetime(2026, 3, 1) + dt.timedelta(seconds=first_offset + i)
        rows.append((None, value, "orders", 0, first_offset + i, stamp, 0))
    return spark.createDataFrame(rows, "key binary, value binary, topic string, partition int, "
                                       "offset long, timestamp timestamp, timestampType int")


def sink_for(spark: SparkSession, cfg: PipelineConfig, seen: list[BatchMetrics]) -> BatchSink:
    schema = get_schema(cfg.schema_name)
    ensure_sink_tables(spark, cfg, schema)
    # No stream here: a thin stand-in for the checkpoint's planned end offsets, one per batch id.
    return BatchSink(cfg, schema, "run-merge", lambda _s: "query-merge",
                     lambda _s, b: {"orders": {0: 1000 * (b + 1)}}, on_batch=seen.append)


def rows_per_id(spark: SparkSession, cfg: PipelineConfig) -> dict[str, list[dt.date]]:
    out: dict[str, list[dt.date]] = {}
    for r in cfg.target.ref.read(spark).orderBy("event_date").collect():
        out.setdefault(r["event_id"], []).append(r["event_date"])
    return out
