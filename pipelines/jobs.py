"""Entry points for the Databricks notebooks: widget values in, one pipeline action out.

Each notebook declares its widgets, calls :func:`read_widgets` (failing fast on a missing or empty
one), then makes one call: :func:`ingest`, :func:`validate` or :func:`maintain`. The mapping from
widgets to a :class:`PipelineConfig` lives here, so notebooks hold no logic. A table widget takes
a Unity Catalog name (``catalog.schema.table``) or a path (containing ``/`` or a URI scheme).
Secrets come only from the ``secrets`` callable (``dbutils.secrets.get``) and are never printed.

The ingest task records its run's metrics and publishes the run id as a task value; the validate
task reads that run back from the run-metrics table and validates it (its partitions and its
quarantine share). Validation is a separate task so that a quality failure is never retried as
if it were an ingestion failure.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import date
from typing import TYPE_CHECKING, Any

from pipelines.config.loader import parse_config
from pipelines.config.model import PipelineConfig
from pipelines.errors import ConfigError, QualityError
from pipelines.runtime.spark import get_spark, on_databricks
from pipelines.sink.metrics import BatchMetrics, RunResult

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from pipelines.ops.maintenance import MaintenanceReport
    from quality.model import ValidationReport

#: ``secrets(scope, key) -> value``, i.e. ``dbutils.secrets.get``.
SecretGetter = Callable[[str, str], str]
#: ``task_values(key, value)``, i.e. ``dbutils.jobs.taskValues.set``.
TaskValueSetter = Callable[[str, Any], None]
#: Keys read from the secret scope named by the ``secret_scope`` widget.
SASL_USERNAME_KEY = "kafka-sasl-username"
SASL_PASSWORD_KEY = "kafka-sasl-password"

COMMON_WIDGETS = ("pipeline_name", "bootstrap_servers", "topics", "target", "quarantine",
                  "checkpoint", "quality_results", "run_metrics", "quality_docs")
#: The optional lag and staleness thresholds (``quality.max_lag_records`` and
#: ``quality.max_staleness``) of the validate task and of cadence validation; empty: not checked.
THRESHOLD_WIDGETS = ("max_lag_records", "max_staleness")
#: ``quality.validate_every`` / ``quality.on_failure`` (continuous only); empty: the defaults.
CADENCE_WIDGETS = ("validate_every", "on_failure")
INGEST_WIDGETS = (*COMMON_WIDGETS, "trigger", "interval", "secret_scope", "sasl_mechanism",
                  *CADENCE_WIDGETS, *THRESHOLD_WIDGETS)
VALIDATE_WIDGETS = (*COMMON_WIDGETS, "run_id", "full", *THRESHOLD_WIDGETS)
MAINTENANCE_WIDGETS = (*COMMON_WIDGETS, "retain_hours")
#: Widgets that may be empty; every other one must be set.
OPTIONAL_WIDGETS = frozenset({"quarantine", "secret_scope", "sasl_mechanism", "run_id",
                              *THRESHOLD_WIDGETS, *CADENCE_WIDGETS})

_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
_TABLE_NAME = re.compile(r"^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+){1,2}$")


def read_widgets(get: Callable[[str], str], names: Sequence[str]) -> dict[str, str]:
    """Read every widget's value; fail fast when a required one is missing or empty.

    Args:
        get: ``dbutils.widgets.get``.
        names: the notebook's widgets, e.g. :data:`INGEST_WIDGETS`.

    Returns:
        The values by widget name, stripped of surrounding whitespace.

    Raises:
        ConfigError: naming every required widget that is undefined or empty.
    """
    values: dict[str, str] = {}
    for name in names:
        try:
            values[name] = str(get(name)).strip()
        except Exception:  # dbutils raises InputWidgetNotDefined (via py4j) for unknown names
            values[name] = ""
    missing = [n for n in names if not values[n] and n not in OPTIONAL_WIDGETS]
    if missing:
        raise ConfigError(f"notebook widget(s) missing or empty: {', '.join(missing)}. Set them "
                          "in the task's base_parameters (notebooks/resources/jobs.yml) or in "
                          "the notebook's widget bar.")
    return values


def _location(params: Mapping[str, str], widget: str) -> tuple[str | None, str | None]:
    """Split a table widget's value into ``(path, table)``; both ``None`` when it is empty."""
    value = params.get(widget, "").strip()
    if not value:
        return None, None
    if "/" in value or ":" in value:
        return value, None
    if _TABLE_NAME.match(value):
        return None, value
    raise ConfigError(f"widget '{widget}': '{value}' is neither a path (containing '/') nor a "
                      "table name like catalog.schema.table")


