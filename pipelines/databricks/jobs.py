"""Entry points for the Databricks notebooks: widget values in, one pipeline action out.

Each notebook declares its widgets (the pipeline's config file plus per-target adjustments),
calls :func:`read_widgets` (failing fast on a missing or empty one), then makes one call:
:func:`ingest`, :func:`validate` or :func:`maintain`. The widgets and how they build a
:class:`PipelineConfig` live in :mod:`pipelines.databricks.widgets` (re-exported here for
the notebooks), so notebooks hold no logic.

The ingest task records its run's metrics and publishes the run id as a task value; the validate
task reads that run back from the run-metrics table and validates it (its partitions and its
quarantine share). Validation is a separate task so that a quality failure is never retried as
if it were an ingestion failure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import date
from typing import TYPE_CHECKING, Any

from pipelines.config.model import PipelineConfig
from pipelines.databricks.widgets import (
    INGEST_WIDGETS,
    MAINTENANCE_WIDGETS,
    VALIDATE_WIDGETS,
    SecretGetter,
    build_config,
    read_widgets,
)
from pipelines.errors import ConfigError, QualityError
from pipelines.runtime.spark import get_spark
from pipelines.sink.metrics import BatchMetrics, RunResult

#: What the notebooks use: ``jobs.read_widgets(dbutils.widgets.get, jobs.INGEST_WIDGETS)``.
__all__ = ["INGEST_WIDGETS", "MAINTENANCE_WIDGETS", "VALIDATE_WIDGETS", "build_config",
           "ingest", "maintain", "read_widgets", "validate"]

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from pipelines.ops.maintenance import MaintenanceReport
    from quality.model import ValidationReport

#: ``task_values(key, value)``, i.e. ``dbutils.jobs.taskValues.set``.
TaskValueSetter = Callable[[str, Any], None]


def ingest(params: Mapping[str, str], secrets: SecretGetter | None = None, *,
           spark: SparkSession | None = None,
           task_values: TaskValueSetter | None = None) -> RunResult:
    """The ingest notebook: stream Kafka into Delta, record the run's metrics, publish its id.

    With ``trigger`` ``continuous`` it also validates on the cadence ``validate_every``.

    Args:
        params: widget values (:data:`INGEST_WIDGETS`).
        secrets: ``dbutils.secrets.get``.
        spark: the session (default: the active one).
        task_values: ``dbutils.jobs.taskValues.set``; receives ``run_id`` for the validate task.

    Returns:
        What the run did.
    """
    from pipelines.run import run_pipeline

    values = read_widgets(params.__getitem__, INGEST_WIDGETS)
    config = build_config(values, secrets)
    session = spark or get_spark()
    print(config.describe)
    # Available-now runs are validated by the validate task; a continuous run has no end, so
    # it validates itself every quality.validate_every (quality/cadence.py).
    result = run_pipeline(session, config, trigger=values["trigger"],
                          interval=values["interval"],
                          validate=values["trigger"] == "continuous", progress=print)
    if task_values is not None:
        task_values("run_id", result.run_id)
    return result


def load_run(spark: SparkSession, config: PipelineConfig, run_id: str) -> RunResult:
    """Rebuild a recorded run from the run-metrics table (no batches if none were recorded)."""
    from quality.results_read import read_run_metrics

    batches = []
    for row in read_run_metrics(spark, config):
        if row["run_id"] != run_id:
            continue
        fields = {k: v for k, v in row.asDict().items() if k != "recorded_at"}
        fields["event_dates"] = tuple(
            date.fromisoformat(d) for d in (fields["event_dates"] or "").split(",") if d)
        fields["stage_seconds"] = {k: float(v) for k, _, v in (
            s.partition("=") for s in (fields["stage_seconds"] or "").split(",") if s)}
        batches.append(BatchMetrics(**fields))
    return RunResult(config.name, run_id, tuple(batches))


def validate(params: Mapping[str, str], secrets: SecretGetter | None = None, *,
             spark: SparkSession | None = None) -> ValidationReport:
    """The validate notebook: validate a recorded run (or the whole table); fail on failure.

    Args:
        params: widget values (:data:`VALIDATE_WIDGETS`): ``run_id`` (from the ingest task)
            and/or ``full`` (``true`` validates the whole table).
        secrets: ``dbutils.secrets.get`` (the lag check reads Kafka).
        spark: the session (default: the active one).

    Returns:
        The passing report.

    Raises:
        QualityError: an expectation failed (the message is the summary).
    """
    from quality.validate import validate_table

    values = read_widgets(params.__getitem__, VALIDATE_WIDGETS)
    full = _parse("full", values["full"], {"true": True, "false": False}.get)
    if not full and not values["run_id"]:
        raise ConfigError("widget 'run_id' is empty and 'full' is false: nothing to validate")
    config, session = build_config(values, secrets), spark or get_spark()
    run = load_run(session, config, values["run_id"]) if values["run_id"] else None
    report = validate_table(session, config, full=bool(full), run=run)
    print("\n".join(report.summary_lines()))
    if not report.success:
        raise QualityError("\n".join(report.summary_lines()))
    return report


def maintain(params: Mapping[str, str], secrets: SecretGetter | None = None, *,
             spark: SparkSession | None = None) -> MaintenanceReport:
    """The maintenance notebook: OPTIMIZE, VACUUM, then full-table validation.

    Args:
        params: widget values (:data:`MAINTENANCE_WIDGETS`).
        secrets: ``dbutils.secrets.get``.
        spark: the session (default: the active one).

    Returns:
        What was done, with the passing validation report.

    Raises:
        ConfigError | QualityError: ``retain_hours`` is not >= 168, or validation failed.
    """
    from pipelines.ops.maintenance import run_maintenance

    values = read_widgets(params.__getitem__, MAINTENANCE_WIDGETS)
    hours = _parse("retain_hours", values["retain_hours"],
                   lambda v: int(v) if v.isdigit() else None)
    report = run_maintenance(spark or get_spark(), build_config(values, secrets), int(hours))
    print("\n".join(report.summary_lines()))
    return report


def _parse(widget: str, value: str, convert: Callable[[str], Any]) -> Any:
    parsed = convert(value.lower())
    if parsed is None:
        raise ConfigError(f"widget '{widget}': '{value}' is not a valid value")
    return parsed
