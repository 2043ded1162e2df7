"""Latest-wins upserts (``target.mode: upsert``): keep-latest in the batch, and the MERGE clauses.

Each key's row in the target is its highest-sequence version. The sequence is
``target.sequence_by`` (a required column) followed by the Kafka coordinates
(``kafka_partition``, ``kafka_offset``, ``kafka_topic``), or the coordinates alone for
``sequence_by: kafka``: a total order, so every replay and every arrival order picks the same
version. The target already stores those columns, so the MERGE compares against them directly.

A delete (``target.delete_when`` true) is a version like any other, stored with
``_deleted = true`` (a tombstone): an older version arriving later is not newer than the
tombstone, so it cannot resurrect the key. Readers filter ``NOT _deleted``.

The MERGE matches on the key alone, over the whole table: a newer version may carry another
``event_date`` (its row moves partition), which a partition-pruned match would miss.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, StructField, StructType

from pipelines import sql
from pipelines.config.model import TargetConfig
from pipelines.config.modes import KAFKA_SEQUENCE
from pipelines.errors import ConfigError
from pipelines.sink.dedup import first_per_key
from pipelines.sink.merge import MergeOutcome, outcome
from pipelines.sink.modes.base import BatchRows, Expectations, WriteMode, key_uniqueness
from pipelines.storage.tables import TableRef
from schemas.base import EventSchema

#: The tombstone flag column, added to the target in upsert mode.
DELETED = "_deleted"
#: The Kafka coordinates that order versions (after ``sequence_by``), and break its ties.
KAFKA_ORDER = ("kafka_partition", "kafka_offset", "kafka_topic")


def sequence_columns(sequence_by: str) -> tuple[str, ...]:
    """The columns that order a key's versions, most significant first."""
    return KAFKA_ORDER if sequence_by == KAFKA_SEQUENCE else (sequence_by, *KAFKA_ORDER)


def keep_latest(events: DataFrame, keys: tuple[str, ...], sequence: tuple[str, ...]
                ) -> DataFrame:
    """Keep one row per key: the highest by ``sequence`` (a total order: deterministic).

    Args:
        events: parsed, valid event rows.
        keys: the key columns (one, or several for a composite key).
        sequence: the ordering columns, most significant first (``sequence_columns``).

    Returns:
        ``events`` with at most one row per key, same columns.
    """
    return first_per_key(events, keys, [F.col(c).desc_nulls_last() for c in sequence])


def flag_deletes(rows: DataFrame, delete_when: str | None) -> DataFrame:
    """``rows`` with ``_deleted``: ``delete_when`` evaluated per row (false when null or unset)."""
    flag = F.coalesce(F.expr(delete_when), F.lit(False)) if delete_when else F.lit(False)
    return rows.withColumn(DELETED, flag)


def latest_versions(events: DataFrame, target: TargetConfig) -> DataFrame:
    """The batch's rows for an upsert MERGE: the latest version per key, flagged."""
    latest = keep_latest(events, target.dedup_keys, sequence_columns(target.sequence_by))
    return flag_deletes(latest, target.delete_when)


def newer(sequence: tuple[str, ...], new: str = "s", old: str = "t") -> str:
    """SQL: ``new`` sorts after ``old`` on ``sequence`` (lexicographic; a null old value
    loses)."""
    def gt(c: str) -> str:
        return f"{sql.column(new, c)} > {sql.column(old, c)} OR {sql.column(old, c)} IS NULL"

    def eq(c: str) -> str:
        return f"{sql.column(new, c)} <=> {sql.column(old, c)}"

    return sql.any_of(sql.all_of([*(eq(p) for p in sequence[:i]), gt(c)]) or "false"
                      for i, c in enumerate(sequence))


def upsert_merge(target: TableRef, source: DataFrame, keys: tuple[str, ...],
                 sequence: tuple[str, ...],
                 target_filter: str | None = None) -> MergeOutcome:
    """Insert new keys; replace a key's row only with a newer version (tombstones included).

    Args:
        target: the Delta table.
        source: at most one row per key, with ``_deleted`` (``latest_versions``).
        keys: the key columns (one, or several for a composite key).
        sequence: the ordering columns (``sequence_columns``).
        target_filter: an extra SQL predicate on the target (``false`` for an empty batch).

    Returns:
        Whether a commit happened, and how many rows it inserted and updated.
    """
    cond = sql.all_of([sql.equal_on(keys), target_filter]) or "true"
    return outcome(target.merge(source, cond,
                                f"WHEN MATCHED AND ({newer(sequence)}) THEN UPDATE SET * "
                                "WHEN NOT MATCHED THEN INSERT *"))


