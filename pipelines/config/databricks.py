"""The config's ``databricks:`` section: how the bundle deploys this pipeline's jobs.

A local run ignores the section. The bundle (``pipelines/databricks/bundle.py``) reads it for the
per-job settings, each falling back to the bundle variable of the same purpose when left out, and
the notebooks read ``secrets`` to fetch the pipeline's secrets from a Databricks secret scope.

``compute`` says what the pipeline's jobs run on (it has no bundle variable: it changes the
jobs' shape, which the bundle's Python code decides before the CLI fills in variables):

* ``job_cluster`` (the default): every task on a new classic job cluster in dedicated
  (``SINGLE_USER``) access mode, the deltasink wheel installed as a task library; the cluster
  comes from the bundle variables ``spark_version``, ``node_type_id`` and ``num_workers``.
* ``serverless``: the scheduled jobs (ingest + validate, maintenance) run on serverless compute,
  the wheel installed through the job's serverless environment (``environments``, version
  ``var.serverless_environment_version``); no cluster, no libraries. The notebooks then get a
  Spark Connect ``spark``. The continuous job keeps its job cluster: serverless streaming runs
  only ``availableNow`` triggers, and that job's processing-time trigger is not one.

The default stays ``job_cluster`` so that a config written before this key deploys the same jobs
as before: serverless compute is a different runtime (Spark Connect, ANSI SQL on) on a different
network (Databricks' own, where a broker inside the workspace's VPC may not be reachable), so
moving to it is a choice made per pipeline, in one line.

``group`` says which scheduled jobs the pipeline runs in. Left out, pipelines with the same
schedule, pause status and compute share one ingest and one maintenance job (one task chain per
pipeline, one cluster or serverless environment: one cold start for all of them). A name puts the
pipeline in the jobs ``<group>_ingest`` / ``<group>_maintenance`` with every config naming it;
naming it after the pipeline gives the pipeline jobs and a cluster of its own, under the keys it
had before jobs were grouped (see :mod:`pipelines.databricks.bundle_groups`).

``secrets`` maps a config override's environment-variable name (see
:mod:`pipelines.config.env`) to the key holding its value in the scope, so a secret is named
exactly as it is locally::

    databricks:
      secret_scope: kafka-prod
      secrets:
        DELTASINK_SOURCE__OPTIONS__SASL_JAAS_CONFIG: orders-jaas-config
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from pipelines.config import env

PauseStatus = Literal["PAUSED", "UNPAUSED"]
#: What a pipeline's jobs run on (see the module docstring).
Compute = Literal["serverless", "job_cluster"]
#: A Quartz cron expression has 6 or 7 fields.
_QUARTZ = re.compile(r"^\S+(\s+\S+){5,6}$")
#: A group name becomes part of job keys: letters, digits and ``_``.
_GROUP = re.compile(r"^[A-Za-z0-9_]{1,64}$")
#: A secret scope's key: letters, digits, ``-``, ``_`` and ``.`` (Databricks' rule).
_SECRET_KEY = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


class DatabricksConfig(BaseModel):
    """Per-pipeline job settings for the bundle; None: the bundle variable's value."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    compute: Compute = "job_cluster"
    """``job_cluster`` (classic, dedicated access mode) or ``serverless`` (the scheduled jobs;
    the continuous job stays on a job cluster). Not a bundle variable: it shapes the jobs."""
    ingest_cron: str | None = None
    """Quartz cron of the available-now ingest job (UTC); default ``var.ingest_cron``."""
    maintenance_cron: str | None = None
    """Quartz cron of the maintenance job (UTC); default ``var.maintenance_cron``."""
    schedule_pause_status: PauseStatus | None = None
    """Of the two scheduled jobs; default ``var.schedule_pause_status``."""
    continuous_pause_status: PauseStatus | None = None
    """Of the continuous ingest job; default ``var.continuous_pause_status``."""
    group: str | None = None
    """The scheduled jobs this pipeline's tasks run in. Left out: those shared by every pipeline
    with the same schedule, pause status and compute. A name (letters, digits, ``_``): the jobs
    ``<group>_ingest`` / ``<group>_maintenance`` of the configs naming it, on their own cluster
    (the pipeline's name keeps it alone, under its pre-grouping job keys)."""
    secret_scope: str | None = None
    """The scope ``secrets`` are read from; default ``var.secret_scope``."""
    secrets: Mapping[str, str] = Field(default_factory=dict)
    """Config override variable (``DELTASINK_SOURCE__OPTIONS__SASL_JAAS_CONFIG``) -> the key
    of its value in the secret scope."""

    @field_validator("ingest_cron", "maintenance_cron")
    @classmethod
    def _quartz(cls, value: str | None) -> str | None:
        """``ingest_cron`` and ``maintenance_cron`` are Quartz cron expressions (6 or 7 fields)."""
        if value is not None and not _QUARTZ.match(value.strip()):
            raise ValueError("not a Quartz cron expression (6 or 7 fields, e.g. '0 0/15 * * * ?')")
        return value

    @field_validator("group")
    @classmethod
    def _group_name(cls, value: str | None) -> str | None:
        """``group`` is 1-64 letters, digits or ``_`` (it becomes part of the job keys)."""
        if value is not None and not _GROUP.match(value):
            raise ValueError("a group name is 1-64 letters, digits or '_' (it names the jobs)")
        return value

    @field_validator("secrets")
    @classmethod
    def _override_names(cls, value: Mapping[str, str]) -> Mapping[str, str]:
        """``secrets`` maps config override names (``DELTASINK_<SECTION>__<KEY>``) to secret keys
        of 1-128 letters, digits, ``-``, ``_`` or ``.``."""
        for var, key in value.items():
            if env.override_path(var) is None:
                raise ValueError(f"'{var}' is not a config override name "
                                 "(DELTASINK_<SECTION>__<KEY>[__<KEY>...])")
            if not isinstance(key, str) or not _SECRET_KEY.match(key):
                raise ValueError(f"secret key for {var} must be 1-128 letters, digits, '-', "
                                 "'_' or '.'")
        return value
