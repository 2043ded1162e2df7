"""The foreachBatch body: parse → quarantine → dedup → merge → commit → metrics.

Order matters for exactly-once. The quarantine MERGE commits first; the target MERGE commits last
and carries the batch's end offsets, so the target's log is the record of where input stopped.
Both are insert-only MERGEs keyed on data (Kafka coordinates, event key) *and* txn-guarded on
(app id, batch id): a replay is skipped by the txn, and even under a new app id (checkpoint lost)
the MERGE keys keep it from writing anything twice.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines import faults
from pipelines.config.model import PipelineConfig
from pipelines.sink.commit import (
    app_id_for,
    commit_metadata,
    mark_replay,
    replay_app_id,
    txn,
    with_conflict_retry,
)
from pipelines.sink.dedup import dedup_on_key
from pipelines.sink.materialize import materialize, release
from pipelines.sink.merge import MergeOutcome, insert_only_merge, literal_filter, range_filter
from pipelines.sink.metrics import BatchMetrics
from pipelines.sink.parse import classify, quarantine_rows, valid_events
from schemas.base import EventSchema

QUARANTINE_KEY = ("kafka_topic", "kafka_partition", "kafka_offset")


@dataclass
class BatchSink:
    """Callable passed to ``foreachBatch`` for one streaming query.

    Attributes:
        config: the pipeline config.
        schema: the event schema.
        run_id: this run's id (for metrics).
        query_id: returns the streaming query id (read from the checkpoint on first use).
        offsets: the next offset per (topic, partition), starting from the table's record.
        on_batch: called with each batch's metrics (progress output, metric collection).
        replay: a ``deltasink replay`` run: its own txn app id, commits marked as replays.
    """

    config: PipelineConfig
    schema: EventSchema
    run_id: str
    query_id: Callable[[SparkSession], str]
    offsets: dict[str, dict[int, int]] = field(default_factory=dict)
    on_batch: Callable[[BatchMetrics], None] = lambda _m: None
    replay: bool = False

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        """Process one micro-batch (Spark calls this; replays arrive with the same batch id)."""
        spark = batch.sparkSession
        start, started_at = time.monotonic(), datetime.now(UTC)
        stages: dict[str, float] = {}
        app_id = (replay_app_id if self.replay else app_id_for)(self.config.name,
                                                                self.query_id(spark))
        classified = materialize(
            classify(batch, self.schema, self.config.source.max_record_bytes))
        deduped: DataFrame | None = None
        try:
            per_partition = classified.groupBy("kafka_topic", "kafka_partition").agg(
                F.count(F.lit(1)).alias("n"), F.min("kafka_offset").alias("lo"),
                F.max("kafka_offset").alias("hi"),
                F.count("_reason").alias("bad")).collect()
            stages["read_parse"] = time.monotonic() - start
            records_in = sum(int(r["n"]) for r in per_partition)
            quarantined = sum(int(r["bad"]) for r in per_partition)
            for r in per_partition:
                topic = self.offsets.setdefault(r["kafka_topic"], {})
                topic[int(r["kafka_partition"])] = max(
                    topic.get(int(r["kafka_partition"]), 0), int(r["hi"]) + 1)

            mark = time.monotonic()
            if quarantined:
                lo = min(int(r["lo"]) for r in per_partition)
                hi = max(int(r["hi"]) for r in per_partition)
                self._merge_quarantine(spark, classified, batch_id, app_id, lo, hi)
            faults.maybe_crash("after_quarantine_commit", batch_id)
            stages["quarantine"] = time.monotonic() - mark

            mark = time.monotonic()
            key = self.config.target.dedup_key
            deduped = materialize(dedup_on_key(valid_events(classified, self.schema), key))
            parts = list(self.config.target.partition_by)
            groups = deduped.groupBy(*parts).count().collect() if parts else \
                [deduped.agg(F.count(F.lit(1)).alias("count")).first()]
            unique = sum(int(g["count"]) for g in groups if g is not None)
            values = {p: [g[p] for g in groups if g is not None] for p in parts}
            stages["dedup"] = time.monotonic() - mark

            mark = time.monotonic()
            outcome = self._merge_target(spark, deduped, batch_id, app_id, values)
            stages["merge_commit"] = time.monotonic() - mark
            faults.maybe_crash("after_target_commit", batch_id)
        finally:
            release(classified)
            release(deduped)

        valid = records_in - quarantined
        self.on_batch(BatchMetrics(
            pipeline=self.config.name, run_id=self.run_id, query_id=self.query_id(spark),
            batch_id=batch_id, records_in=records_in, quarantined=quarantined,
            duplicates_in_batch=valid - unique,
            duplicates_by_merge=unique - outcome.inserted if outcome.committed else 0,
            inserted=outcome.inserted, duration_s=time.monotonic() - start,
            started_at=started_at, replayed=not outcome.committed,
            event_dates=tuple(sorted(d for d in values.get("event_date", []) if d)),
            stage_seconds=stages))

    def _merge_quarantine(self, spark: SparkSession, classified: DataFrame, batch_id: int,
                          app_id: str, lo: int, hi: int) -> MergeOutcome:
        ref = self.config.target.quarantine_ref
        rows = quarantine_rows(classified, self.config.name, batch_id)

        def attempt() -> MergeOutcome:
            faults.maybe_crash("before_quarantine_commit", batch_id)
            with txn(spark, app_id, batch_id, None):
                return insert_only_merge(ref.delta(spark), rows, QUARANTINE_KEY,
                                         range_filter("t", "kafka_offset", lo, hi))

        return with_conflict_retry(attempt, retries=self.config.target.commit_retries,
                                   what=f"quarantine MERGE into {ref.describe()}")

    def _merge_target(self, spark: SparkSession, deduped: DataFrame, batch_id: int,
                      app_id: str, values: dict[str, list[object]]) -> MergeOutcome:
        target = self.config.target
        metadata = commit_metadata(self.config.name, app_id, batch_id, self.run_id, self.offsets)
        metadata = mark_replay(metadata) if self.replay else metadata
        on = (*target.partition_by, target.dedup_key)
        prune = literal_filter("t", {k: [v for v in vs if v is not None]
                                     for k, vs in values.items()})
        if target.partition_by and not any(values.values()):
            prune = F.lit(False)  # nothing to insert: read no partitions, still commit offsets

        def attempt() -> MergeOutcome:
            faults.maybe_crash("before_target_commit", batch_id)
            with txn(spark, app_id, batch_id, metadata):
                return insert_only_merge(target.ref.delta(spark), deduped, on, prune)

        return with_conflict_retry(attempt, retries=target.commit_retries,
                                   what=f"MERGE into {target.ref.describe()}")
