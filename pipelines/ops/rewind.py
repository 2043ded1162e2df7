"""``deltasink rewind``: restore the target (and quarantine) to a version, then re-ingest.

The target is restored with Delta's RESTORE. Its log then says the input stopped where version
V's commit said, because :mod:`pipelines.ledger.state` ignores commits a RESTORE undid. RESTORE
does not roll back Delta's txn versions, so the streaming checkpoint is retired as well: the next
run gets a new query id, hence a new txn app id whose batch ids are not skipped, and it resumes
from the offsets recorded at V. The quarantine table is restored to its newest version committed
at or before V's commit; its MERGE is insert-only on Kafka coordinates, so re-ingesting cannot
duplicate a quarantined record even where the two points do not line up exactly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from pyspark.sql import SparkSession

from pipelines.config.model import PipelineConfig
from pipelines.errors import (
    CommitError,
    ConfigError,
    OwnClientUnavailable,
    SourceError,
    failure_line,
)
from pipelines.kafka import topics
from pipelines.ledger import checkpoint, state
from pipelines.ledger.single_writer import single_writer
from pipelines.storage.tables import TableRef

Offsets = dict[str, dict[int, int]]


@dataclass(frozen=True)
class RewindPlan:
    """What a rewind does: versions before and after, and where the next run resumes."""

    target_now: int
    target_to: int
    quarantine_now: int | None
    quarantine_to: int | None
    resume_from: Offsets | None
    recorded_now: Offsets | None
    checkpoint: str

    def lines(self) -> list[str]:
        """The plan, one line per fact."""
        out = [f"target      version {self.target_now} -> {self.target_to}"]
        if self.quarantine_now is not None:
            out.append(f"quarantine  version {self.quarantine_now} -> {self.quarantine_to}")
        if not self.resume_from:
            out.append("offsets     none recorded at that version: the next run starts at "
                       "source.starting_offsets")
        for topic, parts in sorted((self.resume_from or {}).items()):
            for part, offset in sorted(parts.items()):
                now = (self.recorded_now or {}).get(topic, {}).get(part, offset)
                out.append(f"offsets     {topic}[{part}] resume at {offset} "
                           f"(re-reads {max(0, now - offset)} records)")
        out.append(f"checkpoint  {self.checkpoint} is retired (kept; the next run starts a fresh "
                   "one beside it)")
        return out


def _versions(spark: SparkSession, ref: TableRef) -> list[tuple[int, datetime]]:
    rows = ref.history(spark).select("version", "timestamp").collect()
    return sorted((int(r["version"]), r["timestamp"]) for r in rows)


def _at_or_before(versions: list[tuple[int, datetime]], when: datetime) -> int | None:
    older = [v for v, ts in versions if ts <= when]
    return older[-1] if older else None


def plan_rewind(spark: SparkSession, config: PipelineConfig, *, to_version: int | None = None,
                to_timestamp: str | None = None) -> RewindPlan:
    """Work out a rewind without changing anything.

    Raises:
        ConfigError: the version or timestamp is not one of the target's.
        SourceError: Kafka retention deleted offsets the re-ingest would need.
    """
    target, quarantine = config.target.ref, config.target.quarantine_ref
    if not target.exists(spark):
        raise ConfigError(f"target {target.describe()} does not exist yet; nothing to rewind.")
    versions = _versions(spark, target)
    stamps = dict(versions)
    now = versions[-1][0]
    if to_timestamp is not None:
        try:
            when = datetime.fromisoformat(to_timestamp)
        except ValueError:
            raise ConfigError(f"--to-timestamp {to_timestamp!r} is not a timestamp; use e.g. "
                              "2026-11-23T09:38:15 (the session's time zone).") from None
        if when.tzinfo is not None:  # history timestamps are naive, in local time
            when = when.astimezone().replace(tzinfo=None)
        found = _at_or_before(versions, when)
        if found is None:
            raise ConfigError(f"--to-timestamp {to_timestamp} is before the first version of "
                              f"{target.describe()} ({versions[0][1]}); pick a later time.")
        to_version = found
    if to_version is None or to_version not in stamps:
        raise ConfigError(f"--to-version {to_version} is not a version of {target.describe()} "
                          f"(it has {versions[0][0]}..{now}); see `deltasink status`.")
    resume = state.recorded_offsets(spark, target, config.name, as_of=to_version)
    try:
        gone = topics.deleted_offsets(spark, config.source, resume or {})
    except OwnClientUnavailable as exc:  # rolling back past deleted records would lose rows
        raise SourceError(f"cannot rewind to version {to_version}: whether Kafka still has the "
                          "records it would re-read is asked with deltasink's own Kafka client, "
                          f"which is unavailable for {exc}; nothing was changed.") from None
    if gone:
        where = ", ".join(f"{t}[{p}] offsets {nxt}..{low - 1}"
                          for (t, p), (nxt, low) in sorted(gone.items()))
        raise SourceError(f"cannot rewind to version {to_version}: Kafka retention already "
                          f"deleted records it would re-read ({where}); pick a later version.")
    q_now = q_to = None
    if quarantine.exists(spark):
        q_versions = _versions(spark, quarantine)
        q_now = q_versions[-1][0]
        q_to = _at_or_before(q_versions, stamps[to_version])
    return RewindPlan(now, to_version, q_now, q_to, resume,
                      state.recorded_offsets(spark, target, config.name), config.checkpoint)


def _restore(spark: SparkSession, ref: TableRef, version: int) -> None:
    try:
        ref.restore(spark, version)
    except Exception as exc:
        first = failure_line(exc)
        raise CommitError(f"RESTORE of {ref.describe()} to version {version} failed ({first}); "
                          "its files may have been vacuumed. Pick a later version.") from None


def rewind(spark: SparkSession, config: PipelineConfig, *, to_version: int | None = None,
           to_timestamp: str | None = None, dry_run: bool = False,
           say: Callable[[str], None] = print) -> RewindPlan:
    """Restore the target and quarantine to a version and retire the checkpoint.

    Args:
        spark: the session.
        config: the pipeline config.
        to_version: the target version to go back to.
        to_timestamp: or the version current at this time.
        dry_run: print the plan and change nothing.
        say: receives the output lines.

    Raises:
        ConfigError: the version or timestamp is not one of the target's.
        SourceError: Kafka retention deleted offsets the re-ingest would need.
        CheckpointError: the pipeline is running (it holds the checkpoint's lock).
    """
    plan = plan_rewind(spark, config, to_version=to_version, to_timestamp=to_timestamp)
    say(("dry run: would rewind " if dry_run else "rewinding ") + f"pipeline {config.name}")
    for line in plan.lines():
        say(line)
    if dry_run:
        return plan
    with single_writer(spark, config.checkpoint, config.name):  # refuse while a run is active
        current = checkpoint.active(spark, config.checkpoint)
        existed = checkpoint.has_state(spark, current)
        if plan.target_to != plan.target_now:
            _restore(spark, config.target.ref, plan.target_to)
        if plan.quarantine_to is not None and plan.quarantine_to != plan.quarantine_now:
            _restore(spark, config.target.quarantine_ref, plan.quarantine_to)
        fresh = checkpoint.retire(spark, config.checkpoint, f"rewind to version "
                                  f"{plan.target_to}") if existed else ""
    say(f"checkpoint {current} retired; the next run starts at {fresh}" if fresh
        else "no checkpoint to retire")
    return plan
