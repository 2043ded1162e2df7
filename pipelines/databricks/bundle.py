"""The bundle's jobs, generated from the pipeline configs in ``notebooks/pipelines.d/``.

``databricks.yml`` names :func:`load_resources` in its ``python:`` section; the Databricks CLI
calls it at ``bundle validate`` / ``deploy`` (from the bundle root, in the project's venv).
Every ``*.yml`` config in :data:`CONFIG_DIR` (``*.schema.yml`` files there are schemas beside
them) is loaded and validated as for a local run (a bad config fails the deploy). Pipelines that
share a schedule and compute share the scheduled jobs
(:mod:`pipelines.databricks.bundle_groups`), one task per pipeline on one job cluster or
serverless environment (:mod:`pipelines.databricks.bundle_jobs`):

* an ingest job per group: per pipeline, available-now ingest, then validation of that run;
* a maintenance job per group: per pipeline, OPTIMIZE, VACUUM, full-table validation;
* ``<pipeline>_continuous`` per pipeline: the low-latency variant (same checkpoint; paused by
  default), always on its own job cluster.

Each task passes the notebook the config file itself (its workspace path), so every config key
applies; per-target placement (catalog, schema, volume, bootstrap servers) stays in bundle
variables. Per-job settings come from the config's ``databricks:`` section and ``quality``
thresholds where it sets them, else from the bundle variable of the same purpose. Adding a
pipeline is adding a config file.

``databricks.compute`` picks the scheduled jobs' compute (see
:mod:`pipelines.config.databricks`): one job cluster (dedicated access mode, the wheel as each
task's ``whl`` library), or one serverless environment with the wheel as a dependency, which
each task names with ``environment_key`` (the Jobs API lets a notebook task use a job
environment on serverless compute, so the notebooks need no ``%pip``). The continuous job keeps
its job cluster: serverless streaming only runs ``availableNow`` triggers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from databricks.bundles.core import Bundle, Location, Resources
from databricks.bundles.jobs import Job

from pipelines.config.loader import load_config
from pipelines.databricks import bundle_jobs as jobs_of
from pipelines.databricks.bundle_groups import Kind, groups
from pipelines.databricks.bundle_jobs import BundlePipeline
from pipelines.errors import ConfigError, DeltasinkError

__all__ = ["CONFIG_DIR", "BundlePipeline", "bundle_jobs", "bundle_resources", "load_resources",
           "pipeline_configs"]

#: A scheduled job of a group: ``(group name, pipelines, *, cron, paused, serverless)``.
JobBuilder = Callable[..., dict[str, Any]]
#: The bundle's pipeline configs, relative to the bundle root (``databricks.yml``'s folder).
CONFIG_DIR = "notebooks/pipelines.d"
#: Files of :data:`CONFIG_DIR` that are schemas beside the configs, not pipeline configs.
SCHEMA_SUFFIXES = (".schema.yml", ".schema.yaml")


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


def bundle_jobs(pipelines: Sequence[BundlePipeline]) -> dict[str, dict[str, Any]]:
    """Every job of ``pipelines``, by resource key, as Jobs API dicts with ``${var.*}``.

    One ingest and one maintenance job per group
    (:func:`pipelines.databricks.bundle_groups.groups`), each pipeline its own tasks on the job's
    shared compute, then one continuous job per pipeline.
    Paths (notebooks, the wheel) are relative to the bundle root.

    Raises:
        ConfigError: a named group whose configs disagree, or two jobs with one key.
    """
    jobs: dict[str, dict[str, Any]] = {}
    builders: tuple[tuple[Kind, JobBuilder], ...] = (
        ("ingest", jobs_of.ingest_job), ("maintenance", jobs_of.maintenance_job))
    for kind, build in builders:
        for group in groups(pipelines, kind):
            schedule = group.schedule
            jobs[group.key] = build(group.name, group.pipelines, cron=schedule.cron,
                                    paused=schedule.paused, serverless=schedule.serverless)
    for pipeline in pipelines:
        key = f"{pipeline.key}_continuous"
        if key in jobs:
            raise ConfigError(f"{pipeline.file}: job key {key} is taken by a group's job")
        jobs[key] = jobs_of.continuous_job(pipeline)
    return jobs


def bundle_resources(root: Path) -> Resources:
    """Every pipeline's jobs, checked against the Jobs API model (unknown fields fail)."""
    resources = Resources()  # type: ignore[no-untyped-call]
    location = Location(file=str(root / "databricks.yml"))  # paths are relative to the root
    for key, job in bundle_jobs(pipeline_configs(root)).items():
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
