"""``target.mode: scd2``: every version of each key, with ``__START_AT`` and ``__END_AT``.

The target is a history (SCD type 2): one row per version of a key, ``__START_AT`` and
``__END_AT`` the sequence values of the change that opened it and of the one that closed it
(null for the current version). A delete closes the open version; a re-insert opens a new one;
a change that alters no tracked column (``target.track_history``) adds no version. On a change
stream the sequence is the change's source position and a truncate closes every open version;
on an event topic it is ``target.sequence_by``, and ``target.delete_when`` says the deletes.

Any order of arrival, replays included, gives the same history: it is a function of the *set*
of a key's changes (:mod:`pipelines.sink.modes.scd2_versions`), and that set is kept, one row
per key and sequence value, in the mode's changes table (``target.changes_path``). A batch
commits twice, both under its txn (app id, batch id):

1. **the changes MERGE**: the batch's changes that the table lacks are added (a change stream's
   change sent again, at the same position, is already there; an event topic's two events at
   one sequence value keep the one with the highest Kafka coordinates);
2. **the history MERGE** (last: it carries the batch's offsets): the history of every key the
   batch touched (every key, when it holds a truncate) is computed again from the changes
   table, and the target's versions of those keys are made that: new versions inserted, changed
   ones updated, versions no longer in the history deleted. A version that did not change is
   not rewritten.

Exactly once: a replayed batch is skipped by each txn; whether or not step 1 committed before a
crash, step 2 reads the changes table *after* it, so it computes the same history; under a new
app id (a lost checkpoint) step 1 adds nothing and step 2 changes nothing. Neither step's result
depends on what the table held before it beyond the set of changes, so re-running a batch, or
running batches in another order, converges.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DecimalType,
    MapType,
    StringType,
    StructField,
    StructType,
)

from pipelines import sql
from pipelines.errors import ConfigError
from pipelines.formats.debezium.changes import DELETED, TRUNCATE, UNCHANGED
from pipelines.formats.debezium.records import FLAGS, NOT_DATA, good
from pipelines.sink.merge import MergeOutcome, insert_only_merge, outcome
from pipelines.sink.modes.base import BatchRows, Expectations, SideWrite, WriteMode
from pipelines.sink.modes.change_tables import fit_columns, record_key
from pipelines.sink.modes.scd2_versions import versions
from pipelines.sink.modes.upsert import check_upsert
from pipelines.storage.tables import TableRef
from schemas.base import EventSchema
from schemas.changes import END_AT, POSITION, START_AT

_KAFKA_ORDER = ("kafka_partition", "kafka_offset", "kafka_topic")


class Scd2(WriteMode):
    """A history of versions (see the module)."""

    name = "scd2"
    merge_kind = "history MERGE"
    whole_table = True

    @property
    def sequence(self) -> str:
        """The column that orders a key's changes."""
        return POSITION if self.config.change_stream else self.target.sequence_by

    def survivor_order(self) -> list[Column]:
        """One change per key and sequence value: the last copy sent (the highest Kafka
        coordinates; a change stream's copies are the same change)."""
        return [F.col(c).desc_nulls_last() for c in _KAFKA_ORDER]

    def groups(self) -> tuple[str, ...]:
        """The sequence: every change of a key is kept, one per sequence value."""
        return (self.sequence,)

    def flag(self, kept: DataFrame, good: Column) -> DataFrame:
        """An event topic's ``_deleted`` from ``delete_when`` (a change stream's is its op)."""
        if self.config.change_stream:
            return kept
        when = self.target.delete_when
        deleted = F.coalesce(F.expr(when), F.lit(False)) if when else F.lit(False)
        return kept.withColumn(DELETED, F.when(good, deleted))

    def source_columns(self) -> tuple[str, ...]:
        """An event topic's ``_deleted`` (a change stream's rows hold their flags)."""
        return () if self.config.change_stream else (DELETED,)

    def metrics(self) -> list[Column]:
        """The batch's deletes, and a change stream's truncates."""
        out = [F.count_if(good() & F.col(DELETED)).alias("deletes")]
        if self.config.change_stream:
            out.append(F.count_if(good() & F.col(TRUNCATE)).alias("truncates"))
        return out

    def counts(self, got: Mapping[str, Any]) -> dict[str, int]:
        """``deletes``, and ``truncates`` when there were any."""
        truncates = int(got.get("truncates") or 0)
        return {"deletes": int(got.get("deletes") or 0),
                **({"truncates": truncates} if truncates else {})}

    def _sequence_type(self, base: StructType) -> DataType:
        return DecimalType(38, 0) if self.config.change_stream else \
            base[self.target.sequence_by].dataType

    def target_schema(self, base: StructType) -> StructType:
        """The schema's columns, then ``__START_AT`` and ``__END_AT`` (the sequence's type)."""
        kind = self._sequence_type(base)
        return StructType([*base.fields, StructField(START_AT, kind, False),
                           StructField(END_AT, kind, True)])

    def companions(self, base: StructType) -> list[tuple[TableRef, StructType]]:
        """The changes table: every change, with its flags."""
        flags = [StructField(DELETED, BooleanType(), True)]
        if self.config.change_stream:
            flags += [StructField(TRUNCATE, BooleanType(), True),
                      StructField(UNCHANGED, ArrayType(StringType(), True), True)]
        return [(self.target.changes_ref, StructType([*base.fields, *flags]))]

    def check(self, spark: SparkSession, schema: EventSchema) -> None:
        """An event topic's ``sequence_by`` is a required column, ``delete_when`` a boolean,
        and ``track_history`` names its columns."""
        if self.config.change_stream:
            return
        check_upsert(spark, self.target, schema)
        columns = set(schema.target_schema().fieldNames())
        unknown = sorted(set(self.target.track_history or ()) - columns)
        if unknown:
            raise ConfigError(f"target.track_history {unknown} are not columns of schema "
                              f"{schema.name}; columns are {sorted(columns)}")

    def before_merge(self, spark: SparkSession, batch: BatchRows) -> None:
        """A change stream's target and changes table gain the batch's new columns, and the
        key is recorded on the target."""
        if not self.config.change_stream:
            return
        fields = [f for f in batch.rows.schema.fields if f.name not in FLAGS]
        fit_columns(spark, self.target.ref, StructType(fields))
        fit_columns(spark, self.target.changes_ref, batch.rows.schema)
        record_key(spark, self.target.ref, batch.keys)

    def side_writes(self, batch: BatchRows) -> list[SideWrite]:
        """The changes MERGE (step 1 of the module)."""
        ref, keys, stream = self.target.changes_ref, batch.keys, self.config.change_stream
        return [SideWrite(ref, "changes MERGE",
                          lambda: changes_merge(ref, batch.rows, keys, self.sequence, stream))]

    def merge(self, batch: BatchRows) -> Callable[[], MergeOutcome]:
        """The history MERGE (step 2 of the module)."""
        target, keys = self.target, batch.keys
        whole = int(batch.observed.get("truncates") or 0) > 0
        columns = batch.rows.columns
        data = [c for c in columns if c not in NOT_DATA and c not in keys
                and c != self.sequence and c != DELETED]
        tracked = list(target.track_history) if target.track_history else data
        return lambda: history_merge(target.ref, target.changes_ref, batch.rows, keys,
                                     self.sequence, data, tracked, whole)

    def expectations(self, schema: EventSchema) -> Expectations:
        """A version per key and start; at most one open version per key (two would share a
        null ``__END_AT``); intervals that do not overlap."""
        keys = self.target.dedup_keys
        if not keys:
            return Expectations(exists=(START_AT, END_AT))
        return Expectations(unique=((*keys, START_AT), (*keys, END_AT)),
                            exists=(START_AT, END_AT), not_null=(START_AT,),
                            intervals=(START_AT, END_AT))


