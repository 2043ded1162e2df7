"""The bundle's jobs, generated from the pipeline configs in ``notebooks/pipelines.d/``.

``databricks.yml`` names :func:`load_resources` in its ``python:`` section; the Databricks CLI
calls it at ``bundle validate`` / ``deploy`` (from the bundle root, in the project's venv).
Every ``*.yml`` config in :data:`CONFIG_DIR` (``*.schema.yml`` files there are schemas beside
them) is loaded and validated as for a local run (a bad config fails the deploy) and gets the
same set of jobs:

* ``<pipeline>_ingest``: available-now ingest, then validation of the run (scheduled);
* ``<pipeline>_maintenance``: OPTIMIZE, VACUUM, full-table validation (scheduled);
* ``<pipeline>_continuous``: the low-latency variant (same checkpoint; paused by default).

Each task passes the notebook the config file itself (its workspace path), so every config key
applies; per-target placement (catalog, schema, volume, bootstrap servers) stays in bundle
variables. Per-job settings come from the config's ``databricks:`` section and ``quality``
thresholds where it sets them, else from the bundle variable of the same purpose. Adding a
pipeline is adding a config file.

``databricks.compute`` picks the jobs' compute (see :mod:`pipelines.config.databricks`):

* ``job_cluster``: each job has one job cluster (dedicated access mode), each task runs on it
  with the wheel as a ``whl`` library;
* ``serverless``: the two scheduled jobs have no cluster and no libraries but one serverless
  environment (``environments``) with the wheel as a dependency, which each task names with
  ``environment_key``. The Jobs API lets a notebook task use a job environment on serverless
  compute (it overrides the notebook's own environment), so the notebooks need no ``%pip``.
  The continuous job keeps its job cluster: serverless streaming only runs ``availableNow``
  triggers, and the continuous job's is a processing-time trigger.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from databricks.bundles.core import Bundle, Location, Resources
from databricks.bundles.jobs import Job

from pipelines.config.loader import load_config
from pipelines.config.model import PipelineConfig
from pipelines.errors import ConfigError, DeltasinkError

#: The bundle's pipeline configs, relative to the bundle root (``databricks.yml``'s folder).
CONFIG_DIR = "notebooks/pipelines.d"
#: Files of :data:`CONFIG_DIR` that are schemas beside the configs, not pipeline configs.
SCHEMA_SUFFIXES = (".schema.yml", ".schema.yaml")
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
    """One config of :data:`CONFIG_DIR`: its file (relative to the root) and its config."""

    file: str
    config: PipelineConfig

    @property
    def key(self) -> str:
        """The prefix of its jobs' resource keys: the pipeline name, ``[A-Za-z0-9_]`` only."""
        return re.sub(r"[^A-Za-z0-9_]", "_", self.config.name)


def pipeline_configs(root: Path) -> list[BundlePipeline]:
    """Load every pipeline config of the bundle (without environment overrides).

    Every ``*.yml`` / ``*.yaml`` file of :data:`CONFIG_DIR` is a config, except schema files
    kept beside them (``*.schema.yml``).

    Raises:
        ConfigError: an invalid config, no config at all, or two with the same job keys.
    """
    files = sorted(p for p in (root / CONFIG_DIR).glob("*") if p.suffix in (".yml", ".yaml")
                   and not p.name.endswith(SCHEMA_SUFFIXES))
    if not files:
        raise ConfigError(f"no pipeline config (*.yml) in {root / CONFIG_DIR}")
    pipelines = [BundlePipeline(f.relative_to(root).as_posix(), load_config(f, environ={}))
                 for f in files]
    keys = [p.key for p in pipelines]
    if len(set(keys)) != len(keys):
        raise ConfigError(f"{CONFIG_DIR}: two configs share a pipeline name: {sorted(keys)}")
    return pipelines


def _set_or(config: Any, field: str, variable: str) -> tuple[bool, str]:
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


def _cadence(config: PipelineConfig) -> dict[str, str]:
    """``validate_every`` / ``on_failure`` widgets: empty where the config sets them."""
    set_here = config.quality.model_fields_set
    return {"validate_every": "" if "validate_every" in set_here else "${var.validate_every}",
            "on_failure": "" if "on_failure" in set_here else "${var.quality_on_failure}"}


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


def _job(pipeline: BundlePipeline, title: str, description: str, *, serverless: bool,
         **fields: Any) -> dict[str, Any]:
    return {"name": f"deltasink {title} ({pipeline.config.name})", "description": description,
            "max_concurrent_runs": 1,
            "email_notifications": {"on_failure": ["${var.notification_email}"]},
            "tags": {"project": "deltasink", "pipeline": pipeline.config.name},
            **_compute(serverless), **fields}


