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
from dataclasses import dataclass
from typing import Any, ClassVar

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql.types import StructType

from pipelines.config.model import DATE_COLUMN, PipelineConfig
from pipelines.sink.event_window import Span
from pipelines.sink.merge import MergeOutcome
from schemas.base import EventSchema


@dataclass(frozen=True)
class Expectations:
    """What a mode asks of its target table, beyond the schema's own columns and required
    fields (``quality/suites.py`` turns these into Great Expectations expectations).

    Attributes:
        unique: column tuples that no two rows may share (one column: unique and not null).
        exists: columns the mode adds, which must be in the table.
        not_null: more columns that may never be null.
    """

    unique: tuple[tuple[str, ...], ...] = ()
    exists: tuple[str, ...] = ()
    not_null: tuple[str, ...] = ()


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

    # The write (pipelines/sink/target_merge.py)

    def merge(self, rows: DataFrame, values: dict[str, list[object]],
              spans: Sequence[Span] | None) -> Callable[[], MergeOutcome]:
        """The target's MERGE of a batch's ``rows``, to run inside the commit's txn.

        Args:
            rows: the batch's survivors as target rows (with :meth:`source_columns`).
            values: partition column -> the distinct values in ``rows``.
            spans: with an event-time window, the time ranges the MERGE reads.
        """
        raise NotImplementedError

    # The proof (quality/suites.py)

    def expectations(self, schema: EventSchema) -> Expectations:
        """What the target must satisfy after every run."""
        return Expectations()


def key_uniqueness(keys: tuple[str, ...], partition_by: tuple[str, ...]
                   ) -> tuple[tuple[str, ...], ...]:
    """The key, and the key with ``event_date`` where that is a partition column the key lacks
    (also checked per partition)."""
    if DATE_COLUMN in partition_by and DATE_COLUMN not in keys:
        return (keys, (*keys, DATE_COLUMN))
    return (keys,)
