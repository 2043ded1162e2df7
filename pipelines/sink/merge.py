"""Insert-only MERGE with partition literals, so a batch reads only the partitions it touches.

The MERGE is Delta SQL over a temp view of the source (``TableRef.merge``), the same in classic
mode and over Spark Connect; its conditions are SQL text with typed, escaped literals
(``pipelines/sql.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines import sql
from pipelines.sink.event_window import near
from pipelines.storage.tables import TableRef

#: Spark's broadcast-join threshold: off inside a batch's MERGE (see :func:`merge_settings`).
BROADCAST_THRESHOLD = "spark.sql.autoBroadcastJoinThreshold"
#: Spark's runtime bloom filter (a subquery job that scans one side of a join first).
BLOOM_FILTER = "spark.sql.optimizer.runtime.bloomFilter.enabled"
#: Delta's copy of a MERGE source before a two-pass (upsert) MERGE.
MATERIALIZE_SOURCE = "spark.databricks.delta.merge.materializeSource"
#: Delta's auto-compaction, run right after a commit (``target.compact_while_streaming``).
AUTO_COMPACT = "spark.databricks.delta.autoCompact.enabled"
#: Delta's shuffle of a MERGE's output by the partition columns before it writes.
REPARTITION_BEFORE_WRITE = "spark.databricks.delta.merge.repartitionBeforeWrite.enabled"


@dataclass(frozen=True)
class MergeOutcome:
    """What one MERGE did. ``committed`` is False when Delta skipped it as a replayed txn.

    ``updated`` counts rows replaced by a newer version (upsert mode; 0 for insert-only),
    ``deleted`` rows removed (a replica's deleted keys, a history's versions no longer in it).
    """

    committed: bool
    inserted: int
    updated: int = 0
    deleted: int = 0


@contextmanager
def merge_settings(spark: SparkSession, *, source_materialized: bool = True,
                   compact: bool = False, insert_only: bool = True) -> Iterator[None]:
    """Session settings for one of a batch's MERGEs (and its other-date count), restored after.

    * No broadcast join: a broadcast is a Spark job of its own (the touched partitions' target
      rows, collected to the driver); as a sort-merge join, reading the target is one more stage
      of the MERGE's write job. A streaming batch runs without adaptive execution, so the join
      strategy is fixed at planning time. No runtime bloom filter either: it is another job
      that scans the target first (seen in the other-date count).
    * ``source_materialized``: the source is a local checkpoint (fixed blocks, no lineage back to
      Kafka), so Delta's own copy of it before an upsert's two passes is skipped. Both passes
      read the same blocks; a lost block fails the MERGE ("Checkpoint block ... not found") and
      the batch is re-run whole (:mod:`pipelines.sink.retry`), never read differently.
    * ``compact``: Delta's auto-compaction runs after the commit (a continuous run's target,
      ``target.compact_while_streaming``). Its ``OPTIMIZE`` commit holds no ``txn`` action and
      changes no data, so a replayed batch is still skipped by the MERGE's ``txn``; the log
      reader skips it (``pipelines/ledger/state.py``, ``COMPACTIONS``).
    * ``insert_only``: no shuffle of the inserted rows by partition before the write. Delta's
      insert-only MERGE is an anti-join of the source against the target's slice, then a write
      (``InsertOnlyMergeExecutor``); by default it first repartitions the rows by the partition
      columns, a third shuffle of the batch, so that each date gets one file. Without it each
      task writes the dates it holds (up to ``spark.sql.shuffle.partitions`` files a date, which
      maintenance compacts). Measured warm, a 500k-row batch into 300k rows over 3 dates,
      alternating, medians of 3: 3.16 s with it, 2.56 s without; an anti-join and a plain
      append in its place, 2.97 s (``bench/results/merge-shapes.md``). It changes
      which files hold the rows, not which rows are written, nor the commit's conflict checks.

    Args:
        spark: the micro-batch's session.
        source_materialized: whether the MERGE's source is already materialized.
        compact: run Delta's auto-compaction after the commit.
        insert_only: the MERGE only inserts (no repartition before its write).
    """
    wanted = {BROADCAST_THRESHOLD: "-1", BLOOM_FILTER: "false"}
    if source_materialized:
        wanted[MATERIALIZE_SOURCE] = "none"
    if compact:
        wanted[AUTO_COMPACT] = "true"
    if insert_only:
        wanted[REPARTITION_BEFORE_WRITE] = "false"
    saved = {key: spark.conf.get(key, None) for key in wanted}
    for key, value in wanted.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, old)


def literal_filter(alias: str, values: Mapping[str, Iterable[Any]]) -> str | None:
    """``alias.col IN (v1, v2, ...)`` for each column, with typed literals.

    Args:
        alias: the table alias in the MERGE (``t``).
        values: column → the distinct values present in the batch.

    Returns:
        The conjunction, or None when ``values`` is empty.
    """
    return sql.isin(alias, values)


def expand_dates(dates: Iterable[date], days: int) -> list[date]:
    """Every date within ``days`` of one of ``dates`` (sorted, distinct; ``dates`` if 0).

    Dates that would leave Python's range (years 1..9999) are left out: no row can hold them.
    """
    out: set[date] = set()
    for d in dates:
        for shift in range(-days, days + 1):
            try:
                out.add(d + timedelta(days=shift))
            except OverflowError:
                continue
    return sorted(out)


def within_days(column: str, days: int) -> str:
    """``|t.column - s.column| <= days`` (in days): the per-row half of the dedup window."""
    return (f"abs(datediff({sql.column('t', column)}, {sql.column('s', column)})) "
            f"<= {int(days)}")


def null_safe_or_legacy(column: str) -> str:
    """``t.column <=> s.column``, or true when the target row predates the column (null).

    Lets a column join a MERGE key after rows were written without it: old rows still match on
    the rest of the key, so a replay of them stays a no-op.
    """
    t = sql.column("t", column)
    return f"{t} IS NULL OR {t} <=> {sql.column('s', column)}"


def outcome(rows: Sequence[Any]) -> MergeOutcome:
    """What a MERGE's result rows say: no row when Delta skipped it as an already seen txn."""
    if not rows:
        return MergeOutcome(committed=False, inserted=0)
    first = rows[0].asDict()
    return MergeOutcome(committed=True, inserted=int(first["num_inserted_rows"]),
                        updated=int(first.get("num_updated_rows") or 0),
                        deleted=int(first.get("num_deleted_rows") or 0))


