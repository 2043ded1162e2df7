"""Table maintenance: compact small files, remove old ones, then re-check the whole table.

Why VACUUM keeps at least 168 hours (7 days) of history
-------------------------------------------------------
VACUUM deletes data files that the latest table version no longer references and that are older
than the retention window. Anything that still reads an *older* version breaks once its files
are gone. For this sink that is:

* a micro-batch that is retried after a crash or a commit conflict: its MERGE planned against
  the snapshot it read, possibly hours ago when a job was stuck in retries;
* post-run and full validation, which read a pinned snapshot (``versionAsOf``);
* recovery: when the checkpoint is lost the sink resumes from the offsets recorded in the Delta
  log, and an operator may need ``RESTORE`` / time travel to the version before a bad run, for
  as long as Kafka can replay the data after it (Kafka's default retention is 7 days).

So the window must cover the longest checkpoint/replay horizon: 168 hours matches both Delta's own
safety check (``retentionDurationCheck``, never disabled here) and Kafka's default retention.
Raise it if the topics keep data longer. A table whose ``delta.deletedFileRetentionDuration``
is longer (``target.properties``) is vacuumed keeping that much: Delta's check refuses a VACUUM
that keeps less than the table's own setting. OPTIMIZE only rewrites files in a new version; it may
conflict with a concurrent MERGE, which the sink retries (``target.commit_retries``).

A change stream's replica remembers its deleted keys for ``target.delete_retention``: the
records older than that are removed first (``DELETE``; a pipeline's MERGE that meets it retries).

With an event-time ``target.dedup_window`` the target is compacted ``ZORDER BY`` its time field
into files of at most 32 MiB: a plain OPTIMIZE would mix a day's hours in each file, and the
MERGE, which skips files by their time statistics, would read whole days again.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pyspark.sql import SparkSession

from pipelines import sql
from pipelines.config.model import PipelineConfig
from pipelines.config.property_rules import FILE_RETENTION, RECOVERY_HOURS
from pipelines.config.units import parse_interval
from pipelines.errors import ConfigError, QualityError
from pipelines.sink.modes.replica import purge_deletes
from pipelines.storage.tables import TableRef
from quality.model import ValidationReport

#: The shortest VACUUM retention allowed (see the module docstring): the recovery horizon that
#: the table properties' retentions are held to as well.
MIN_RETAIN_HOURS = RECOVERY_HOURS
#: Delta's OPTIMIZE output file size setting (1 GiB by default).
MAX_FILE_SIZE = "spark.databricks.delta.optimize.maxFileSize"
#: The output file size of a target compacted in event-time order: a file then covers a short
#: slice of a busy day, so an event-time MERGE reads little more than its window. Measured on
#: ``bench.hot_day``'s rows (about 22 bytes a row compressed): 1.5M rows, 43 min of a 50M-row
#: day; wider rows make each file a shorter slice.
SLICE_FILE_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True)
class MaintenanceReport:
    """What one maintenance run did.

    Attributes:
        actions: one line per table operation, e.g. ``OPTIMIZE main.s.orders``.
        validation: the full-table validation report.
    """

    actions: list[str] = field(default_factory=list)
    validation: ValidationReport | None = None

    def summary_lines(self) -> list[str]:
        """The actions, then the validation summary."""
        lines = list(self.actions)
        if self.validation is not None:
            lines += self.validation.summary_lines()
        return lines


def maintained_tables(config: PipelineConfig) -> list[TableRef]:
    """The Delta tables a pipeline writes: target, quarantine, the mode's own (a history's
    changes, a replica's deletes), quality results, run metrics."""
    refs = [config.target.ref, config.target.quarantine_ref,
            *(ref for _, ref in config.companion_tables()),
            config.quality.results_ref, config.quality.metrics_ref]
    unique: list[TableRef] = []
    for ref in refs:
        if ref not in unique:
            unique.append(ref)
    return unique


def time_order(config: PipelineConfig) -> str | None:
    """The column the target is compacted in order of: its time field with an event-time
    ``dedup_window`` (the MERGE then skips files by their time statistics), else None."""
    if config.target.time_window is None:
        return None
    return sql.ident(config.event_schema().time_column)