def _same(columns: list[StructField]) -> str:
    def equal(f: StructField) -> str:
        s, t = sql.column("s", f.name), sql.column("t", f.name)
        return f"to_json(map('v', {t})) <=> to_json(map('v', {s}))" \
            if isinstance(f.dataType, MapType) else f"{t} <=> {s}"

    return sql.all_of([equal(f) for f in columns]) or "true"


def changes_merge(ref: TableRef, rows: DataFrame, keys: tuple[str, ...], sequence: str,
                  change_stream: bool) -> MergeOutcome:
    """Add the batch's changes the table lacks (step 1 of the module)."""
    on = sql.all_of([sql.equal_on(keys, null_safe=True),
                     f"{sql.column('t', sequence)} = {sql.column('s', sequence)}"])
    if change_stream:  # one position, one change: a copy is already there
        return insert_only_merge(ref, rows, (), None, f"({on}) AND t.{TRUNCATE} <=> s.{TRUNCATE}")
    coords = [c for c in _KAFKA_ORDER]
    later = sql.any_of(sql.all_of([*(f"s.{p} <=> t.{p}" for p in coords[:i]),
                                   f"s.{c} > t.{c}"]) or "false"
                       for i, c in enumerate(coords))
    fields = [f for f in rows.schema.fields if f.name not in (*keys, sequence, *coords)]
    clauses = (f"WHEN MATCHED AND ({later}) AND NOT ({_same(fields)}) THEN UPDATE SET * "
               "WHEN NOT MATCHED THEN INSERT *")
    return outcome(ref.merge(rows, on or "true", clauses))


