"""A group run's bookkeeping, written once for the group: the verdicts, then the run-metrics rows.

Written one pipeline at a time, a group of eight paid eight verdict MERGEs and eight metrics
appends: 10.7-11.8 s and 5.5-7.6 s, against 1.1-2.6 s and 1.5-3.3 s for the same rows in one
write each (``bench/README.md``, "Many pipelines", measured at load 4-6). :class:`GroupBook`
takes what each pipeline would have written when its stream ends and when it is validated, and
:meth:`GroupBook.write` writes each table's rows in one insert-only keyed MERGE once every
pipeline has ended.

Exactly once is kept by key, as for every retried bookkeeping write: a row goes in only if its
key is new, so the write repeated, or overlapping a pipeline's own earlier write, adds no twin.
The single run's guarded append cannot stand for several pipelines: Delta's writer carries one
txn (app id, version) per commit.

What stays each pipeline's own:

* a pipeline with ``quality.max_staleness`` writes its own rows before it validates, because
  its staleness check reads them (``pipelines/run.py``);
* the rows a stream writes while it runs, every ``quality.metrics_every`` (``quality/recorder.py``).

A group that dies before its write leaves the metrics rows to each pipeline's next start, which
rebuilds them from the target's history (``quality/backfill.py``), as a single run killed
before its last write does; and the verdicts unrecorded, as a run killed while it validates
does (they were printed; ``deltasink validate`` judges and records again).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from pyspark.sql import SparkSession

from pipelines.config.model import PipelineConfig
from pipelines.errors import DeltasinkError
from pipelines.sink.metrics import BatchMetrics
from pipelines.storage.tables import TableRef
from quality.model import ValidationReport
from quality.recorder import cause
from quality.results import insert_metrics, insert_verdicts

Say = Callable[[str], None]


class GroupBook:
    """The verdicts and run-metrics rows of a group's pipelines, per table, until written."""

    def __init__(self) -> None:
        self.lock = threading.Lock()  # the pipelines hand their rows over from their threads
        self.verdicts: dict[TableRef, list[ValidationReport]] = {}
        self.metrics: dict[TableRef, list[BatchMetrics]] = {}

    def metrics_of(self, config: PipelineConfig) -> Callable[[list[BatchMetrics]], None]:
        """What takes ``config``'s run-metrics rows (``run_pipeline``'s ``metrics_to``)."""

        def keep(rows: list[BatchMetrics]) -> None:
            with self.lock:
                self.metrics.setdefault(config.quality.metrics_ref, []).extend(rows)

        return keep

    def verdicts_of(self, config: PipelineConfig) -> Callable[[ValidationReport], None]:
        """What takes ``config``'s validation report (``validate_run``'s ``record``)."""

        def keep(report: ValidationReport) -> None:
            with self.lock:
                self.verdicts.setdefault(config.quality.results_ref, []).append(report)

        return keep

    def write(self, spark: SparkSession, say: Say) -> dict[str, DeltasinkError]:
        """Write each table's rows in one MERGE: the verdicts first (nothing rebuilds them).

        A metrics write that fails is one warning line: the next start of each pipeline
        backfills its rows. A verdict write that fails is an error of each of its pipelines.

        Args:
            spark: the group's session (no pipeline's txn settings are in it).
            say: receives one line per table written, or the warning.

        Returns:
            The pipelines whose verdicts could not be recorded, with why.
        """
        unrecorded: dict[str, DeltasinkError] = {}
        with self.lock:
            verdicts, self.verdicts = self.verdicts, {}
            metrics, self.metrics = self.metrics, {}
        for ref, reports in verdicts.items():
            names = sorted({report.pipeline for report in reports})
            try:
                insert_verdicts(spark, ref, reports)
            except Exception as exc:
                for report in reports:
                    judged = "passed" if report.success else "failed"
                    unrecorded[report.pipeline] = DeltasinkError(
                        f"its validation {judged}, but the verdict could not be recorded in "
                        f"{ref.describe()} ({cause(exc)}); the data is committed: run "
                        "deltasink validate to judge it again and record the verdict")
                continue
            say(f"group: the verdicts of {_count(names)} recorded in {ref.describe()}, "
                "one commit")
        for ref, batches in metrics.items():
            names = sorted({batch.pipeline for batch in batches})
            try:
                insert_metrics(spark, ref, batches)
            except Exception as exc:  # bookkeeping must never fail a run whose data landed
                say(f"warning: could not record the run metrics of {', '.join(names)} in "
                    f"{ref.describe()} ({cause(exc)}); their data is committed, and each "
                    "pipeline's next start backfills the missing rows from its target's history")
                continue
            say(f"group: the run metrics of {_count(names)} recorded in {ref.describe()}, "
                "one commit")
        return unrecorded


def _count(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{len(names)} pipelines"