def insert_only_merge(
    target: TableRef,
    source: DataFrame,
    on: Sequence[str],
    target_filter: str | None = None,
    condition: str | None = None,
) -> MergeOutcome:
    """Insert the source rows whose ``on`` columns match no target row.

    A source row may match several target rows (e.g. a key in two partitions of the dedup
    window): with only a not-matched clause, Delta 4.0 raises no multiple-match error.

    Args:
        target: the Delta table.
        source: rows to insert; must hold at most one row per ``on`` tuple (its session runs
            the MERGE).
        on: the key columns compared with ``=`` (partition columns first, so they prune).
        target_filter: an extra SQL predicate on the target (alias ``t``), e.g. partition
            literals.
        condition: an extra SQL join predicate between ``t`` and ``s`` (null-safe or ranged
            keys).

    Returns:
        Whether a commit happened, and how many rows it inserted.
    """
    cond = sql.all_of([sql.equal_on(on), target_filter, condition]) or "true"
    # The source's columns by name, not INSERT *: a table column the schema no longer has (a
    # removed optional field) is then null in new rows instead of failing the MERGE.
    names = ", ".join(sql.ident(c) for c in source.columns)
    values = ", ".join(sql.column("s", c) for c in source.columns)
    return outcome(target.merge(source, cond,
                                f"WHEN NOT MATCHED THEN INSERT ({names}) VALUES ({values})"))


def count_other_date_copies(target: DataFrame, source: DataFrame, keys: tuple[str, ...],
                            date_column: str, dates: Sequence[date],
                            window: int | timedelta, time_column: str) -> int:
    """Source rows whose key is in the target only under another date within the window.

    Run after the MERGE: those are the rows the dedup window caught and an ``(event_date, key)``
    key would have let in. Inserted rows match themselves on their own date, so they never count.

    Args:
        target: the target table's rows (read after the MERGE).
        source: the batch's deduplicated rows.
        keys: the dedup key columns.
        date_column: the date partition column.
        dates: the dates the MERGE read (the batch's dates widened by the window), for pruning.
        window: the dedup window: whole days, or an event-time duration.
        time_column: the event-time column (compared with an event-time window).

    Returns:
        How many source rows were caught in another date's partition.
    """
    if not dates:
        return 0
    k = F.struct(*[F.col(c) for c in keys]).alias("_k")
    s = source.select(k, F.col(date_column).alias("_sd"), F.col(time_column).alias("_st"))
    t = (target.where(F.col(date_column).isin(list(dates)))
         .select(k, F.col(date_column).alias("_td"), F.col(time_column).alias("_tt")))
    close = (near(F.col("_tt"), F.col("_st"), window) if isinstance(window, timedelta)
             else F.abs(F.datediff(F.col("_td"), F.col("_sd"))) <= F.lit(window))
    matched = (s.join(t, "_k").where(close)
               .groupBy("_k")
               .agg(F.max((F.col("_td") == F.col("_sd")).cast("int")).alias("same")))
    return int(matched.where(F.col("same") == 0).count())
