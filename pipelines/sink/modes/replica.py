"""``target.mode: upsert`` on a change stream: the target is the source table's replica.

Reading the target gives the source table: one row per key, its latest change; a deleted key
is gone, a re-inserted key is back, a truncate empties the table. What a row alone cannot
remember, the mode's deletes table (``target.deletes_path``) does: each deleted key's delete
position, and the last truncate's, for ``target.delete_retention``. A change at or below them
is older than the delete: it is dropped, so a late or re-sent older change cannot bring a row
back. (An older change arriving after the retention could; purge: ``deltasink maintenance``.)

A batch keeps each key's latest change (highest source position, :mod:`pipelines.formats.
debezium.position`), then commits twice, both under the batch's txn (app id, batch id):

1. **the deletes MERGE**: the batch's deletes and its truncate, each newer than what the table
   holds, are written; a key's delete record is removed once a newer change of it lands.
2. **the replica MERGE** (last: it carries the batch's offsets): a change newer than the key's
   row replaces it (a delete removes it); a new key's change inserts it, unless it is not newer
   than the key's delete or the last truncate; with a truncate in the batch, every row older
   than it goes. A change whose values equal the row's is not a change: the row stays as it is
   (a snapshot taken again, a re-send). A column Debezium did not send (TOAST-ed, unchanged)
   keeps the row's value.

Exactly once: a replayed batch is skipped by each txn. A re-sent change has its original's
position, so it is not newer than what it already made (each comparison is strict). Whether or
not step 1 of the batch committed before a crash, step 2 drops the same changes: the delete
records step 1 writes are the batch's own, and a change is compared with its key's delete record
only when it is not itself the delete (a key's latest change is either a delete or not), while
the truncate is the larger of the table's and the batch's. So the replica is the same however
often the batch is run, and under a new app id (a lost checkpoint) every comparison finds the
changes already there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    DecimalType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from pipelines import sql
from pipelines.formats.debezium.changes import DELETED, TRUNCATE, UNCHANGED
from pipelines.formats.debezium.records import FLAGS, NOT_DATA, good
from pipelines.sink.merge import MergeOutcome, outcome
from pipelines.sink.modes.base import BatchRows, Expectations, SideWrite, WriteMode, key_uniqueness
from pipelines.sink.modes.change_tables import fit_columns, record_key
from pipelines.storage.tables import TableRef
from schemas.base import EventSchema
from schemas.changes import POSITION, SOURCE_TS

#: When a delete record was written (its retention counts from then).
DELETED_AT = "_deleted_at"
#: A deletes table's own columns; the key's are added by the first batch.
DELETES_SCHEMA = StructType([
    StructField(POSITION, DecimalType(38, 0), False),
    StructField(TRUNCATE, BooleanType(), False),
    StructField(SOURCE_TS, TimestampType(), True),
    StructField(DELETED_AT, TimestampType(), False),
])


class Replica(WriteMode):
    """The source table's replica (see the module)."""

    name = "upsert"
    merge_kind = "replica MERGE"
    whole_table = True

    def survivor_order(self) -> list[Column]:
        """The latest change first (ties: the same change sent again; the last copy)."""
        return [F.col(POSITION).desc_nulls_last(), F.col("kafka_partition").desc(),
                F.col("kafka_offset").desc()]

    def metrics(self) -> list[Column]:
        """The batch's deletes and truncates, and the last truncate's position."""
        return [F.count_if(good() & F.col(DELETED)).alias("deletes"),
                F.count_if(good() & F.col(TRUNCATE)).alias("truncates"),
                F.max(F.when(good() & F.col(TRUNCATE), F.col(POSITION))).alias("truncated_at")]

    def counts(self, got: Mapping[str, Any]) -> dict[str, int]:
        """``deletes``, and ``truncates`` when there were any."""
        truncates = int(got.get("truncates") or 0)
        return {"deletes": int(got.get("deletes") or 0),
                **({"truncates": truncates} if truncates else {})}

    def companions(self, base: StructType) -> list[tuple[TableRef, StructType]]:
        """The deletes table."""
        return [(self.target.deletes_ref, DELETES_SCHEMA)]

    def before_merge(self, spark: SparkSession, batch: BatchRows) -> None:
        """The target gains the batch's new columns, the deletes table the key's; the key is
        recorded on the target (or checked against the recorded one)."""
        fields = [f for f in batch.rows.schema.fields if f.name not in FLAGS]
        fit_columns(spark, self.target.ref, StructType(fields))
        keys = [f for f in fields if f.name in batch.keys]
        fit_columns(spark, self.target.deletes_ref, StructType(keys))
        record_key(spark, self.target.ref, batch.keys)

    def side_writes(self, batch: BatchRows) -> list[SideWrite]:
        """The deletes MERGE (step 1 of the module)."""
        ref = self.target.deletes_ref
        rows = batch.rows.select(*batch.keys, POSITION, DELETED, TRUNCATE, SOURCE_TS,
                                 "ingested_at")
        return [SideWrite(ref, "deletes MERGE", lambda: deletes_merge(ref, rows, batch.keys))]

    def merge(self, batch: BatchRows) -> Callable[[], MergeOutcome]:
        """The replica MERGE (step 2 of the module)."""
        target = self.target
        cut = batch.observed.get("truncated_at")
        return lambda: replica_merge(target.ref, target.deletes_ref, batch.rows, batch.keys,
                                     None if cut is None else Decimal(cut))

    def expectations(self, schema: EventSchema) -> Expectations:
        """One row per key."""
        return Expectations(unique=key_uniqueness(self.target.dedup_keys,
                                                  self.target.prune_by))


