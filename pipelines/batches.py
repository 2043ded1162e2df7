"""A running query's batches, as the client learns them: from what each batch committed.

Under Spark Connect the ``foreachBatch`` body runs in a worker beside the server, so nothing it
computes reaches the client's memory. The client learns each batch the same way in both modes:
the query's progress says which batches ran (and read rows), and the target commit of each says
what it did. Its userMetadata carries the batch's counts, freshness and timings, its
``operationMetrics`` the rows the MERGE inserted and updated (``BatchMetrics.from_commit``).

A batch that read rows and left no target commit of this run's was skipped by Delta as an
already committed txn: a replay (the batch itself proved that before it returned, see
``pipelines/ledger/reconcile.py::prove_replay``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark.sql import SparkSession

from pipelines.config.model import PipelineConfig
from pipelines.runtime.progress import batch_key, input_rows, recent_progress
from pipelines.sink.metrics import BatchMetrics
from quality.backfill import committed_batches

#: Target versions read per batch still to report, plus this many for other writers' commits.
_SLACK = 20


class BatchFeed:
    """Hands each finished batch of this run to ``on_batch`` once, in batch order.

    Args:
        spark: a session of the client (not the stream's, under Spark Connect).
        config: the pipeline.
        run_id: this run's id, which its commits carry.
        on_batch: receives each batch's metrics (progress line, recorder, cadence).
        query_id: the query id the batches' commits carry, when it is not the streaming
            query's own (``deltasink replay`` commits under its replay id).
    """

    def __init__(self, spark: SparkSession, config: PipelineConfig, run_id: str,
                 on_batch: Callable[[BatchMetrics], None], query_id: str | None = None
                 ) -> None:
        self.spark, self.config, self.run_id, self.on_batch = spark, config, run_id, on_batch
        self.query_id = query_id
        self.reported: set[tuple[str, int]] = set()

    def poll(self, query: Any) -> int:
        """Report the batches whose progress is out and that were not reported yet.

        Args:
            query: the streaming query (its recent progress, :func:`recent_progress`).

        Returns:
            How many batches were reported.
        """
        ran = {batch_key(p): p for p in recent_progress(query)
               if input_rows(p) and batch_key(p) not in self.reported}
        if not ran:
            return 0
        commits = {(m.query_id, m.batch_id): m for m in committed_batches(
            self.spark, self.config.target.ref, self.config.name, len(ran) + _SLACK,
            run_id=self.run_id)}
        for key in sorted(ran, key=lambda k: k[1]):
            found = commits.get((self.query_id or key[0], key[1]))
            self.on_batch(found if found is not None else _replayed(self.config, self.run_id,
                                                                    ran[key]))
            self.reported.add(key)
        return len(ran)


def _replayed(config: PipelineConfig, run_id: str, progress: dict[str, Any]) -> BatchMetrics:
    """A batch that read rows but committed nothing of this run's: a proven replay."""
    from datetime import datetime

    started = datetime.fromisoformat(str(progress["timestamp"]).replace("Z", "+00:00"))
    query_id, batch_id = batch_key(progress)
    return BatchMetrics(
        pipeline=config.name, run_id=run_id, query_id=query_id,
        batch_id=batch_id, records_in=input_rows(progress),
        quarantined=0, duplicates_in_batch=0, duplicates_by_merge=0, inserted=0,
        duration_s=float(progress["batchDuration"]) / 1000, started_at=started, replayed=True)