def upsert_schema(target_schema: StructType) -> StructType:
    """The target's columns in upsert mode: the schema's, then the ``_deleted`` flag."""
    return StructType([*target_schema.fields, StructField(DELETED, BooleanType(), True)])


def check_upsert(spark: SparkSession, target: TargetConfig, schema: EventSchema) -> None:
    """Refuse a ``sequence_by`` that is not a required column, or a non-boolean ``delete_when``.

    Raises:
        ConfigError: one line naming the key and the fix.
    """
    columns = schema.target_schema()
    if target.sequence_by != KAFKA_SEQUENCE:
        spec = next((f for f in schema.fields if f.name == target.sequence_by), None)
        if target.sequence_by not in columns.fieldNames():
            raise ConfigError(f"target.sequence_by '{target.sequence_by}' is not a column of "
                              f"schema {schema.name}; use 'kafka' or one of "
                              f"{sorted(columns.fieldNames())}")
        if spec is not None and not spec.required:
            raise ConfigError(f"target.sequence_by '{target.sequence_by}' is optional in schema "
                              f"{schema.name}: a version without it could not be ordered; "
                              "choose a required field or 'kafka'")
    if target.delete_when:
        try:
            kind = (spark.createDataFrame([], columns)
                    .select(F.expr(target.delete_when).alias("d")).schema["d"].dataType)
        except Exception as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ConfigError(f"target.delete_when {target.delete_when!r} is not a valid Spark "
                              f"SQL expression over schema {schema.name}: {first}") from None
        if not isinstance(kind, BooleanType):
            raise ConfigError(f"target.delete_when {target.delete_when!r} is "
                              f"{kind.simpleString()}, not a boolean; write a condition "
                              "such as \"event_type = 'deleted'\"")


class Upsert(WriteMode):
    """Latest-wins upserts on an event topic: one row per key, its highest version or its
    tombstone (``_deleted = true``)."""

    name = "upsert"
    merge_kind = "upsert MERGE"

    def survivor_order(self) -> list[Column]:
        """Highest sequence first (``sequence_by``, then the Kafka coordinates)."""
        return [F.col(c).desc_nulls_last() for c in sequence_columns(self.target.sequence_by)]

    def flag(self, kept: DataFrame, good: Column) -> DataFrame:
        """``_deleted`` on the good rows: ``delete_when`` (false when null or unset)."""
        when = self.target.delete_when
        deleted = F.coalesce(F.expr(when), F.lit(False)) if when else F.lit(False)
        return kept.withColumn(DELETED, F.when(good, deleted))

    def source_columns(self) -> tuple[str, ...]:
        """The tombstone flag."""
        return (DELETED,)

    def metrics(self) -> list[Column]:
        """The batch's deletes (its latest versions that are tombstones)."""
        return [F.count_if(F.col(DELETED)).alias("deletes")]

    def counts(self, got: Mapping[str, Any]) -> dict[str, int]:
        """``{"deletes": n}``."""
        return {"deletes": int(got.get("deletes") or 0)}

    def target_schema(self, base: StructType) -> StructType:
        """The schema's columns, then ``_deleted``."""
        return upsert_schema(base)

    def check(self, spark: SparkSession, schema: EventSchema) -> None:
        """``sequence_by`` is a required column, ``delete_when`` a boolean (see
        :func:`check_upsert`)."""
        check_upsert(spark, self.target, schema)

    def added_columns(self) -> tuple[tuple[str, str], ...]:
        """A table switched from insert-only gets the flag."""
        return ((DELETED, "BOOLEAN"),)

    def merge(self, batch: BatchRows) -> Callable[[], MergeOutcome]:
        """The upsert MERGE (:func:`upsert_merge`).

        Matches on the key across the whole table (no partition literals: a newer version may
        move to another partition). Rows without ``_deleted`` (a redrive's) get it from
        ``delete_when``.
        """
        target = self.target
        rows, values = batch.rows, batch.values
        if DELETED not in rows.columns:
            rows = latest_versions(rows, target)
        empty = "false" if target.prune_by and not any(values.values()) else batch.keyed()
        sequence = sequence_columns(target.sequence_by)
        return lambda: upsert_merge(target.ref, rows, target.dedup_keys, sequence, empty)

    def expectations(self, schema: EventSchema) -> Expectations:
        """One row per key (its latest version or its tombstone); ``_deleted`` exists and is
        never null, nor is the sequence column."""
        target = self.target
        return Expectations(
            unique=key_uniqueness(target.dedup_keys, target.prune_by), exists=(DELETED,),
            not_null=tuple(c for c in (target.sequence_by, DELETED) if c != KAFKA_SEQUENCE))
