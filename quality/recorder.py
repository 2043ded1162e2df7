"""Run-metrics bookkeeping that never fails, or falsely fails, a batch whose data is committed.

The run-metrics row of a batch is written inside ``foreachBatch``, after the target commit. If
that write raised, the streaming query would die after the data had committed, and the replayed
batch (a no-op) would never record its row. So a failed write prints one warning line and the
run carries on: the rows are retried with the next batch, and whatever is still missing is
rebuilt from the target commits' metadata at the next start (``quality/backfill.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from pyspark.sql import SparkSession

from pipelines.config.model import PipelineConfig
from pipelines.sink.metrics import BatchMetrics
from quality.backfill import backfill_run_metrics
from quality.metrics_append import append_run_metrics, prepare_metrics_table
from quality.results import write_lags, write_run_metrics

Say = Callable[[str], None]


def cause(exc: BaseException, limit: int = 300) -> str:
    """A one-line cause of ``exc``: the JVM exception's own text for Py4J errors."""
    java = getattr(exc, "java_exception", None)
    text = str(java.toString()) if java is not None else f"{type(exc).__name__}: {exc}"
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), type(exc).__name__)
    return line if len(line) <= limit else line[:limit - 3] + "..."


class MetricsRecorder:
    """Records each batch's metrics row; a failure is a warning, never an error."""

    def __init__(self, spark: SparkSession, config: PipelineConfig, say: Say) -> None:
        """Record into ``config.quality.metrics_ref`` with ``spark``; warnings go to ``say``."""
        self.spark, self.config, self.say = spark, config, say
        self.pending: list[BatchMetrics] = []  # rows that failed to write, retried next batch
        self.failing = False
        self.prepared = False  # the table exists with every column (checked once per run)

    def record(self, metrics: BatchMetrics) -> bool:
        """Write ``metrics`` (and rows that failed before); print one line on the first failure.

        Returns:
            Whether every pending row is now recorded.
        """
        rows = [b for b in (*self.pending, metrics) if not b.replayed]
        if not rows:
            return True
        try:
            if self.pending:  # a failed write may have committed: the keyed MERGE adds no twin
                write_run_metrics(self.spark, self.config, rows)
            else:  # the row of the batch just committed: an idempotent append, no scan
                if not self.prepared:
                    prepare_metrics_table(self.spark, self.config)
                    self.prepared = True
                append_run_metrics(self.spark, self.config, metrics)
        except Exception as exc:  # bookkeeping must never fail the batch
            self.pending = rows
            if not self.failing:
                self.say(f"warning: could not record the run metrics of batch {metrics.batch_id}"
                         f" in {self.config.quality.metrics_ref.describe()} ({cause(exc)}); the "
                         "batch's data is committed, and missing metrics rows are backfilled "
                         "from the target's history at the next start")
            self.failing = True
            return False
        if self.failing:
            self.say(f"run metrics recorded again: {len(rows)} rows written, including the "
                     "ones that failed before")
        self.pending, self.failing = [], False
        return True

    def record_lags(self, lags: dict[tuple[str, int], int]) -> bool:
        """Fill the lag of recorded batches, ``(query_id, batch_id) -> lag`` (after the batches).

        Rows still pending (their write failed) take their lag with them when written.

        Returns:
            Whether the lags were written.
        """
        self.pending = [replace(b, lag_records=lags.get((b.query_id, b.batch_id), b.lag_records))
                        for b in self.pending]
        try:
            write_lags(self.spark, self.config, lags)
        except Exception as exc:  # bookkeeping must never fail the run
            self.say(f"warning: could not record the lag of {len(lags)} batches in "
                     f"{self.config.quality.metrics_ref.describe()} ({cause(exc)}); their "
                     "lag stays empty, the rest of their metrics is recorded")
            return False
        return True

    def backfill(self) -> list[BatchMetrics]:
        """Write the rows missing for batches already in the target (at start-up).

        Returns:
            The batches backfilled (empty if none were missing, or the backfill failed).
        """
        try:
            done = backfill_run_metrics(self.spark, self.config)
        except Exception as exc:  # bookkeeping must never stop ingestion
            self.say(f"warning: could not backfill run metrics into "
                     f"{self.config.quality.metrics_ref.describe()} ({cause(exc)}); ingestion "
                     "continues, and the next start tries again")
            return []
        if done:
            ids = ", ".join(str(b.batch_id) for b in done)
            noun = "batch" if len(done) == 1 else "batches"
            self.say(f"run metrics: backfilled {len(done)} {noun} from the target's history "
                     f"(batch ids {ids})")
        return done
