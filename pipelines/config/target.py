"""``target:``: the Delta tables the sink writes (the target and its quarantine)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, Field, field_validator, model_validator

from pipelines.config import property_rules, table_properties
from pipelines.config.frozen import FROZEN
from pipelines.config.modes import (
    DEFAULT_DELETE_RETENTION,
    KAFKA_SEQUENCE,
    VERSIONED,
    Mode,
    check_mode,
)
from pipelines.config.units import parse_duration, parse_window
from pipelines.config.window import DATE_COLUMN, DEFAULT_DEDUP_WINDOW, fill_window
from pipelines.storage.tables import TableRef

#: target.dedup_window's bound, in days (its default: pipelines/config/window.py).
MAX_DEDUP_WINDOW_DAYS = 366


class TargetConfig(BaseModel):
    """The Delta tables the sink writes."""

    model_config = FROZEN

    path: str | None = None
    """The target Delta table's folder or URI. Set exactly one of ``path`` and ``table``."""
    table: str | None = None
    """The target as a catalog table name (``catalog.schema.table``)."""
    quarantine_path: str | None = None
    """The quarantine table's folder or URI. Default: the target's location +
    ``_quarantine``."""
    quarantine_table: str | None = None
    """The quarantine as a catalog table name; at most one of ``quarantine_path`` and
    ``quarantine_table``."""
    dedup_key: str | tuple[str, ...] = "event_id"
    """The column, or list of columns, that identifies an event: one row per key. Default: the
    schema's ``key``. It must be a required, non-blank field of the schema."""
    partition_by: tuple[str, ...] = ("event_date",)
    """The target's partition columns; ``event_date`` is the UTC date of the event time. Left
    out with ``cluster_by`` set: none."""
    cluster_by: tuple[str, ...] = ()
    """Liquid clustering columns (Delta's ``CLUSTER BY``), instead of ``partition_by``: what
    Databricks recommends for new tables, streaming ones included. Chosen when the table is
    created; an existing clustered table takes new columns in place (``ALTER TABLE ... CLUSTER
    BY``), a partitioned one is refused. The MERGE still reads only the batch's slice, by the
    files' statistics instead of partition folders (``event_date`` and, with an event-time
    ``dedup_window``, the time field), and maintenance runs ``OPTIMIZE`` (which clusters)
    instead of ``ZORDER BY``. For example ``[event_date, event_id]``."""
    commit_retries: int = Field(10, ge=0)
    """How many times a commit that conflicts with a concurrent writer is retried (the whole
    MERGE, with backoff)."""
    compact_while_streaming: bool = True
    """``--trigger continuous`` only: each batch's target MERGE runs with Delta's
    auto-compaction on, so a date partition is compacted once it holds
    ``spark.databricks.delta.autoCompact.minNumFiles`` (50) small files, and a stream of weeks
    keeps its live files bounded between maintenance runs. Its ``OPTIMIZE`` commits hold no
    ``txn`` and change no data; deltasink's log reader skips them. Scheduled runs leave the
    compaction to the maintenance job."""
    dedup_window: int | timedelta = Field(DEFAULT_DEDUP_WINDOW, validate_default=True)
    """How far apart two rows with one key may be and still count as copies (the later is dropped).

    * **Whole days** (``0d``, ``1d``, ``72h``, or a bare number of days): the MERGE matches
      ``dedup_key`` in any ``event_date`` partition within +-N days of the incoming row's date
      (0: the same date only), and reads those whole partitions: each day costs two more
      partitions per batch date. Needs ``event_date`` in ``partition_by``.
    * **Any other duration** (``1h``, ``15m``, ``36h``): an event-time window. A key matches a
      target row whose time field is at most that far from the incoming row's, on any date, and
      the MERGE reads only the target files whose time statistics reach within the window of the
      batch's events (:mod:`pipelines.sink.event_window`): a slice of a day, not the day.

    A copy whose time moved further than the window lands as a second row, and the run's
    validation fails on it (the key is checked against every date of the table).

    Left out (or null), the default depends on the pipeline (:mod:`pipelines.config.window`):
    ``15m`` for an insert-only pipeline whose schema's time is a field of the event (a retry,
    a replay or a transactional copy is the same record, with the same event time: caught on
    any date, for a slice of the day read per batch); ``1d`` when the schema's time is the
    Kafka timestamp, which every send sets again (``0d`` without ``event_date`` in
    ``partition_by``); ``0d`` with ``mode: upsert``. A window written in the config is kept.
    """
    mode: Mode = "insert_only"
    """``upsert``: keep each key's highest ``sequence_by`` version
    (pipelines/sink/modes/upsert.py); on a change stream (``source.format: debezium``) the
    target is the source table's replica (pipelines/sink/modes/replica.py). ``scd2``: keep
    every version of each key, with ``__START_AT`` and ``__END_AT``
    (pipelines/sink/modes/scd2.py)."""
    sequence_by: str = KAFKA_SEQUENCE
    """``mode: upsert`` or ``scd2`` on an event topic: what orders a key's versions, a required
    schema column or (upsert only) ``kafka`` (the Kafka coordinates). A change stream orders
    them by their source position: leave it out."""
    delete_when: str | None = None
    """``mode: upsert`` or ``scd2`` on an event topic: a Spark SQL boolean over the parsed
    columns; a version for which it is true is a delete (upsert: stored as a tombstone,
    ``_deleted = true``; scd2: it closes the key's open version)."""
    track_history: tuple[str, ...] | None = None
    """``mode: scd2`` only: the columns whose change makes a new version (default: every column
    of the row). A change that alters none of them adds no version: it updates the open
    version's other columns in place."""
    delete_retention: timedelta = DEFAULT_DELETE_RETENTION
    """``mode: upsert`` on a change stream only: how long a deleted key (and a truncate) is
    remembered in the deletes table, so that a late or re-sent older change of it cannot bring
    the row back (a duration: ``7d``, ``36h``). An older change arriving later than this may."""
    deletes_path: str | None = None
    """``mode: upsert`` on a change stream: where the deleted keys are remembered (a Delta
    table). Default: the target's location + ``_deletes``."""
    deletes_table: str | None = None
    """The deletes table as a catalog table name; at most one of ``deletes_path`` and
    ``deletes_table``."""
    changes_path: str | None = None
    """``mode: scd2``: where every change of every key is kept (a Delta table), the history is
    recomputed from it for the keys a batch touches. Default: the target's location +
    ``_changes``."""
    changes_table: str | None = None
    """The changes table as a catalog table name; at most one of ``changes_path`` and
    ``changes_table``."""
    properties: Mapping[str, str] = Field(default_factory=dict)
    """Delta table properties of the target (``delta.enableChangeDataFeed: true``): set at
    creation, and on an existing table with ``ALTER TABLE ... SET TBLPROPERTIES`` when they
    differ. Delta 4.0's keys only (a misspelt one is refused), with values Delta accepts; those
    that would break the sink's guarantees are refused before the run (see *Table properties*
    below). A key removed from here stays on the table as it is."""
    quarantine_properties: Mapping[str, str] = Field(default_factory=dict)
    """The same for the quarantine table (``delta.appendOnly`` is refused there: ``quarantine
    redrive`` marks its rows)."""

    _window = field_validator("dedup_window", mode="before")(parse_window)
    _retention = field_validator("delete_retention", mode="before")(
        lambda v: v if isinstance(v, timedelta) else timedelta(seconds=parse_duration(v)))
    _window_default = model_validator(mode="before")(fill_window)

    @model_validator(mode="before")
    @classmethod
    def _clustered_unpartitioned(cls, raw: Any) -> Any:
        """``cluster_by`` set and ``partition_by`` left out: no partition columns (a table is
        clustered or partitioned, never both)."""
        if isinstance(raw, dict) and raw.get("cluster_by") and "partition_by" not in raw:
            return {**raw, "partition_by": []}
        return raw

    @field_validator("properties", "quarantine_properties", mode="before")
    @classmethod
    def _properties(cls, value: Any) -> Any:
        """Table properties are Delta 4.0's (keys in any case, values as Delta accepts them),
        or free-form keys without the ``delta.`` prefix; Delta's and Spark's refused keys are
        refused (the *Table properties* list)."""
        if not isinstance(value, Mapping):
            return value
        return table_properties.normalize(value)

    @model_validator(mode="after")
    def _one_location(self) -> TargetConfig:
        """Exactly one of ``path`` and ``table``, at most one of each companion table's
        ``_path`` and ``_table``; ``dedup_window`` at most 366 days, and a whole-day window
        needs ``event_date`` in ``partition_by``; ``sequence_by`` and ``delete_when`` only with
        ``mode: upsert`` or ``scd2``, which need ``dedup_window: 0d`` (their default);
        ``track_history`` only with ``scd2``; no table property that breaks a guarantee
        (``delta.appendOnly`` with upserts, SCD2 or on the quarantine, a log or deleted-file
        retention under 168 hours)."""
        if bool(self.path) == bool(self.table):
            raise ValueError("set exactly one of target.path or target.table")
        if self.cluster_by and self.partition_by:
            raise ValueError("set at most one of target.partition_by or target.cluster_by: a "
                             "Delta table is clustered or partitioned, not both")
        for kind in ("quarantine", "deletes", "changes"):
            if getattr(self, f"{kind}_path") and getattr(self, f"{kind}_table"):
                raise ValueError(f"set at most one of target.{kind}_path or "
                                 f"target.{kind}_table")
        if self.delete_retention <= timedelta(0):
            raise ValueError("target.delete_retention must be a positive duration")
        if isinstance(self.dedup_window, int) and not \
                0 <= self.dedup_window <= MAX_DEDUP_WINDOW_DAYS:
            raise ValueError("target.dedup_window must be greater than or equal to 0 and less "
                             f"than or equal to {MAX_DEDUP_WINDOW_DAYS} days, or a duration "
                             "such as 1h")
        if self.time_window is not None and self.time_window > timedelta(
                days=MAX_DEDUP_WINDOW_DAYS):
            raise ValueError("target.dedup_window must be less than or equal to "
                             f"{MAX_DEDUP_WINDOW_DAYS} days")
        if self.date_window and DATE_COLUMN not in self.prune_by:
            raise ValueError(f"target.dedup_window needs '{DATE_COLUMN}' in target.partition_by "
                             "(without it the key is matched across all dates anyway), or a "
                             "clustered table (target.cluster_by); set dedup_window: 0d")
        check_mode(self.mode, self.sequence_by, self.delete_when, self.dedup_window,
                   self.track_history)
        found = [*property_rules.problems(self.properties, "target.properties",
                                          upsert=self.mode in VERSIONED, quarantine=False),
                 *property_rules.problems(self.quarantine_properties,
                                          "target.quarantine_properties", upsert=False,
                                          quarantine=True)]
        if found:
            raise ValueError(found[0])
        return self

    @property
    def prune_by(self) -> tuple[str, ...]:
        """The columns whose batch values bound what the MERGE reads, and which it matches on
        with the key: the partition columns, or ``event_date`` on a clustered table (pruned by
        file statistics instead of folders)."""
        return self.partition_by or ((DATE_COLUMN,) if self.cluster_by else ())

    @property
    def date_window(self) -> int:
        """``dedup_window`` in whole days (0 for an event-time window)."""
        return self.dedup_window if isinstance(self.dedup_window, int) else 0

    @property
    def time_window(self) -> timedelta | None:
        """``dedup_window`` as an event-time window, or None for a whole-day one."""
        return self.dedup_window if isinstance(self.dedup_window, timedelta) else None

    @property
    def dedup_keys(self) -> tuple[str, ...]:
        """The dedup key's columns (one, or several for a composite key)."""
        return (self.dedup_key,) if isinstance(self.dedup_key, str) else self.dedup_key

    @property
    def ref(self) -> TableRef:
        """The target table."""
        return TableRef(path=self.path, name=self.table)

    @property
    def quarantine_ref(self) -> TableRef:
        """The quarantine table (defaults to the target's location + ``_quarantine``)."""
        return self._beside("quarantine")

    @property
    def deletes_ref(self) -> TableRef:
        """A replica's deletes table (defaults to the target's location + ``_deletes``)."""
        return self._beside("deletes")

    @property
    def changes_ref(self) -> TableRef:
        """An SCD2 target's changes table (defaults to the target's location + ``_changes``)."""
        return self._beside("changes")

    def _beside(self, kind: str) -> TableRef:
        path, table = getattr(self, f"{kind}_path"), getattr(self, f"{kind}_table")
        if path or table:
            return TableRef(path=path, name=table)
        if self.table:
            return TableRef(name=f"{self.table}_{kind}")
        return TableRef(path=f"{self.path}_{kind}")