def pipeline_jobs(pipeline: BundlePipeline) -> dict[str, dict[str, Any]]:
    """The pipeline's three jobs, by resource key, as Jobs API dicts with ``${var.*}``.

    Paths (notebooks, the wheel) are relative to the bundle root. With ``databricks.compute``
    ``serverless`` the two scheduled jobs run on serverless compute; the continuous job always
    keeps its job cluster (its processing-time trigger does not run on serverless).
    """
    config, common = pipeline.config, _parameters(pipeline)
    settings = config.databricks
    serverless = settings.compute == "serverless"
    widgets, limits = _thresholds(config)
    _, ingest_cron = _set_or(settings, "ingest_cron", "ingest_cron")
    _, maintenance_cron = _set_or(settings, "maintenance_cron", "maintenance_cron")
    _, paused = _set_or(settings, "schedule_pause_status", "schedule_pause_status")
    _, continuous_paused = _set_or(settings, "continuous_pause_status",
                                   "continuous_pause_status")
    ingest = {**common, "trigger": "available-now", "interval": "10s", **_cadence(config),
              **widgets}
    ingest_job = _job(
        pipeline, "ingest",
        "Available-now ingest of Kafka into Delta (exactly once), then validation of the run. "
        "A quality failure fails the validate task and is not retried; ingest failures are.",
        serverless=serverless, timeout_seconds=5400,
        schedule={"quartz_cron_expression": ingest_cron, "timezone_id": "UTC",
                  "pause_status": paused},
        health={"rules": [{"metric": "RUN_DURATION_SECONDS", "op": "GREATER_THAN",
                           "value": 3600}]},
        tasks=[
            # Safe to retry: commits are idempotent and the run resumes from the checkpoint.
            _task("ingest", "ingest.py", ingest, serverless=serverless, max_retries=3,
                  min_retry_interval_millis=60000, retry_on_timeout=True, timeout_seconds=3600),
            # A failed expectation is a finding, not a transient error: never retried.
            _task("validate", "validate.py",
                  {**common, "run_id": "{{tasks.ingest.values.run_id}}", "full": "false",
                   **widgets},
                  serverless=serverless, depends_on=[{"task_key": "ingest"}], max_retries=0,
                  timeout_seconds=1800),
        ])
    ingest_job["email_notifications"]["on_duration_warning_threshold_exceeded"] = [
        "${var.notification_email}"]
    maintenance_job = _job(
        pipeline, "maintenance",
        "OPTIMIZE and VACUUM (retention >= 168h) of the target, quarantine, quality-results "
        "and run-metrics tables, then full-table validation (key uniqueness included).",
        serverless=serverless, timeout_seconds=14400,
        schedule={"quartz_cron_expression": maintenance_cron, "timezone_id": "UTC",
                  "pause_status": paused},
        tasks=[_task("maintain", "maintenance.py",
                     {**common, "retain_hours": "${var.vacuum_retain_hours}"},
                     serverless=serverless,
                     # OPTIMIZE can lose a race with a concurrent MERGE; one retry is enough.
                     max_retries=1, min_retry_interval_millis=300000, timeout_seconds=10800)])
    # The same checkpoint as the ingest job: unpause at most one of the two. Databricks
    # restarts a failed continuous run itself, with backoff, so no task retries. Always on a job
    # cluster: serverless streaming runs only availableNow triggers, not this processing time.
    continuous_job = _job(
        pipeline, "continuous ingest",
        "Continuous (processing-time trigger) ingest of Kafka into Delta, validated every "
        "quality.validate_every against the same thresholds as its health rules.",
        serverless=False, continuous={"pause_status": continuous_paused},
        health={"rules": [
            {"metric": "STREAMING_BACKLOG_RECORDS", "op": "GREATER_THAN",
             "value": limits["max_lag_records"]},
            {"metric": "STREAMING_BACKLOG_SECONDS", "op": "GREATER_THAN",
             "value": limits["max_staleness"]}]},
        tasks=[_task("ingest", "ingest.py", {**ingest, "trigger": "continuous"},
                     serverless=False)])
    continuous_job["email_notifications"]["on_streaming_backlog_exceeded"] = [
        "${var.notification_email}"]
    return {f"{pipeline.key}_ingest": ingest_job,
            f"{pipeline.key}_maintenance": maintenance_job,
            f"{pipeline.key}_continuous": continuous_job}


def bundle_resources(root: Path) -> Resources:
    """Every pipeline's jobs, checked against the Jobs API model (unknown fields fail)."""
    resources = Resources()  # type: ignore[no-untyped-call]
    location = Location(file=str(root / "databricks.yml"))  # paths are relative to the root
    for pipeline in pipeline_configs(root):
        for key, job in pipeline_jobs(pipeline).items():
            resources.add_job(key, Job.from_dict(job), location=location)  # type: ignore[arg-type]
    return resources


def load_resources(bundle: Bundle) -> Resources:
    """The CLI's entry point (``python.resources`` in ``databricks.yml``); runs in the root.

    A config that does not load becomes one diagnostic error with the loader's message (no
    Python traceback), which fails ``bundle validate`` / ``deploy``.

    Args:
        bundle: the target being deployed (unused: targets differ only in variables).

    Returns:
        The jobs of every pipeline config, or the error.
    """
    try:
        return bundle_resources(Path.cwd())
    except DeltasinkError as exc:
        failed = Resources()  # type: ignore[no-untyped-call]
        failed.add_diagnostic_error(str(exc))
        return failed
