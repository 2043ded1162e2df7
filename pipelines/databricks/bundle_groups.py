"""Which pipelines share a scheduled job: one job per schedule, pause status and compute.

A scheduled job (ingest, maintenance) runs every pipeline of its group as its own tasks, on the
job's one compute (:mod:`pipelines.databricks.bundle_jobs`). Two pipelines are in the same
group when they agree on everything the job holds for all of them: the schedule
(``databricks.ingest_cron`` or ``maintenance_cron``, else the bundle variable), the schedule's
pause status (``databricks.schedule_pause_status``, else the variable) and the compute
(``databricks.compute``; the job cluster's spec comes from the bundle variables, the same for
every pipeline). Ingest and maintenance are grouped apart, each by its own schedule.

The job's key names the group, not its members, so adding or removing a pipeline never renames
(and so never deletes and recreates) a job:

* ``<kind>_<schedule>[_serverless][_paused|_unpaused]`` for a group made this way, where
  ``<schedule>`` is ``default`` for the bundle variable, ``every_15m`` / ``every_2h`` /
  ``daily_0330`` for the usual Quartz forms, else the cron spelled in ``[A-Za-z0-9_]``;
* ``<group>_<kind>`` for a config that names its group (``databricks.group``): its pipelines
  must then agree on the schedules, pause status and compute, or the bundle fails. Naming the
  group after the pipeline gives it its own jobs (and cluster) under the old keys.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pipelines.databricks.bundle_jobs import BundlePipeline, set_or
from pipelines.errors import ConfigError

#: The scheduled jobs that group pipelines.
Kind = Literal["ingest", "maintenance"]
#: Quartz characters -> what they become in a group's name.
_SPELLING = {" ": "_", "*": "x", "?": "q", "/": "e", ",": "c", "-": "t", "#": "h"}


@dataclass(frozen=True)
class Schedule:
    """What a scheduled job's pipelines share: its cron, pause status and compute.

    ``cron`` and ``paused`` are the config's values, else ``${var.*}`` references.
    """

    cron: str
    paused: str
    serverless: bool
    cron_set: bool
    paused_set: bool

    def slug(self) -> str:
        """The group's name for a job made by this schedule (see the module docstring)."""
        parts = [cron_slug(self.cron) if self.cron_set else "default"]
        if self.serverless:
            parts.append("serverless")
        if self.paused_set:
            parts.append(self.paused.lower())
        return "_".join(parts)


@dataclass(frozen=True)
class Group:
    """A scheduled job's pipelines: its key, its group name and what they share."""

    key: str
    name: str
    schedule: Schedule
    pipelines: tuple[BundlePipeline, ...]


def cron_slug(cron: str) -> str:
    """A Quartz cron as a name: ``every_15m``, ``every_2h``, ``daily_0330``, else spelled out."""
    fields = cron.split()
    sec, minute, hour, dom, month, dow = (fields + [""] * 6)[:6]
    rest_daily = dom in ("*", "?") and month == "*" and dow in ("*", "?") and len(fields) == 6
    step = re.fullmatch(r"[0*]/(\d+)", minute)
    if sec == "0" and step and hour == "*" and rest_daily:
        return f"every_{step.group(1)}m"
    step = re.fullmatch(r"[0*]/(\d+)", hour)
    if sec == "0" and minute == "0" and step and rest_daily:
        return f"every_{step.group(1)}h"
    if sec == "0" and minute.isdigit() and hour.isdigit() and rest_daily:
        return f"daily_{int(hour):02d}{int(minute):02d}"
    spelled = "".join(_SPELLING.get(c, c) for c in " ".join(fields))
    return re.sub(r"[^A-Za-z0-9_]", "", spelled)


def schedule_of(pipeline: BundlePipeline, kind: Kind) -> Schedule:
    """The schedule, pause status and compute of the pipeline's ``kind`` job."""
    settings = pipeline.config.databricks
    cron_set, cron = set_or(settings, f"{kind}_cron", f"{kind}_cron")
    paused_set, paused = set_or(settings, "schedule_pause_status", "schedule_pause_status")
    return Schedule(cron, paused, settings.compute == "serverless", cron_set, paused_set)


def groups(pipelines: Sequence[BundlePipeline], kind: Kind) -> list[Group]:
    """The ``kind`` jobs of ``pipelines``, each with its pipelines in config order.

    Raises:
        ConfigError: the configs naming one ``databricks.group`` disagree on its schedule,
            pause status or compute.
    """
    members: dict[str, list[BundlePipeline]] = {}
    shared: dict[str, tuple[str, Schedule]] = {}
    for pipeline in pipelines:
        schedule = schedule_of(pipeline, kind)
        named = pipeline.config.databricks.group
        name = named if named is not None else schedule.slug()
        key = f"{named}_{kind}" if named is not None else f"{kind}_{name}"
        if key in shared and _shape(shared[key][1]) != _shape(schedule):
            raise ConfigError(
                f"{pipeline.file}: databricks.group '{name}' runs one {kind} job, but its "
                f"{kind} schedule, pause status or compute differs from that of "
                f"{members[key][0].file} ({_shape(schedule)} vs {_shape(shared[key][1])})")
        shared.setdefault(key, (name, schedule))
        members.setdefault(key, []).append(pipeline)
    return [Group(key, shared[key][0], shared[key][1], tuple(found))
            for key, found in members.items()]


def _shape(schedule: Schedule) -> tuple[str, str, str]:
    """What the pipelines of one job must agree on, as the config (or variable) says it."""
    return (schedule.cron, schedule.paused, "serverless" if schedule.serverless else
            "job_cluster")
