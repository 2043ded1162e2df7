"""Run-metrics bookkeeping that never fails, or falsely fails, a batch whose data is committed.

A batch's run-metrics row is buffered when the batch commits and written by :meth:`flush`,
which the run calls from the driver thread that waits for the query: once a minute, and when the
query ends (``pipelines/run.py``). A flush writes only when ``quality.metrics_every`` (5 minutes
by default) has passed since the last write, or when the query has ended; between writes it
keeps the lags it was given in the buffered rows, because the progress that holds them rolls
over (Spark keeps the newest 100). So a continuous run adds about 288 commits a day to the
run-metrics table at the default, not 1,440. Each write is one idempotent append for all the
rows since the last one, with each row's Kafka lag already in it (the lag of batch N is only
known from the query's progress, after its ``foreachBatch`` returned). Writing from inside
``foreachBatch`` cost every batch a Delta commit of its own (an append, 1-2 s on the dev VM),
and the lag a second, updating MERGE per run (2-4 s).

A failed write prints one warning line and the run carries on: the rows are retried at the next
flush, with the keyed MERGE (a failed append may still have committed). A process that dies
before a flush leaves its committed batches without rows; the next start rebuilds them from the
target commits' metadata (``quality/backfill.py``), as it always did for crashes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace

from pyspark.sql import SparkSession

from pipelines.config.model import PipelineConfig
from pipelines.sink.metrics import BatchMetrics
from quality.backfill import backfill_run_metrics
from quality.metrics_append import append_run_metrics, prepare_metrics_table
from quality.results import write_run_metrics

Say = Callable[[str], None]
Lags = dict[tuple[str, int], int]


def cause(exc: BaseException, limit: int = 300) -> str:
    """A one-line cause of ``exc``: the JVM exception's own text for Py4J errors."""
    java = getattr(exc, "java_exception", None)
    text = str(java.toString()) if java is not None else f"{type(exc).__name__}: {exc}"
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), type(exc).__name__)
    return line if len(line) <= limit else line[:limit - 3] + "..."


def with_lags(rows: list[BatchMetrics], lags: Lags) -> list[BatchMetrics]:
    """``rows`` with the lag of each row that ``lags`` knows and it does not."""
    return [replace(b, lag_records=lags[(b.query_id, b.batch_id)])
            if b.lag_records is None and (b.query_id, b.batch_id) in lags else b for b in rows]


def ready(rows: list[BatchMetrics], lags: Lags) -> int:
    """How many of ``rows`` (in commit order) to write now: all but the newest ones whose lag
    is not known yet. Only a tail is held back, so a later flush never writes a batch id below
    one an earlier flush wrote for the same query (the append's txn version grows)."""
    held = len(rows)
    while held and rows[held - 1].lag_records is None and \
            (rows[held - 1].query_id, rows[held - 1].batch_id) not in lags:
        held -= 1
    return held


class MetricsRecorder:
    """Buffers each batch's metrics row and writes them; a failure is a warning, never an error."""

    def __init__(self, spark: SparkSession, config: PipelineConfig, say: Say,
                 final_to: Callable[[list[BatchMetrics]], None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """Record into ``config.quality.metrics_ref`` with ``spark``; warnings go to ``say``.

        ``final_to`` takes the rows of the final flush instead of a write here: a group run
        writes every pipeline's in one commit (``quality/group_book.py``). ``clock`` times
        ``quality.metrics_every`` (seconds; monotonic).
        """
        self.spark, self.config, self.say, self.final_to = spark, config, say, final_to
        self.clock, self.written_at = clock, clock()
        # The staleness check reads the newest rows: a pipeline with one writes them at once.
        quality = config.quality
        self.every = 0.0 if quality.max_staleness is not None else quality.metrics_every
        self.buffer: list[BatchMetrics] = []  # committed, not written yet (commit order)
        self.pending: list[BatchMetrics] = []  # rows whose write failed, retried by MERGE
        self.failing = False
        self.prepared = False  # the table exists with every column (checked once per run)
        self.lock = threading.Lock()  # record() runs on the batch thread, flush() on the driver's

    def record(self, metrics: BatchMetrics) -> None:
        """Note a committed batch's row; :meth:`flush` writes it (a replay has no row)."""
        if not metrics.replayed:
            with self.lock:
                self.buffer.append(metrics)

    def flush(self, lags: Lags, *, final: bool = False) -> bool:
        """Write the rows noted so far, with their lag; print one line on the first failure.

        Args:
            lags: ``(query_id, batch_id) -> lag`` from the query's progress.
            final: the query has ended: write every row, with a null lag where none is known.
                Otherwise the newest rows whose lag is not known yet wait for the next flush.

        Returns:
            Whether every row due is now recorded.
        """
        with self.lock:
            rows, now = with_lags(self.buffer, lags), self.clock()
            if not final and now - self.written_at < self.every:
                self.buffer = rows  # keep the lags known now: their progress rolls over
                return not self.failing
            self.written_at = now
            count = len(rows) if final else ready(rows, lags)
            due, self.buffer = rows[:count], rows[count:]
        retry = with_lags(self.pending, lags)
        if not due and not retry:
            return True
        if final and self.final_to is not None:  # written by the group, with the keyed MERGE
            self.final_to([*retry, *due])
            self.pending, self.failing = [], False
            return True
        try:
            if retry:  # a failed write may have committed: the keyed MERGE adds no twin
                write_run_metrics(self.spark, self.config, [*retry, *due])
            else:  # rows new by construction: idempotent appends, no scan
                if not self.prepared:
                    prepare_metrics_table(self.spark, self.config)
                    self.prepared = True
                append_run_metrics(self.spark, self.config, due)
        except Exception as exc:  # bookkeeping must never fail the batch
            self.pending = [*retry, *due]
            if not self.failing:
                ids = ", ".join(str(b.batch_id) for b in self.pending)
                self.say(f"warning: could not record the run metrics of batches {ids} in "
                         f"{self.config.quality.metrics_ref.describe()} ({cause(exc)}); their "
                         "data is committed, and missing metrics rows are backfilled from the "
                         "target's history at the next start")
            self.failing = True
            return False
        if self.failing:
            self.say(f"run metrics recorded again: {len(retry) + len(due)} rows written, "
                     "including the ones that failed before")
        self.pending, self.failing = [], False
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
