"""The five configurations measured on the same topic: floor, append, watermark, naive, deltasink.

Each returns per-batch rows (``rows``, ``total_s`` and, where known, the stage split) and the
number of records it read. The Spark ones all use deltasink's own source (``read_stream``) and
parser (``classify`` → ``valid_events``), so they differ only in how rows reach the table.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from bench.stream import batch_rows, run_available_now
from pipelines.config.model import PipelineConfig
from pipelines.kafka.source import read_stream
from pipelines.run import run_pipeline
from pipelines.sink.batch import BatchSink
from pipelines.sink.commit import txn, with_conflict_retry
from pipelines.sink.event_window import Span
from pipelines.sink.merge import MergeOutcome, insert_only_merge
from pipelines.sink.metrics import BatchMetrics
from pipelines.sink.parse import classify, valid_events
from pipelines.sink.prepare import Prepared
from pipelines.sink.tables import ensure_sink_tables

#: The peer approach needs a watermark longer than the events' spread (3 days), or it would
#: drop late records instead of deduplicating them.
WATERMARK_DELAY = "4 days"

Batches = list[dict[str, Any]]


@dataclass(frozen=True)
class Target:
    """Where one configuration writes: its table, quarantine table and checkpoint."""

    table: Path
    quarantine: Path
    checkpoint: Path


def floor(bootstrap: str, topic: str) -> tuple[Batches, int]:
    """Consume the whole topic with confluent-kafka: the ceiling no Spark job can beat."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4()}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "log_level": 0})
    meta = consumer.list_topics(topic, timeout=10).topics[topic]
    ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in meta.partitions}
    consumer.assign([TopicPartition(topic, p, 0) for p in ends])
    done: dict[int, int] = dict.fromkeys(ends, 0)
    rows, start = 0, time.monotonic()
    while any(done[p] < ends[p] - 1 for p in ends if ends[p]):
        for msg in consumer.consume(10_000, timeout=1.0):
            if msg.error() is None:
                rows += 1
                part, offset = int(msg.partition() or 0), int(msg.offset() or 0)
                done[part] = max(done[part], offset)
    consumer.close()
    return [{"rows": rows, "total_s": time.monotonic() - start}], rows


def _parsed(spark: SparkSession, config: PipelineConfig) -> DataFrame:
    schema = config.event_schema()
    raw = read_stream(spark, config, "earliest")
    return valid_events(classify(raw, schema, config.source.max_record_bytes), schema)


def append(spark: SparkSession, config: PipelineConfig, where: Target) -> tuple[Batches, int]:
    """Parse, then a plain Delta append: no dedup, no txn (at-least-once)."""
    writer = (_parsed(spark, config).writeStream.format("delta").outputMode("append")
              .partitionBy(*config.target.partition_by))
    rows = run_available_now(writer, str(where.checkpoint), str(where.table))
    return rows, sum(r["rows"] for r in rows)


def watermark(spark: SparkSession, config: PipelineConfig, where: Target) -> tuple[Batches, int]:
    """The peer approach: ``withWatermark`` + ``dropDuplicatesWithinWatermark``, then append."""
    deduped = (_parsed(spark, config).withWatermark("event_time", WATERMARK_DELAY)
               .dropDuplicatesWithinWatermark(list(config.target.dedup_keys)))
    writer = (deduped.writeStream.format("delta").outputMode("append")
              .partitionBy(*config.target.partition_by))
    rows = run_available_now(writer, str(where.checkpoint), str(where.table))
    return rows, sum(r["rows"] for r in rows)


class NaiveMergeSink(BatchSink):
    """deltasink's batch, except the MERGE matches on ``event_id`` only: no partition literals."""

    def _merge_target(self, spark: SparkSession, deduped: DataFrame, batch_id: int,
                      app_id: str, values: dict[str, list[object]],
                      planned: dict[str, dict[int, int]],
                      counts: dict[str, Any] | None = None, *,
                      spans: Sequence[Span] | None = None,
                      prepared: Prepared | None = None) -> MergeOutcome:
        keys = self.config.target.dedup_keys

        def attempt() -> MergeOutcome:
            with txn(spark, app_id, batch_id, None):
                return insert_only_merge(self.config.target.ref, deduped, keys)

        return with_conflict_retry(attempt, retries=0, what="naive MERGE")


def naive_merge(spark: SparkSession, config: PipelineConfig,
                where: Target) -> tuple[Batches, int]:
    """Parse, dedup in batch, then ``MERGE ... ON t.event_id = s.event_id`` (full-table join)."""
    ensure_sink_tables(spark, config, config.event_schema())
    metrics: list[BatchMetrics] = []
    run_id = uuid.uuid4().hex[:12]
    query_id = f"naive-{run_id}"
    sink = NaiveMergeSink(config, config.event_schema(), run_id, lambda _s: query_id,
                          planned=lambda _s, _b: {}, on_batch=metrics.append)
    writer = read_stream(spark, config, "earliest").writeStream.foreachBatch(sink)
    run_available_now(writer, str(where.checkpoint))
    rows = batch_rows(metrics)
    return rows, sum(r["rows"] for r in rows)


def deltasink(spark: SparkSession, config: PipelineConfig) -> tuple[Batches, int]:
    """The full sink, exactly as ``deltasink run`` (without the quality suites)."""
    result = run_pipeline(spark, config, validate=False, progress=lambda _line: None)
    rows = batch_rows(list(result.batches))
    return rows, result.records_in
