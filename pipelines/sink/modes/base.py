"""The write-mode seam: everything a ``target.mode`` decides, from a batch's survivors to its
expectations.

A mode is one strategy object (:class:`WriteMode`), chosen once per pipeline
(:func:`pipelines.sink.modes.choice.mode_for`). The batch asks it which copy of a key survives
(:meth:`~WriteMode.survivor_order`, and, for a mode that keeps several versions of a key,
:meth:`~WriteMode.groups`), which columns it adds (:meth:`~WriteMode.flag`), what it counts;
the tables ask it for the target's schema and its checks; the commit asks it for the MERGE; the
quality suite asks it what the target must satisfy. A new mode is a new module, not a branch in
each of those places.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql.types import StructType

from pipelines import sql
from pipelines.config.model import DATE_COLUMN, PipelineConfig
from pipelines.sink.event_window import Span
from pipelines.sink.merge import MergeOutcome
from pipelines.storage.tables import TableRef
from schemas.base import EventSchema


@dataclass(frozen=True)
class BatchRows:
    """A batch's survivors, as the target's commits receive them.

    Attributes:
        rows: the survivors as target rows (with the mode's :meth:`WriteMode.source_columns`).
        values: partition column -> the distinct values in ``rows``.
        spans: with an event-time window, the time ranges the MERGE reads (else None).
        keys: the key's columns (a change stream's: learned from its records).
        observed: what the batch's job observed (the mode's own :meth:`WriteMode.metrics`).
        key_range: the lowest and highest value of the key's first column in ``rows``, or
            None (every key read).
    """

    rows: DataFrame
    values: dict[str, list[object]]
    spans: Sequence[Span] | None
    keys: tuple[str, ...]
    observed: Mapping[str, Any] = field(default_factory=dict)
    key_range: tuple[Any, Any] | None = None

    def keyed(self) -> str | None:
        """``t.<key> BETWEEN low AND high`` over the key's first column, or None.

        A target row outside the batch's own key range cannot equal a batch row's key, so the
        bound drops no match, and Delta skips every file whose statistics lie outside it.
        """
        if self.key_range is None or not self.keys:
            return None
        return sql.between("t", self.keys[0], *self.key_range)


@dataclass(frozen=True)
class SideWrite:
    """A commit of the batch before the target's, on a table of the mode's own (a replica's
    remembered deletes, a history's changes). Each runs in the batch's txn (its app id and
    batch id, on its own table), so a replayed batch skips it as it skips the target's.

    Attributes:
        ref: the table.
        what: the MERGE's name in a commit error.
        write: the MERGE, to run inside the txn.
    """

    ref: TableRef
    what: str
    write: Callable[[], MergeOutcome]


@dataclass(frozen=True)
class Expectations:
    """What a mode asks of its target table, beyond the schema's own columns and required
    fields (``quality/suites.py`` turns these into Great Expectations expectations).

    Attributes:
        unique: column tuples that no two rows may share (one column: unique and not null).
        exists: columns the mode adds, which must be in the table.
        not_null: more columns that may never be null.
        intervals: (start, end) columns of per-key intervals that may not overlap (an SCD2
            history's ``__START_AT`` and ``__END_AT``), or None.
    """

    unique: tuple[tuple[str, ...], ...] = ()
    exists: tuple[str, ...] = ()
    not_null: tuple[str, ...] = ()
    intervals: tuple[str, str] | None = None


class WriteMode:
    """One target mode. Subclasses set :attr:`name` and override what differs.

    Attributes:
        config: the pipeline config.
    """

    #: The ``target.mode`` value.
    name: ClassVar[str] = ""
    #: What the target's MERGE is called in a commit error.
    merge_kind: ClassVar[str] = "MERGE"
    #: Whether the target's MERGE only inserts (its write needs no repartition by partition
    #: column first: :func:`pipelines.sink.merge.merge_settings`).
    inserts_only: ClassVar[bool] = False
    #: Whether validation reads the whole target, not the batch's dates (a key's versions
    #: span dates, and ``event_date`` need not be a partition column).
    whole_table: ClassVar[bool] = False

    def __init__(self, config: PipelineConfig) -> None:
        self.config = config
        self.target = config.target

    # The batch (pipelines/sink/prepare.py)

    def survivor_order(self) -> list[Column]:
        """The order of a key's copies in a batch: the first one survives (a total order, so a
        replayed batch keeps the same row)."""
        raise NotImplementedError

    def groups(self) -> tuple[str, ...]:
        """Columns that, with the key, group a batch's copies (none: one survivor per key)."""
        return ()

    def flag(self, kept: DataFrame, good: Column) -> DataFrame:
        """The survivors with the mode's own columns, set on the ``good`` rows."""
        return kept

    def source_columns(self) -> tuple[str, ...]:
        """The columns :meth:`flag` adds that the target MERGE's source keeps."""
        return ()

    def metrics(self) -> list[Column]:
        """More counts to observe on the batch's one job."""
        return []

    def counts(self, got: Mapping[str, Any]) -> dict[str, int]:
        """The commit's counts from :meth:`metrics`' observed values."""
        return {}

    # The tables (pipelines/sink/tables.py)

    def target_schema(self, base: StructType) -> StructType:
        """The target's columns: the schema's (``base``) and the mode's."""
        return base

    def check(self, spark: SparkSession, schema: EventSchema) -> None:
        """Refuse settings that only the schema and a session can judge (one ConfigError)."""

    def added_columns(self) -> tuple[tuple[str, str], ...]:
        """(name, SQL type) of the mode's columns that a target written in another mode lacks:
        added to it before it is checked."""
        return ()

    def companions(self, base: StructType) -> list[tuple[TableRef, StructType]]:
        """The mode's own tables beside the target, with their columns at creation."""
        return []

    # The write (pipelines/sink/target_merge.py)

    def before_merge(self, spark: SparkSession, batch: BatchRows) -> None:
        """Table changes the batch needs before any of its commits (a change stream's new
        columns), each its own commit outside the batch's txn."""

    def side_writes(self, batch: BatchRows) -> list[SideWrite]:
        """The batch's commits before the target's (none here)."""
        return []

    def merge(self, batch: BatchRows) -> Callable[[], MergeOutcome]:
        """The target's MERGE of a batch's survivors, to run inside the commit's txn."""
        raise NotImplementedError

    # The proof (quality/suites.py)

    def expectations(self, schema: EventSchema) -> Expectations:
        """What the target must satisfy after every run."""
        return Expectations()


def key_uniqueness(keys: tuple[str, ...], partition_by: tuple[str, ...]
                   ) -> tuple[tuple[str, ...], ...]:
    """The key, and the key with ``event_date`` where that is a partition column the key lacks
    (also checked per partition)."""
    if not keys:  # a change stream's, before its first batch
        return ()
    if DATE_COLUMN in partition_by and DATE_COLUMN not in keys:
        return (keys, (*keys, DATE_COLUMN))
    return (keys,)
