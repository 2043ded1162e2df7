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

from collections.abc import Mapping
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, StructField, StructType

from pipelines import sql
from pipelines.config.model import TargetConfig
from pipelines.config.upsert import KAFKA_SEQUENCE
from pipelines.errors import ConfigError
from pipelines.sink.dedup import first_per_key
from pipelines.sink.merge import MergeOutcome, outcome
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


def delete_metrics(target: TargetConfig) -> list[Column]:
    """In upsert mode, the count of the batch's deletes, to observe on its one job (``[]`` if
    insert-only)."""
    return [F.count_if(F.col(DELETED)).alias("deletes")] if target.mode == "upsert" else []


def upsert_counts(got: Mapping[str, Any], target: TargetConfig) -> dict[str, int]:
    """``{"deletes": n}``: the batch's latest versions that are deletes (``{}`` if insert-only),
    from the values of :func:`delete_metrics`."""
    if target.mode != "upsert":
        return {}
    return {"deletes": int(got.get("deletes") or 0)}


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
    if target.mode != "upsert":
        return
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
