"""Validation on a cadence in ``--trigger continuous``: prove each stretch of the stream.

A continuous run never reaches the post-run validation until it stops, so
:class:`CadenceValidator` validates as the client learns of each committed batch
(``pipelines/batches.py``), whenever ``quality.validate_every`` is due (a duration or a batch
count). Each validation covers exactly the batches committed since the previous one: their
``event_date`` partitions in the target snapshot at the last of them (its commit's version, so
batches committed meanwhile are not judged early), and the quarantine share of their records. It
runs on the client, beside the stream (under Spark Connect the batches run in the server's
worker), so a validation no longer lengthens the batch it follows.

Each validation gets its own id, ``<run_id>-c<n>``, in the quality-results table. A stretch that
read no records is not validated, and says so: a pass on nothing proves nothing. A failure is
recorded and printed; with ``quality.on_failure: stop`` it also ends the stream with
:class:`~pipelines.errors.QualityError` (exit code 3); batches committed by then stay committed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from pyspark.sql import SparkSession

from pipelines import faults
from pipelines.config.model import PipelineConfig
from pipelines.errors import QualityError
from pipelines.sink.metrics import BatchMetrics, RunResult
from quality.model import ValidationReport

Progress = Callable[[str], None]


def validate_run(spark: SparkSession, config: PipelineConfig, result: RunResult,
                 say: Progress, record: Callable[[ValidationReport], None] | None = None) -> None:
    """Validate the partitions the run touched (its metrics rows were written as its query ended).

    ``record`` records the verdicts instead of the validation itself (a group run's, once for
    all its pipelines); a failed validation is handed to it too, before the error.

    Raises:
        QualityError: an expectation failed (each failure is printed first).
    """
    from quality.validate import validate_table

    faults.maybe_crash("during_validation")
    report = validate_table(spark, config, run=result, record=record)
    for line in report.summary_lines():
        say(line)
    if not report.success:
        raise QualityError(f"validation failed for run {result.run_id}; see the failing "
                           "expectations above")


class CadenceValidator:
    """Called with every batch's metrics after its commit; validates when the cadence is due.

    Args:
        spark: the session.
        config: the pipeline config (``quality.validate_every``, ``quality.on_failure``).
        run_id: the run's id; validation ``n`` is recorded as ``<run_id>-c<n>``.
        say: receives the progress lines.
        clock: monotonic seconds (replaceable for tests of the cadence arithmetic).
    """

    def __init__(self, spark: SparkSession, config: PipelineConfig, run_id: str,
                 say: Progress, clock: Callable[[], float] = time.monotonic) -> None:
        self.spark, self.config, self.run_id, self.say, self.clock = (
            spark, config, run_id, say, clock)
        self.pending: list[BatchMetrics] = []
        self.since = clock()
        self.count = 0
        self.reports: list[ValidationReport] = []
        # query.stop() returns while a batch's Python callback may still be validating: finish()
        # (on the driver's main thread) waits for it instead of racing it.
        self.lock = threading.Lock()

    def __call__(self, metrics: BatchMetrics) -> None:
        """Note a committed batch; validate the batches since the last validation when due.

        Raises:
            QualityError: the validation failed and ``quality.on_failure`` is ``stop``.
        """
        if metrics.replayed:  # changed nothing: nothing new to prove
            return
        with self.lock:
            self.pending.append(metrics)
            if self.config.quality.validate_every.due(len(self.pending),
                                                      self.clock() - self.since):
                stop = self.config.quality.on_failure == "stop"
                self.validate(stop=" (quality.on_failure: stop): the stream was stopped" if stop
                              else None)

    def validate(self, *, stop: str | None) -> ValidationReport | None:
        """Validate the batches committed since the last validation, then start a new stretch.

        Args:
            stop: raise :class:`QualityError` when an expectation fails, with this text after
                its id (None: record and print the failure, and go on).

        Returns:
            The report, or None when the stretch read no records (nothing was validated).

        Raises:
            QualityError: an expectation failed and ``stop`` is true.
        """
        from quality.validate import validate_table

        batches, self.pending, self.since = tuple(self.pending), [], self.clock()
        self.count += 1
        scope = RunResult(self.config.name, f"{self.run_id}-c{self.count}", batches)
        head = f"quality cadence {scope.run_id}"
        if scope.records_in == 0:
            self.say(f"{head}: no new records since the last validation; nothing validated")
            return None
        try:  # at the stretch's last commit: later batches may be committed by now
            report = validate_table(self.spark, self.config, run=scope,
                                    version=batches[-1].target_version)
        except Exception as exc:  # could not validate: keep the stretch for the next time
            self.pending = [*batches, *self.pending]
            self.count -= 1
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
            self.say(f"warning: {head} could not run ({first}); its batches are validated "
                     "with the next ones")
            return None
        version = "-" if report.table_version is None else report.table_version
        self.say(f"{head}: batches {batches[0].batch_id}..{batches[-1].batch_id}: "
                 f"in={scope.records_in} inserted={scope.inserted} "
                 f"quarantined={scope.quarantined}; {len(scope.event_dates)} partitions at "
                 f"table version {version}")
        for line in report.summary_lines():
            self.say(line)
        self.reports.append(report)
        if not report.success:
            if stop is not None:
                raise QualityError(f"validation {scope.run_id} failed{stop}; see the failing "
                                   "expectations above")
            self.say(f"{head} FAILED: recorded; the stream goes on (quality.on_failure: "
                     "continue)")
        return report

    def finish(self) -> None:
        """Validate what the stream committed since the last validation, when it ends.

        Raises:
            QualityError: an expectation failed (whatever ``quality.on_failure`` says: the run
                is over, and its exit code reports the failure).
        """
        with self.lock:
            if self.pending or not self.reports:
                self.validate(stop=" at the end of the stream")
            else:
                self.say(f"quality cadence: nothing committed since validation "
                         f"{self.run_id}-c{self.count}; nothing left to validate")
