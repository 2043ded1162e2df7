"""The bundle's job specs: a scheduled job runs a group of pipelines, one task (chain) each.

:mod:`pipelines.databricks.bundle` decides which pipelines share a job
(:mod:`pipelines.databricks.bundle_groups`); this module writes the Jobs API dicts (with
``${var.*}`` references the CLI fills in):

* an ingest job: per pipeline a task ``<p>_ingest`` (available-now; retried) and, after it, a
  task ``<p>_validate`` (that run's validation; never retried);
* a maintenance job: per pipeline a task ``<p>_maintain`` (OPTIMIZE, VACUUM, full validation);
* a continuous job per pipeline: one task ``ingest`` (processing-time trigger), always on its own
  job cluster: serverless streaming runs only ``availableNow`` triggers, and a continuous
  stream holds its cluster for ever, so sharing one would tie the group to it.

No task of one pipeline depends on another's: a failure is retried and reported per pipeline
while the others run on. Every task of a job runs on the job's one compute: its job cluster
(``job_cluster_key``, the wheel as a ``whl`` library) or its serverless environment
(``environment_key``, the wheel as the environment's dependency).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pipelines.config.model import PipelineConfig

#: Where the CLI syncs the bundle's files in the workspace.
WORKSPACE_FILES = "${workspace.file_path}"
_WHEEL = "dist/*.whl"
#: The same wheel as a serverless environment's pip dependency. The leading ``.`` is what tells
#: the CLI a local file (which it builds, uploads and rewrites to its workspace path) from a
#: PyPI requirement.
_WHEEL_DEPENDENCY = f"./{_WHEEL}"
_CLUSTER_KEY = "deltasink"
_ENVIRONMENT_KEY = "deltasink"


@dataclass(frozen=True)
class BundlePipeline:
    """One config of the bundle: its file (relative to the root) and its config."""

    file: str
    config: PipelineConfig

    @property
    def key(self) -> str:
        """The prefix of its jobs' and tasks' keys: the pipeline name, ``[A-Za-z0-9_]`` only."""
        return re.sub(r"[^A-Za-z0-9_]", "_", self.config.name)


def set_or(config: Any, field: str, variable: str) -> tuple[bool, str]:
    """``(True, value)`` when the config section sets ``field``, else ``(False, ${var})``."""
    value = getattr(config, field)
    if field in config.model_fields_set and value is not None:
        return True, str(value)
    return False, f"${{var.{variable}}}"


def _parameters(pipeline: BundlePipeline) -> dict[str, str]:
    """The widgets every task shares: the config file, the placement, the secret scope."""
    scope = pipeline.config.databricks.secret_scope
    return {"config": f"{WORKSPACE_FILES}/{pipeline.file}",
            "catalog": "${var.catalog}", "schema": "${var.schema}", "volume": "${var.volume}",
            "bootstrap_servers": "${var.kafka_bootstrap_servers}",
            "secret_scope": scope if scope is not None else "${var.secret_scope}"}


def _thresholds(config: PipelineConfig) -> tuple[dict[str, str], dict[str, str]]:
    """The threshold widgets (empty where the config sets them) and the health-rule values.

    Health rules need whole numbers: the config's ``max_staleness`` is rounded to seconds.
    """
    quality = config.quality
    widgets: dict[str, str] = {}
    values: dict[str, str] = {}
    for field in ("max_lag_records", "max_staleness"):
        value = getattr(quality, field)
        if field in quality.model_fields_set and value is not None:
            widgets[field], values[field] = "", str(round(value))
        else:
            widgets[field] = values[field] = f"${{var.{field}}}"
    return widgets, values


def _ingest_parameters(pipeline: BundlePipeline, trigger: str) -> dict[str, str]:
    """The ingest notebook's widgets; ``validate_every`` / ``on_failure`` empty where set."""
    config = pipeline.config
    set_here = config.quality.model_fields_set
    return {**_parameters(pipeline), "trigger": trigger, "interval": "10s",
            "validate_every": "" if "validate_every" in set_here else "${var.validate_every}",
            "on_failure": "" if "on_failure" in set_here else "${var.quality_on_failure}",
            **_thresholds(config)[0]}


def _task(key: str, notebook: str, parameters: dict[str, str], *, serverless: bool,
          **extra: Any) -> dict[str, Any]:
    """A notebook task: on the job's serverless environment, or on its job cluster."""
    notebook_task = {"notebook_path": f"notebooks/{notebook}", "base_parameters": parameters}
    if serverless:
        return {"task_key": key, "environment_key": _ENVIRONMENT_KEY,
                "notebook_task": notebook_task, **extra}
    return {"task_key": key, "job_cluster_key": _CLUSTER_KEY, "notebook_task": notebook_task,
            "libraries": [{"whl": _WHEEL}], **extra}


def _compute(serverless: bool) -> dict[str, Any]:
    """The job's serverless environment (the wheel as a dependency), or its job cluster."""
    if serverless:
        return {"environments": [{"environment_key": _ENVIRONMENT_KEY, "spec": {
            "environment_version": "${var.serverless_environment_version}",
            "dependencies": [_WHEEL_DEPENDENCY]}}]}
    return {"job_clusters": [{"job_cluster_key": _CLUSTER_KEY, "new_cluster": {
        "spark_version": "${var.spark_version}", "node_type_id": "${var.node_type_id}",
        "num_workers": "${var.num_workers}", "data_security_mode": "SINGLE_USER"}}]}


