"""Run-metrics rows as a blind, idempotent append: the common case.

An insert-only MERGE reads the pipeline's partition of the metrics table to find the key, so
every write paid a scan of all the rows recorded before it (a Delta snapshot, a join, a write:
several Spark jobs and 1-3 s on the dev VM). The rows of batches just committed to the target
are new by construction (``quality/recorder.py`` writes them in commit order, never one twice),
so they are appended instead, made idempotent the way the target's commits are: ``txnAppId`` =
the pipeline and the streaming query id, ``txnVersion`` = the newest batch id written. Delta
skips an append whose version the app id has already recorded, so writing the same rows again
adds nothing.

Everything else goes through the keyed MERGE (``quality.results.write_run_metrics``): rows
retried after a failure (their first write may have committed before it failed) and rows
backfilled from the target's history. The append carries the same mark in its userMetadata as
the MERGE (``quality/metrics_log.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from itertools import groupby

from pyspark.sql import SparkSession

from pipelines import sql
from pipelines.config.model import PipelineConfig
from pipelines.sink.metrics import BatchMetrics
from quality.metrics_log import stamp
from quality.results import METRICS_PARTITION, METRICS_SCHEMA, prepare_table


def metrics_app_id(pipeline: str, query_id: str) -> str:
    """The ``txnAppId`` of a streaming query's run-metrics appends."""
    return f"deltasink-metrics:{pipeline}:{query_id}"


def prepare_metrics_table(spark: SparkSession, config: PipelineConfig) -> None:
    """Create the run-metrics table if missing, and add the columns an older one lacks."""
    prepare_table(spark, config.quality.metrics_ref, METRICS_SCHEMA, METRICS_PARTITION)


def append_run_metrics(spark: SparkSession, config: PipelineConfig,
                       batches: Sequence[BatchMetrics]) -> None:
    """Append the rows of ``batches``, one commit per streaming query, each at most once.

    The table must exist with every column (:func:`prepare_metrics_table`). The caller writes
    each query's batches in commit order, so the newest batch id of an append is above every
    batch id an earlier append of that query wrote; Delta skips a repeated append.

    Args:
        spark: the session.
        config: the pipeline (``quality.metrics_ref``).
        batches: batches just committed to the target (no replays), oldest first.
    """
    now = datetime.now(UTC)
    ref = config.quality.metrics_ref
    for query_id, group in groupby(batches, key=lambda b: b.query_id):
        rows = [{**b.as_row(), "recorded_at": now} for b in group]
        writer = (spark.sql(sql.values(rows, METRICS_SCHEMA)).coalesce(1).write.format("delta")
                  .mode("append")
                  .option("txnAppId", metrics_app_id(config.name, query_id))
                  .option("txnVersion", str(max(r["batch_id"] for r in rows)))
                  .option("userMetadata", stamp(config.name, rows)))
        if ref.name:
            writer.saveAsTable(ref.name)
        else:
            writer.save(ref.path)