def deletes_merge(ref: TableRef, rows: DataFrame, keys: tuple[str, ...]) -> MergeOutcome:
    """Write the batch's deletes and truncate, drop delete records a newer change supersedes."""
    cond = sql.all_of([sql.equal_on(keys, null_safe=True), "t._truncate = s._truncate"])
    newer = "s._position > t._position"
    gone = "(s._deleted OR s._truncate)"
    names = [*keys, POSITION, TRUNCATE, SOURCE_TS, DELETED_AT]
    values = [*(sql.column("s", k) for k in keys), "s._position", "s._truncate",
              "s._source_ts", "s.ingested_at"]
    clauses = (f"WHEN MATCHED AND {newer} AND {gone} THEN UPDATE SET "
               f"_position = s._position, _source_ts = s._source_ts, "
               f"{DELETED_AT} = s.ingested_at "
               f"WHEN MATCHED AND {newer} AND NOT {gone} THEN DELETE "
               f"WHEN NOT MATCHED AND {gone} THEN INSERT "
               f"({', '.join(map(sql.ident, names))}) VALUES ({', '.join(values)})")
    return outcome(ref.merge(rows, cond or "true", clauses))


def _live(rows: DataFrame, deletes: DataFrame, keys: tuple[str, ...]) -> DataFrame:
    """The batch's changes that are newer than their key's delete record and the last
    truncate (a delete passes: it only removes a row older than itself)."""
    gone = deletes.where(~F.col(TRUNCATE)).select(*keys, F.col(POSITION).alias("_gone"))
    cut = deletes.where(F.col(TRUNCATE)).agg(F.max(POSITION).alias("_cut"))
    position = F.col(POSITION)
    newer = (F.col("_gone").isNull() | (position > F.col("_gone"))) & \
        (F.col("_cut").isNull() | (position > F.col("_cut")))
    return (rows.where(~F.col(TRUNCATE)).join(gone, list(keys), "left").crossJoin(cut)
            .where(F.col(DELETED) | newer).drop("_gone", "_cut"))


def replica_merge(target: TableRef, deletes: TableRef, rows: DataFrame, keys: tuple[str, ...],
                  truncated_at: Decimal | None) -> MergeOutcome:
    """The replica MERGE of a batch's latest changes (see the module, step 2)."""
    spark = rows.sparkSession
    source = _live(rows, deletes.read(spark), keys)
    columns = [f for f in source.schema.fields if f.name not in FLAGS]
    data = [f for f in columns if f.name not in NOT_DATA and f.name not in keys]

    def kept(f: StructField) -> str:  # a column Debezium did not send keeps its value
        s, t = sql.column("s", f.name), sql.column("t", f.name)
        if isinstance(f.dataType, StringType | BinaryType):
            return f"CASE WHEN array_contains(s.{UNCHANGED}, {sql.literal(f.name)}) " \
                   f"THEN {t} ELSE {s} END"
        return s

    def same(f: StructField) -> str:
        s, t = sql.column("s", f.name), sql.column("t", f.name)
        equal = f"to_json(map('v', {t})) <=> to_json(map('v', {s}))" \
            if isinstance(f.dataType, MapType) else f"{t} <=> {s}"
        if isinstance(f.dataType, StringType | BinaryType):
            return f"(array_contains(s.{UNCHANGED}, {sql.literal(f.name)}) OR {equal})"
        return equal

    newer = "s._position > t._position"
    changed = f"NOT ({sql.all_of([same(f) for f in data]) or 'true'})"
    sets = ", ".join(f"{sql.ident(f.name)} = {kept(f)}" for f in columns if f.name not in keys)
    names = ", ".join(sql.ident(f.name) for f in columns)
    values = ", ".join(sql.column("s", f.name) for f in columns)
    clauses = (f"WHEN MATCHED AND s.{DELETED} AND {newer} THEN DELETE "
               f"WHEN MATCHED AND NOT s.{DELETED} AND {newer} AND {changed} THEN UPDATE SET "
               f"{sets} "
               f"WHEN NOT MATCHED AND NOT s.{DELETED} THEN INSERT ({names}) VALUES ({values})")
    if truncated_at is not None:
        clauses += f" WHEN NOT MATCHED BY SOURCE AND t._position < {sql.literal(truncated_at)} " \
                   "THEN DELETE"
    return outcome(target.merge(source, sql.equal_on(keys) or "true", clauses))


def purge_deletes(spark: SparkSession, ref: TableRef, retention: timedelta,
                  now: datetime) -> str:
    """Forget the delete records written more than ``retention`` before ``now`` (a change of
    such a key older than its delete may then bring it back: the documented retention).

    Returns:
        The action, as a line for the maintenance report.
    """
    before = now - retention
    spark.sql(f"DELETE FROM {ref.sql} WHERE {DELETED_AT} < {sql.literal(before)}").collect()
    return f"PURGE {ref.describe()} deletes recorded before {before:%Y-%m-%d %H:%M:%S} UTC"
