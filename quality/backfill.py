"""Rebuild missing run-metrics rows from the target's Delta history.

Each target commit of a batch carries the batch's counts in its ``userMetadata`` (see
``pipelines/sink/commit.py::commit_metadata``); the commit itself adds its version and
``operationMetrics.numTargetRowsInserted``. So the commit is the source of truth for its metrics
row, and a row that was never written (the metrics table failed, or the process died between the
target commit and the metrics write, after which the replayed batch is skipped as a no-op) can be
written later, identical in its counts to the one the batch would have written.

The history read is bounded: a window of the newest versions, widened only until it reaches a
batch the metrics table already has (by its start time), and never more than ``max_versions``
(``DeltaTable.history`` reads only that many commit files).

Before any of that, a start whose recent batches are all recorded is told apart without a Spark
job, from the commit files of both tables (``quality/metrics_log.py``); only a doubt reads them
with Spark.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.config.model import PipelineConfig
from pipelines.ledger.record import BATCH_KEY, METADATA_KEY, parse_commit_metadata
from pipelines.sink.metrics import BatchMetrics
from pipelines.storage.tables import TableRef
from quality.metrics_log import all_recorded, rebuildable
from quality.results import write_run_metrics

#: The newest target versions the backfill looks at, at most.
MAX_VERSIONS = 1000
#: The first window it reads; doubled while it holds no batch that is already recorded.
WINDOW = 20


def committed_batches(spark: SparkSession, ref: TableRef, pipeline: str,
                      limit: int, run_id: str | None = None) -> list[BatchMetrics]:
    """The metrics of ``pipeline``'s batches committed in the newest ``limit`` versions of ``ref``.

    Commits without counts in their metadata (written before the counts were added) or without
    operation metrics are left out: their row could not be rebuilt faithfully.

    Args:
        spark: the session.
        ref: the target table.
        pipeline: the pipeline whose commits to read.
        limit: how many of the newest versions to read.
        run_id: only the commits of this run (all runs' when None).

    Returns:
        One ``BatchMetrics`` per commit, oldest first.
    """
    history = ref.history(spark, limit)
    rows = (history.where(F.col("userMetadata").contains(f'"{METADATA_KEY}"'))
            .select("version", F.col("timestamp").cast("double").alias("at"), "userMetadata",
                    "operationMetrics")
            .orderBy("version").collect())
    out = []
    for row in rows:
        body = parse_commit_metadata(row["userMetadata"])
        metrics = row["operationMetrics"] or {}
        if body is None or not rebuildable(body, metrics, pipeline) or \
                (run_id is not None and body.get("run_id") != run_id):
            continue
        out.append(BatchMetrics.from_commit(
            pipeline, int(body["batch_id"]), str(body["run_id"]), body[BATCH_KEY],
            version=int(row["version"]), inserted=int(metrics["numTargetRowsInserted"]),
            committed_at=float(row["at"]),
            updated=int(metrics.get("numTargetRowsUpdated") or 0),
            merge_seconds=(int(metrics["executionTimeMs"]) / 1000
                           if metrics.get("executionTimeMs") else None)))
    return out


def _recorded(spark: SparkSession, config: PipelineConfig) -> DataFrame | None:
    ref = config.quality.metrics_ref
    if not ref.exists(spark):
        return None
    return ref.read(spark).where(F.col("pipeline").isin([config.name]))


def backfill_run_metrics(spark: SparkSession, config: PipelineConfig, *,
                         max_versions: int = MAX_VERSIONS) -> list[BatchMetrics]:
    """Write the metrics rows of this pipeline's committed batches that are missing.

    Args:
        spark: the session.
        config: the pipeline (its target and ``quality.metrics_ref``).
        max_versions: read at most this many of the target's newest versions.

    Returns:
        The batches whose rows were written (none twice: the write is keyed and insert-only).
    """
    if all_recorded(spark, config, min(WINDOW, max_versions)):
        return []  # read from both tables' commit files by name (quality/metrics_log.py)
    target = config.target.ref
    if not target.exists(spark):
        return []
    latest = target.latest_version(spark)
    recorded = _recorded(spark, config)
    newest = None if recorded is None else recorded.agg(F.max("started_at")).first()
    # As epoch seconds: Spark hands back naive local datetimes, the commits aware UTC ones.
    since = None if newest is None or newest[0] is None else newest[0].timestamp()
    # Widen a window of the newest versions until it reaches a batch already recorded (live
    # rows carry no target_version), so a start reads a few commits, not max_versions.
    limit = min(WINDOW, max_versions) if since is not None else max_versions
    while True:
        candidates = committed_batches(spark, target, config.name, limit)
        reached = since is not None and any(c.started_at.timestamp() <= since
                                            for c in candidates)
        if reached or limit >= max_versions or limit > latest:
            break
        limit = min(max_versions, limit * 2)
    if not candidates:
        return []
    have: set[tuple[str, int]] = set()
    if recorded is not None:
        queries = sorted({c.query_id for c in candidates})
        have = {(str(r["query_id"]), int(r["batch_id"])) for r in
                recorded.where(F.col("query_id").isin(queries))
                .select("query_id", "batch_id").collect()}
    missing = [c for c in candidates if (c.query_id, c.batch_id) not in have]
    if missing:
        write_run_metrics(spark, config, missing)
    return missing
