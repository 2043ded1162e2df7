"""The target's insert-only MERGE as one txn-guarded commit: shared by a batch and a redrive.

The MERGE keys on the partition columns and the dedup key (the date, or the event time, within
``target.dedup_window``), reads only the partitions the rows fall in (widened by the window) and,
with an event-time window, only the files of the time slice the rows' keys can be in
(:mod:`pipelines.sink.event_window`). It is committed under a ``txn`` (app id, version) with the
commit's userMetadata, and retries Delta's write conflicts against the new table version.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines import sql
from pipelines.config.model import DATE_COLUMN, PipelineConfig
from pipelines.sink.commit import txn, with_conflict_retry
from pipelines.sink.event_window import Span, dates_of, days_covering, range_predicate, within
from pipelines.sink.merge import (
    MergeOutcome,
    expand_dates,
    insert_only_merge,
    literal_filter,
    merge_settings,
    within_days,
)
from pipelines.sink.upsert import DELETED, latest_versions, sequence_columns, upsert_merge


def partition_values(deduped: DataFrame, partition_by: tuple[str, ...]
                     ) -> tuple[int, dict[str, list[Any]]]:
    """How many rows ``deduped`` holds, and the distinct values of each partition column."""
    parts = list(partition_by)
    groups = deduped.groupBy(*parts).count().collect() if parts else \
        [deduped.agg(F.count(F.lit(1)).alias("count")).first()]
    unique = sum(int(g["count"]) for g in groups if g is not None)
    return unique, {p: [g[p] for g in groups if g is not None] for p in parts}


def read_values(config: PipelineConfig, column: str, values: list[object],
                spans: Sequence[Span] | None = None) -> list[object]:
    """The partition values the target MERGE reads: the batch's, widened by the dedup window.

    With an event-time window, the dates its ``spans`` touch; without spans (a redrive), every
    date the window can reach from the batch's dates.
    """
    present = [v for v in values if v is not None]
    target = config.target
    if column != DATE_COLUMN or not target.dedup_window:
        return present
    window = target.time_window
    if window is not None and spans is not None:
        return list(dates_of(spans))
    days = target.date_window if window is None else days_covering(window)
    # Event dates are years 1000..9999 (parse quarantines the rest); the window must not
    # widen past them (Spark's date literal cannot even say year 999).
    return [d for d in expand_dates([d for d in present if isinstance(d, date)], days)
            if 1000 <= d.year <= 9999]


def merge_into_target(spark: SparkSession, config: PipelineConfig, deduped: DataFrame,
                      values: dict[str, list[object]], app_id: str, version: int,
                      metadata: str, before_commit: Callable[[], None],
                      spans: Sequence[Span] | None = None, *,
                      compact: bool = False,
                      key_range: tuple[Any, Any] | None = None) -> MergeOutcome:
    """The target's insert-only MERGE of deduplicated rows, as one txn-guarded commit.

    Keys on the partition columns and the dedup key (the date, or the event time, within
    ``target.dedup_window``), reads only the partitions of ``values`` (widened by the window)
    and the time slice of ``spans``, and retries conflicts. A micro-batch and ``deltasink
    quarantine redrive`` both commit through it.

    Args:
        spark: the session.
        config: the pipeline config.
        deduped: at most one row per dedup key.
        values: partition column -> the distinct values in ``deduped``.
        app_id: the txnAppId.
        version: the txnVersion.
        metadata: the commit's userMetadata.
        before_commit: called before each attempt (lease check, fault points).
        spans: with an event-time window, the time ranges to read (``Prepared.spans``); None
            reads every date the window can reach.
        compact: run Delta's auto-compaction after the commit (:func:`merge_settings`).
        key_range: the lowest and highest value of the dedup key's first column in ``deduped``
            (``Prepared.key_range``); None reads every key.

    Returns:
        Whether Delta committed (False: skipped as a seen txn) and how many rows were inserted.
    """
    target = config.target
    keyed = None if key_range is None else sql.between("t", target.dedup_keys[0], *key_range)
    merge = (_upsert(config, deduped, values, keyed) if target.mode == "upsert"
             else _insert_only(config, deduped, values, spans, keyed))

    def attempt() -> MergeOutcome:
        before_commit()
        with txn(spark, app_id, version, metadata), \
                merge_settings(spark, compact=compact, insert_only=target.mode != "upsert"):
            return merge()

    kind = "upsert MERGE" if target.mode == "upsert" else "MERGE"
    return with_conflict_retry(attempt, retries=target.commit_retries,
                               what=f"{kind} into {target.ref.describe()}")


def _insert_only(config: PipelineConfig, deduped: DataFrame, values: dict[str, list[object]],
                 spans: Sequence[Span] | None, keyed: str | None = None
                 ) -> Callable[[], MergeOutcome]:
    """The insert-only MERGE: on the partition columns and the key (the date or the event time
    within the window), reading only the batch's partitions, time slice and key range.

    ``keyed`` bounds the key's first column to the batch's own range: a target row outside it
    cannot equal a batch row's key, so the bound drops no match, and Delta skips every file
    whose statistics lie outside it. Keys that grow with time (sequential ids, a database's
    sequence) skip every file earlier batches wrote; random UUIDs span the whole range and
    skip none."""
    target = config.target
    window = target.dedup_window  # a day window > 0 only when event_date is a partition column
    on = tuple(c for c in (*target.prune_by, *target.dedup_keys)
               if not (window and c == DATE_COLUMN))
    prune = literal_filter("t", {k: read_values(config, k, vs, spans) for k, vs in values.items()})
    if target.prune_by and not any(values.values()):
        prune = "false"  # nothing to insert: read no partitions, still commit offsets
    time_window = target.time_window
    if prune != "false":
        prune = sql.all_of([prune, keyed])
    if time_window is None:
        near = within_days(DATE_COLUMN, target.date_window) if window else None
    else:
        time_column = config.event_schema().time_column
        near = within(time_column, time_window)
        if spans is not None and prune != "false":
            prune = sql.all_of([prune, range_predicate(time_column, spans)])
    return lambda: insert_only_merge(target.ref, deduped, on, prune, near)


def _upsert(config: PipelineConfig, rows: DataFrame, values: dict[str, list[object]],
            keyed: str | None = None) -> Callable[[], MergeOutcome]:
    """The upsert MERGE (``pipelines.sink.upsert``).

    Matches on the key across the whole table (no partition literals: a newer version may move
    to another partition). Rows without ``_deleted`` (a redrive's) get it from ``delete_when``.
    """
    target = config.target
    if DELETED not in rows.columns:
        rows = latest_versions(rows, target)
    empty = "false" if target.prune_by and not any(values.values()) else keyed
    sequence = sequence_columns(target.sequence_by)
    return lambda: upsert_merge(target.ref, rows, target.dedup_keys, sequence, empty)