def history_merge(history: TableRef, changes: TableRef, rows: DataFrame, keys: tuple[str, ...],
                  sequence: str, data: list[str], tracked: list[str],
                  whole: bool) -> MergeOutcome:
    """Make the touched keys' versions in the target their history (step 2 of the module).

    Args:
        history: the target.
        changes: the changes table (step 1 committed).
        rows: the batch's changes.
        keys: the key's columns.
        sequence: the column that orders a key's changes.
        data: the row's own columns.
        tracked: the columns whose change starts a version.
        whole: recompute every key (the batch holds a truncate).
    """
    spark = rows.sparkSession
    kept = changes.read(spark)
    keyed = kept.where(~F.col(TRUNCATE)) if TRUNCATE in kept.columns else kept
    touched = rows.where(~F.col(TRUNCATE)) if TRUNCATE in rows.columns else rows
    touched = touched.select(*keys).distinct()
    wanted = keyed if whole else keyed.join(touched, list(keys), "left_semi")
    if TRUNCATE in kept.columns:
        wanted = wanted.unionByName(kept.where(F.col(TRUNCATE)))
    new = versions(wanted, keys, sequence, data, tracked).withColumn("_new", F.lit(True))
    old = history.read(spark)
    if not whole:
        old = old.join(touched, list(keys), "left_semi")
    source = (new.join(old.select(*keys, START_AT), [*keys, START_AT], "full_outer")
              .withColumn("_stale", F.col("_new").isNull()).drop("_new"))
    columns = [f for f in source.schema.fields if f.name != "_stale"]
    on = sql.all_of([sql.equal_on(keys), f"t.{START_AT} = s.{START_AT}"]) or "true"
    names = ", ".join(sql.ident(f.name) for f in columns)
    values = ", ".join(sql.column("s", f.name) for f in columns)
    sets = ", ".join(f"{sql.ident(f.name)} = {sql.column('s', f.name)}" for f in columns
                     if f.name not in keys and f.name != START_AT)
    clauses = ("WHEN MATCHED AND s._stale THEN DELETE "
               f"WHEN MATCHED AND NOT s._stale AND NOT ({_same(columns)}) THEN UPDATE SET {sets} "
               f"WHEN NOT MATCHED AND NOT s._stale THEN INSERT ({names}) VALUES ({values})")
    return outcome(history.merge(source, on, clauses))