def kafka_auth_options(params: Mapping[str, str], secrets: SecretGetter | None) -> dict[str, str]:
    """Kafka SASL settings from the ``secret_scope`` widget's scope (``{}`` without a scope).

    Args:
        params: widget values (``secret_scope``, ``sasl_mechanism``).
        secrets: ``dbutils.secrets.get``; required when ``secret_scope`` is set.

    Returns:
        ``security.protocol``, ``sasl.mechanism`` and ``sasl.jaas.config`` (secret), or ``{}``.
    """
    scope = params.get("secret_scope", "").strip()
    if not scope:
        return {}
    if secrets is None:
        raise ConfigError(f"widget 'secret_scope' is '{scope}' but no secrets getter was given")
    mechanism = params.get("sasl_mechanism", "").strip().upper() or "PLAIN"
    if mechanism not in _LOGIN_MODULES:
        raise ConfigError(f"widget 'sasl_mechanism': '{mechanism}' is not one of "
                          f"{', '.join(sorted(_LOGIN_MODULES))}")
    user, password = secrets(scope, SASL_USERNAME_KEY), secrets(scope, SASL_PASSWORD_KEY)
    if any(c in v for v in (user, password) for c in '"\\'):
        raise ConfigError(f"secret {scope}/{SASL_USERNAME_KEY} or {SASL_PASSWORD_KEY} contains a "
                          "quote or backslash, which a JAAS config cannot hold")
    # The Databricks runtime shades the Kafka client under ``kafkashaded.``.
    module = ("kafkashaded." if on_databricks() else "") + _LOGIN_MODULES[mechanism]
    return {"security.protocol": "SASL_SSL", "sasl.mechanism": mechanism,
            "sasl.jaas.config": f'{module} required username="{user}" password="{password}";'}


def build_config(params: Mapping[str, str], secrets: SecretGetter | None = None) -> PipelineConfig:
    """Map widget values to a validated :class:`PipelineConfig`.

    Args:
        params: widget values, as returned by :func:`read_widgets`.
        secrets: ``dbutils.secrets.get``, used only when ``secret_scope`` is set.

    Returns:
        The frozen config; a bad value raises :class:`ConfigError` naming the widget or key.
    """
    t_path, t_table = _location(params, "target")
    q_path, q_table = _location(params, "quarantine")
    r_path, r_table = _location(params, "quality_results")
    m_path, m_table = _location(params, "run_metrics")
    raw: dict[str, Any] = {
        "name": params["pipeline_name"],
        "source": {"bootstrap_servers": params["bootstrap_servers"],
                   "topics": [t.strip() for t in params["topics"].split(",") if t.strip()],
                   "options": kafka_auth_options(params, secrets)},
        "target": {"path": t_path, "table": t_table,
                   "quarantine_path": q_path, "quarantine_table": q_table},
        "checkpoint": params["checkpoint"],
        "quality": {"docs_dir": params["quality_docs"],
                    "results_path": r_path, "results_table": r_table,
                    "metrics_path": m_path, "metrics_table": m_table,
                    **{k: params[k] for k in (*THRESHOLD_WIDGETS, *CADENCE_WIDGETS)
                       if params.get(k, "").strip()}},
    }
    return parse_config(raw, source="notebook widgets")


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
    from quality.results import read_run_metrics

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


def validate(params: Mapping[str, str], *, spark: SparkSession | None = None) -> ValidationReport:
    """The validate notebook: validate a recorded run (or the whole table); fail on failure.

    Args:
        params: widget values (:data:`VALIDATE_WIDGETS`): ``run_id`` (from the ingest task)
            and/or ``full`` (``true`` validates the whole table).
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
    config, session = build_config(values), spark or get_spark()
    run = load_run(session, config, values["run_id"]) if values["run_id"] else None
    report = validate_table(session, config, full=bool(full), run=run)
    print("\n".join(report.summary_lines()))
    if not report.success:
        raise QualityError("\n".join(report.summary_lines()))
    return report


def maintain(params: Mapping[str, str], *,
             spark: SparkSession | None = None) -> MaintenanceReport:
    """The maintenance notebook: OPTIMIZE, VACUUM, then full-table validation.

    Args:
        params: widget values (:data:`MAINTENANCE_WIDGETS`).
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
    report = run_maintenance(spark or get_spark(), build_config(values), int(hours))
    print("\n".join(report.summary_lines()))
    return report


def _parse(widget: str, value: str, convert: Callable[[str], Any]) -> Any:
    parsed = convert(value.lower())
    if parsed is None:
        raise ConfigError(f"widget '{widget}': '{value}' is not a valid value")
    return parsed
