"""Validate a pipeline's target table: the public entry point of the quality layer.

:func:`validate_table` reads the target at one recorded Delta version, runs the target suite on
the selected partitions (or the whole table), adds the run's quarantine-share check and the
configured lag/staleness checks, records the verdicts in the quality-results table and rebuilds
Data Docs. Failed expectations are reported, never raised: the caller decides what they mean.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.config.model import PipelineConfig
from pipelines.errors import QualityError
from pipelines.ledger.deltalog import DeltaLogFiles
from pipelines.sink.metrics import RunResult
from pipelines.sink.modes.change_tables import keyed
from pipelines.sink.modes.choice import mode_for
from pipelines.storage.store import Store
from pipelines.storage.tables import TableRef
from quality.gx_runner import run_suite
from quality.intervals import interval_outcome
from quality.model import ExpectationOutcome, ValidationReport
from quality.other_dates import other_date_outcome
from quality.results import write_validation_results
from quality.results_read import newest_inserted
from quality.suites import (
    DATE_COLUMN,
    lag_outcome,
    run_quarantine_outcome,
    staleness_outcome,
    target_suite,
)
from schemas.changes import POSITION


def latest_version(spark: SparkSession, ref: TableRef) -> int:
    """The latest committed version of a Delta table (a path table's is read from its log by
    file name, ``pipelines/ledger/deltalog.py``: no table scan).

    Raises:
        QualityError: the table does not exist.
    """
    if not ref.exists(spark):
        raise QualityError(
            f"cannot validate {ref.describe()}: the target table does not exist yet "
            "(run the pipeline first, or check target.path / target.table in the config)")
    if ref.path:
        latest = DeltaLogFiles(Store(spark), ref.path).latest_version()
        if latest is not None:
            return latest
    return ref.latest_version(spark)


def select_rows(
    spark: SparkSession, ref: TableRef, version: int, *, full: bool, dates: Sequence[date]
) -> DataFrame:
    """The target rows to validate: the snapshot at ``version``, whole or only ``dates``."""
    df = ref.read(spark, version)
    if full:
        return df
    return df.where(F.col(DATE_COLUMN).isin(sorted(set(dates))))


def freshness_outcomes(spark: SparkSession, config: PipelineConfig,
                       now: datetime) -> list[ExpectationOutcome]:
    """The lag and staleness checks that ``quality.max_lag_records`` / ``max_staleness`` ask for.

    The lag is asked of Kafka now (``pipelines.ledger.lag.current_lag``), not read from the last
    batch: a pipeline that stopped with a backlog has no batch that would show it.
    """
    quality = config.quality
    if quality.max_lag_records is None and quality.max_staleness is None:
        return []
    from pipelines.ledger.lag import current_lag

    lag = current_lag(spark, config)
    out = []
    if quality.max_lag_records is not None:
        out.append(lag_outcome(lag, quality.max_lag_records))
    if quality.max_staleness is not None:
        out.append(staleness_outcome(lag, newest_inserted(spark, config)[1], now,
                                     quality.max_staleness))
    return out


def validate_table(
    spark: SparkSession,
    config: PipelineConfig,
    *,
    full: bool = False,
    dates: Sequence[date] | None = None,
    run: RunResult | None = None,
    version: int | None = None,
    record: Callable[[ValidationReport], None] | None = None,
) -> ValidationReport:
    """Validate the target table of ``config`` and record the verdicts.

    The target is read at its latest version *when validation starts*; that version is recorded
    in the report and the results table, so a verdict always names the exact snapshot it judged.
    Uniqueness is checked across all selected partitions together, and the keys of the selected
    partitions against every other date (:mod:`quality.other_dates`: a copy that landed on
    another date than its first row fails the run that wrote either). A duplicate whose two rows
    are both on dates that are not selected is only found with ``full=True``.

    Args:
        spark: the session.
        config: the pipeline configuration.
        full: validate the whole table instead of selected partitions.
        dates: the ``event_date`` partitions to validate; defaults to ``run.event_dates``.
        run: the run being validated; adds the quarantine-share check and provides the run id.
            Without it the report gets an ad-hoc id (``adhoc-<uuid>``).
        version: the snapshot to judge (a cadence stretch's last commit, whatever the stream
            committed since); default the latest version when validation starts.
        record: records the report's verdicts instead of this call (a group run writes all
            its pipelines' verdicts in one commit, ``quality/group_book.py``); default: written
            to ``quality.results_ref`` here.

    The lag and staleness checks (:func:`freshness_outcomes`) are added whenever their
    thresholds are set, with or without target rows.

    Returns:
        The report (``success=False`` if any expectation failed). With no dates, ``full=False``
        and no ``run``, nothing is validated and the report is empty and successful.

    Raises:
        QualityError: the target table does not exist while rows were to be validated.
    """
    validated_at = datetime.now(UTC)
    config = keyed(spark, config)  # a change stream's key, as its target records it
    mode = mode_for(config)
    full = full or mode.whole_table  # a key's versions span dates: the table is the unit
    run_id = run.run_id if run is not None else f"adhoc-{uuid.uuid4().hex[:12]}"
    selected = list(dates) if dates is not None else list(run.event_dates if run else ())
    wants_target = full or bool(selected)

    rows: DataFrame | None = None
    if not wants_target:
        version = None
    elif version is None or not config.target.ref.exists(spark):
        version = latest_version(spark, config.target.ref)
    if version is not None:
        rows = select_rows(spark, config.target.ref, version, full=full, dates=selected)

    suite = target_suite(config, now=validated_at)
    keys = config.target.dedup_keys
    outcomes, docs_index = run_suite(
        rows, suite, key=keys[0] if keys else POSITION, docs_dir=Path(config.quality.docs_dir),
        run_name=run_id, run_time=validated_at)
    results: list[ExpectationOutcome] = list(outcomes)
    intervals = mode.expectations(config.event_schema()).intervals
    if rows is not None and intervals is not None:
        results.append(interval_outcome(rows, keys, *intervals))
    if version is not None and not full:
        results.append(other_date_outcome(config.target.ref.read(spark, version),
                                          config.target.dedup_keys, selected))
    if run is not None:
        results.append(run_quarantine_outcome(run, config))
    results.extend(freshness_outcomes(spark, config, validated_at))

    report = ValidationReport(
        run_id=run_id,
        pipeline=config.name,
        table_version=version,
        success=all(r.success for r in results),
        results=results,
        validated_at=validated_at,
        docs_index=docs_index,
    )
    if results and record is not None:
        record(report)
    elif results:
        write_validation_results(spark, config, report)
    return report
