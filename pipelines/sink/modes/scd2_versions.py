"""A key's history from the set of its changes: one pure DataFrame function, in the JVM.

The history is a function of the *set* of a key's changes, never of their arrival order, so any
order of arrival, replays included, gives the same versions:

1. the key's changes, sorted by sequence (a change stream's source position, or
   ``target.sequence_by``), one per sequence value; a truncate is a delete of every key;
2. a column Debezium did not send (TOAST-ed, unchanged) takes its value from the change before;
3. a change *starts* a version when it is not a delete and the key had no version open (its
   first change, or the one after a delete), or when it alters a tracked column
   (``target.track_history``, default every column of the row);
4. a version runs from its start to the next start or delete: ``__START_AT`` and ``__END_AT``
   are their sequence values (``__END_AT`` null for the current version). Its tracked columns,
   its change columns and its Kafka coordinates are the starting change's; its other columns
   the last change's of the run (a change of untracked columns only updates the version in
   place).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, MapType, StringType, StructType

from schemas.changes import END_AT, START_AT

DELETED, TRUNCATE, UNCHANGED = "_deleted", "_truncate", "_unchanged"
_START, _BOUNDARY, _GROUP, _FIRST, _LAST = "_start", "_boundary", "_group", "_first", "_last"


def _comparable(column: str, schema: StructType) -> Column:
    """A column as compared between changes (a map compares by its JSON text)."""
    kind = schema[column].dataType
    return F.to_json(F.col(column)) if isinstance(kind, MapType) else F.col(column)


def with_truncates(changes: DataFrame, keys: Sequence[str]) -> DataFrame:
    """``changes`` with each truncate as a delete of every key the changes hold."""
    if TRUNCATE not in changes.columns:
        return changes
    truncates = changes.where(F.col(TRUNCATE)).drop(*keys)
    rows = changes.where(~F.col(TRUNCATE))
    every = rows.select(*keys).distinct()
    deletes = (every.crossJoin(truncates).withColumn(DELETED, F.lit(True))
               .select(*rows.columns))
    return rows.unionByName(deletes)


def versions(changes: DataFrame, keys: Sequence[str], sequence: str,
             data: Sequence[str], tracked: Sequence[str]) -> DataFrame:
    """The versions the ``changes`` of their keys make (see the module).

    Args:
        changes: every change of the keys wanted (one per key and sequence value), with
            ``_deleted`` (and, from a change stream, ``_truncate`` and ``_unchanged``).
        keys: the key's columns.
        sequence: the column that orders a key's changes.
        data: the row's own columns (not the key, the change or the Kafka columns).
        tracked: the columns whose change starts a version.

    Returns:
        One row per version: ``changes``' columns but the flags, with ``__START_AT`` and
        ``__END_AT``.
    """
    changes = with_truncates(changes, keys)
    order = Window.partitionBy(*keys).orderBy(sequence)
    if UNCHANGED in changes.columns:  # unsent values come from the change before
        changes = changes.withColumns({
            c: F.last(F.when(~F.array_contains(F.col(UNCHANGED), F.lit(c)) | F.col(DELETED),
                             F.struct(F.col(c).alias("v"))), ignorenulls=True)
            .over(order.rowsBetween(Window.unboundedPreceding, 0))["v"]
            for c in data if isinstance(changes.schema[c].dataType, StringType | BinaryType)})
    state = F.struct(*[_comparable(c, changes.schema).alias(c) for c in tracked]) \
        if tracked else F.lit(True)
    deleted = F.col(DELETED)
    before = F.lag(deleted).over(order)
    altered = ~F.coalesce(F.lag(state).over(order) == state, F.lit(False)) if tracked \
        else F.lit(False)
    marked = changes.withColumn(_START, ~deleted & (before.isNull() | before | altered))
    marked = marked.withColumn(_BOUNDARY, deleted | F.col(_START))
    marked = marked.withColumn(_GROUP, F.sum(F.col(_BOUNDARY).cast("long")).over(
        order.rowsBetween(Window.unboundedPreceding, 0)))
    flags = {DELETED, TRUNCATE, UNCHANGED, _START, _BOUNDARY, _GROUP}
    columns = [c for c in changes.columns if c not in flags and c not in keys]
    untracked = [c for c in data if c not in tracked]
    groups = marked.groupBy(*keys, _GROUP).agg(
        F.min_by(F.struct(F.col(_START), *[F.col(c) for c in columns]), sequence).alias(_FIRST),
        F.max_by(F.struct(*[F.col(c) for c in untracked]), sequence).alias(_LAST)
        if untracked else F.lit(None).alias(_LAST),
        F.min(sequence).alias(START_AT))
    ends = Window.partitionBy(*keys).orderBy(_GROUP)
    groups = groups.withColumn(END_AT, F.lead(START_AT).over(ends))
    return groups.where(F.col(f"{_FIRST}.{_START}")).select(
        *keys, *[(F.col(f"{_LAST}.{c}") if c in untracked else F.col(f"{_FIRST}.{c}")).alias(c)
                 for c in columns], START_AT, END_AT)
