"""One batch's run-metrics row as a blind, idempotent append: the common case, per batch.

An insert-only MERGE reads the pipeline's partition of the metrics table to find the key, so
every batch paid a scan of all the rows recorded before it (a Delta snapshot, a join, a write:
several Spark jobs and 1-3 s per batch on the dev VM). A batch's row is new by construction when
it is written right after the batch's own target commit, so it is appended instead, made
idempotent the way the target's commits are: ``txnAppId`` = the pipeline and the streaming
query id, ``txnVersion`` = the batch id. Delta skips an append whose version the app id has
already recorded, so writing the row of the same batch again adds nothing.

Everything else goes through the keyed MERGE (``quality.results.write_run_metrics``): rows
retried after a failure (their first write may have committed before it failed) and rows
backfilled from the target's history. The append carries the same mark in its userMetadata as
the MERGE (``quality/metrics_log.py``).
"""

from __future__ import annotations

from datetime import UTC, datetime

from pyspark.sql import SparkSession

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


def append_run_metrics(spark: SparkSession, config: PipelineConfig, batch: BatchMetrics) -> None:
    """Append ``batch``'s row once: a second append of the same batch is skipped by Delta.

    The table must exist with every column (:func:`prepare_metrics_table`).

    Args:
        spark: the session.
        config: the pipeline (``quality.metrics_ref``).
        batch: a batch just committed to the target (not a replay).
    """
    row = {**batch.as_row(), "recorded_at": datetime.now(UTC)}
    ref = config.quality.metrics_ref
    writer = (spark.createDataFrame([row], METRICS_SCHEMA).write.format("delta").mode("append")
              .option("txnAppId", metrics_app_id(config.name, batch.query_id))
              .option("txnVersion", str(batch.batch_id))
              .option("userMetadata", stamp(config.name, [row])))
    if ref.name:
        writer.saveAsTable(ref.name)
    else:
        writer.save(ref.path)