@contextmanager
def file_size(spark: SparkSession, max_bytes: int | None) -> Iterator[None]:
    """OPTIMIZE's largest output file, for one statement (unchanged when None)."""
    if max_bytes is None:
        yield
        return
    old = spark.conf.get(MAX_FILE_SIZE, None)
    spark.conf.set(MAX_FILE_SIZE, str(max_bytes))
    try:
        yield
    finally:
        if old is None:
            spark.conf.unset(MAX_FILE_SIZE)
        else:
            spark.conf.set(MAX_FILE_SIZE, old)


def optimize_and_vacuum(spark: SparkSession, config: PipelineConfig,
                        retain_hours: int = MIN_RETAIN_HOURS) -> list[str]:
    """Compact (OPTIMIZE) then VACUUM every table the pipeline writes; skip missing ones.

    Args:
        spark: the session.
        config: the pipeline.
        retain_hours: VACUUM retention; at least :data:`MIN_RETAIN_HOURS`.

    Returns:
        One line per operation, in order (``OPTIMIZE <table>``, ``VACUUM <table> RETAIN <n>
        HOURS`` or ``SKIP <table> (does not exist)``).

    Raises:
        ConfigError: ``retain_hours`` is below :data:`MIN_RETAIN_HOURS`.
    """
    if retain_hours < MIN_RETAIN_HOURS:
        raise ConfigError(f"VACUUM retention {retain_hours}h is below the {MIN_RETAIN_HOURS}h "
                          "minimum: older snapshots are still needed for retries, validation "
                          "and recovery (see pipelines/ops/maintenance.py)")
    actions: list[str] = []
    deletes = config.target.deletes_ref
    if ("target.deletes", deletes) in config.companion_tables() and deletes.exists(spark):
        actions.append(purge_deletes(spark, deletes, config.target.delete_retention,
                                     datetime.now(UTC)))
    for ref in maintained_tables(config):
        if not ref.exists(spark):
            actions.append(f"SKIP {ref.describe()} (does not exist)")
            continue
        order = time_order(config) if ref == config.target.ref and \
            not config.target.cluster_by else None  # a clustered table's OPTIMIZE clusters
        with file_size(spark, SLICE_FILE_BYTES if order else None):
            spark.sql(f"OPTIMIZE {ref.sql}{f' ZORDER BY ({order})' if order else ''}").collect()
        actions.append(f"OPTIMIZE {ref.describe()}{f' ZORDER BY {order}' if order else ''}")
        hours = vacuum_hours(spark, ref, retain_hours)
        spark.sql(f"VACUUM {ref.sql} RETAIN {hours} HOURS").collect()
        actions.append(f"VACUUM {ref.describe()} RETAIN {hours} HOURS")
    return actions


def vacuum_hours(spark: SparkSession, ref: TableRef, retain_hours: int) -> int:
    """``retain_hours``, or the table's longer ``delta.deletedFileRetentionDuration`` (whole
    hours, rounded up): Delta refuses a VACUUM that keeps less than the table's setting."""
    properties = ref.detail(spark)["properties"] or {}
    try:
        span = parse_interval(str(properties[FILE_RETENTION]))
    except (KeyError, ValueError):
        return int(retain_hours)
    return max(int(retain_hours), math.ceil(span.total_seconds() / 3600))


def run_maintenance(spark: SparkSession, config: PipelineConfig,
                    retain_hours: int = MIN_RETAIN_HOURS) -> MaintenanceReport:
    """OPTIMIZE and VACUUM, then validate the whole target table (uniqueness included).

    Args:
        spark: the session.
        config: the pipeline.
        retain_hours: VACUUM retention; at least :data:`MIN_RETAIN_HOURS`.

    Returns:
        The actions and the passing validation report.

    Raises:
        ConfigError: ``retain_hours`` is too short.
        QualityError: the full validation failed (its summary is the message).
    """
    from quality.validate import validate_table

    actions = optimize_and_vacuum(spark, config, retain_hours)
    validation = validate_table(spark, config, full=True)
    report = MaintenanceReport(actions=actions, validation=validation)
    if not validation.success:
        raise QualityError("\n".join(report.summary_lines()))
    return report
