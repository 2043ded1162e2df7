"""``target.mode: insert_only`` (the default): each event lands once, the first copy wins.

A batch keeps the first copy of each key (:data:`pipelines.sink.dedup.FIRST_BY`); the MERGE
inserts the rows whose key matches no target row on the partition columns and the dedup key
(the date, or the event time, within ``target.dedup_window``), reading only the partitions the
rows fall in (widened by the window) and, with an event-time window, only the files of the time
slice the rows' keys can be in (:mod:`pipelines.sink.event_window`).
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column
from pyspark.sql import functions as F

from pipelines import sql
from pipelines.config.model import DATE_COLUMN
from pipelines.sink.dedup import FIRST_BY
from pipelines.sink.event_window import range_predicate, within
from pipelines.sink.merge import MergeOutcome, insert_only_merge, literal_filter, within_days
from pipelines.sink.modes.base import BatchRows, Expectations, WriteMode, key_uniqueness
from pipelines.sink.partitions import read_values
from schemas.base import EventSchema


class InsertOnly(WriteMode):
    """Insert-only: one row per event key, never updated."""

    name = "insert_only"
    inserts_only = True

    def survivor_order(self) -> list[Column]:
        """Earliest Kafka timestamp, then topic, partition and offset."""
        return [F.col(c).asc_nulls_last() for c in FIRST_BY]

    def merge(self, batch: BatchRows) -> Callable[[], MergeOutcome]:
        """The insert-only MERGE: on the partition columns and the key (the date or the event
        time within the window), reading only the batch's partitions, time slice and key range
        (:meth:`BatchRows.keyed`: keys that grow with time, sequential ids, skip every file
        earlier batches wrote; random UUIDs span the whole range and skip none)."""
        config, target = self.config, self.target
        rows, values, spans = batch.rows, batch.values, batch.spans
        window = target.dedup_window  # a day window > 0 only when event_date is a partition
        on = tuple(c for c in (*target.prune_by, *target.dedup_keys)
                   if not (window and c == DATE_COLUMN))
        prune = literal_filter("t", {k: read_values(config, k, vs, spans)
                                     for k, vs in values.items()})
        if target.prune_by and not any(values.values()):
            prune = "false"  # nothing to insert: read no partitions, still commit offsets
        if prune != "false":
            prune = sql.all_of([prune, batch.keyed()])
        time_window = target.time_window
        if time_window is None:
            near = within_days(DATE_COLUMN, target.date_window) if window else None
        else:
            time_column = config.event_schema().time_column
            near = within(time_column, time_window)
            if spans is not None and prune != "false":
                prune = sql.all_of([prune, range_predicate(time_column, spans)])
        return lambda: insert_only_merge(target.ref, rows, on, prune, near)

    def expectations(self, schema: EventSchema) -> Expectations:
        """The key is unique, also within each date partition when ``event_date`` is one."""
        return Expectations(unique=key_uniqueness(self.target.dedup_keys,
                                                  self.target.prune_by))