def _job(title: str, group: str, pipelines: Sequence[BundlePipeline], description: str, *,
         serverless: bool, **fields: Any) -> dict[str, Any]:
    """A job of ``pipelines``, named after them (one pipeline: ``deltasink <title> (<p>)``)."""
    names = ", ".join(p.config.name for p in pipelines)
    return {"name": f"deltasink {title} ({names})", "description": description,
            "max_concurrent_runs": 1,
            "email_notifications": {"on_failure": ["${var.notification_email}"]},
            "tags": {"project": "deltasink", "group": group}, **_compute(serverless), **fields}


def ingest_job(group: str, pipelines: Sequence[BundlePipeline], *, cron: str, paused: str,
               serverless: bool) -> dict[str, Any]:
    """The scheduled available-now ingest job of a group: per pipeline, ingest then validate.

    Args:
        group: the group's name (the job's ``group`` tag).
        pipelines: its pipelines, in task order.
        cron: the Quartz schedule (a value or a ``${var.*}`` reference).
        paused: the schedule's pause status (likewise).
        serverless: on one serverless environment, else on one job cluster.
    """
    tasks = []
    for pipeline in pipelines:
        ingest = f"{pipeline.key}_ingest"
        tasks += [
            # Safe to retry: commits are idempotent and the run resumes from the checkpoint.
            _task(ingest, "ingest.py", _ingest_parameters(pipeline, "available-now"),
                  serverless=serverless, max_retries=3, min_retry_interval_millis=60000,
                  retry_on_timeout=True, timeout_seconds=3600),
            # A failed expectation is a finding, not a transient error: never retried.
            _task(f"{pipeline.key}_validate", "validate.py",
                  {**_parameters(pipeline), "run_id": f"{{{{tasks.{ingest}.values.run_id}}}}",
                   "full": "false", **_thresholds(pipeline.config)[0]},
                  serverless=serverless, depends_on=[{"task_key": ingest}], max_retries=0,
                  timeout_seconds=1800)]
    job = _job(
        "ingest", group, pipelines,
        "Available-now ingest of Kafka into Delta (exactly once), then validation of the run, "
        "per pipeline: each pipeline's tasks fail and retry alone. A quality failure fails its "
        "validate task and is not retried; ingest failures are.",
        serverless=serverless, timeout_seconds=5400,
        schedule={"quartz_cron_expression": cron, "timezone_id": "UTC", "pause_status": paused},
        health={"rules": [{"metric": "RUN_DURATION_SECONDS", "op": "GREATER_THAN",
                           "value": 3600}]},
        tasks=tasks)
    job["email_notifications"]["on_duration_warning_threshold_exceeded"] = [
        "${var.notification_email}"]
    return job


def maintenance_job(group: str, pipelines: Sequence[BundlePipeline], *, cron: str, paused: str,
                    serverless: bool) -> dict[str, Any]:
    """The scheduled maintenance job of a group: one ``<p>_maintain`` task per pipeline."""
    return _job(
        "maintenance", group, pipelines,
        "OPTIMIZE and VACUUM (retention >= 168h) of the target, quarantine, quality-results "
        "and run-metrics tables, then full-table validation (key uniqueness included), per "
        "pipeline.",
        serverless=serverless, timeout_seconds=14400,
        schedule={"quartz_cron_expression": cron, "timezone_id": "UTC", "pause_status": paused},
        tasks=[_task(f"{p.key}_maintain", "maintenance.py",
                     {**_parameters(p), "retain_hours": "${var.vacuum_retain_hours}"},
                     serverless=serverless,
                     # OPTIMIZE can lose a race with a concurrent MERGE; one retry is enough.
                     max_retries=1, min_retry_interval_millis=300000, timeout_seconds=10800)
               for p in pipelines])


def continuous_job(pipeline: BundlePipeline) -> dict[str, Any]:
    """The pipeline's own continuous (processing-time) ingest job, on its own job cluster.

    The same checkpoint as the scheduled ingest: unpause at most one of the two. Databricks
    restarts a failed continuous run itself, with backoff, so no task retries.
    """
    _, paused = set_or(pipeline.config.databricks, "continuous_pause_status",
                       "continuous_pause_status")
    limits = _thresholds(pipeline.config)[1]
    job = _job(
        "continuous ingest", pipeline.key, [pipeline],
        "Continuous (processing-time trigger) ingest of Kafka into Delta, validated every "
        "quality.validate_every against the same thresholds as its health rules.",
        serverless=False, continuous={"pause_status": paused},
        health={"rules": [
            {"metric": "STREAMING_BACKLOG_RECORDS", "op": "GREATER_THAN",
             "value": limits["max_lag_records"]},
            {"metric": "STREAMING_BACKLOG_SECONDS", "op": "GREATER_THAN",
             "value": limits["max_staleness"]}]},
        tasks=[_task("ingest", "ingest.py", _ingest_parameters(pipeline, "continuous"),
                     serverless=False)])
    job["email_notifications"]["on_streaming_backlog_exceeded"] = ["${var.notification_email}"]
    job["tags"] = {"project": "deltasink", "pipeline": pipeline.config.name}
    return job
