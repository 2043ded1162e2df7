"""The tables of a change stream's modes: their columns follow the source table's, their key is
the message key's.

A change stream's columns are learned from its events, batch by batch
(``pipelines/formats/debezium/shapes.py``), so before a batch's commits its target (and the
mode's own table beside it) gains the columns the batch brings: ``ALTER TABLE ... ADD COLUMNS``,
nullable, through :func:`pipelines.sink.evolve.evolve_target`, which widens a column whose type
widened in the database (``ALTER COLUMN ... TYPE``) where the table has
``delta.enableTypeWidening`` (``target.properties``), and otherwise refuses it in one line that
names the property. The key the target was first written with is recorded in a table
property, :data:`KEY_PROPERTY`; a stream whose key changes (another primary key) is refused.

Each of these is a commit of its own, outside the batch's txn, and that is safe for the reason
``evolve.py`` gives: it adds nullable columns or a property, changes no row, writes no ``txn``
action, and is idempotent (the next attempt finds it done). It must not run inside the txn: a
commit there would take the batch's (app id, batch id), and the batch's MERGE would then be
skipped as a replay.
"""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql.types import ArrayType, DataType, MapType, StructType, TimestampNTZType

from pipelines import sql
from pipelines.config.model import PipelineConfig
from pipelines.config.table_properties import TYPE_WIDENING
from pipelines.errors import SchemaError
from pipelines.sink.evolve import evolve_target
from pipelines.sink.properties import table_properties
from pipelines.storage.tables import TableRef

#: The table property that names a change stream target's key columns (comma-separated).
KEY_PROPERTY = "deltasink.cdc.key"
_NTZ_FEATURE = "delta.feature.timestampNtz"


def _has_ntz(kind: DataType) -> bool:
    if isinstance(kind, TimestampNTZType):
        return True
    if isinstance(kind, StructType):
        return any(_has_ntz(f.dataType) for f in kind.fields)
    if isinstance(kind, ArrayType):
        return _has_ntz(kind.elementType)
    if isinstance(kind, MapType):
        return _has_ntz(kind.keyType) or _has_ntz(kind.valueType)
    return False


def fit_columns(spark: SparkSession, ref: TableRef, wanted: StructType) -> None:
    """Give ``ref`` every column of ``wanted`` it lacks (nullable; a ``timestamp_ntz`` one
    turns on Delta's ``timestampNtz`` table feature first).

    Raises:
        SchemaError: a column's type differs and cannot be changed (one line naming it).
    """
    actual = ref.read(spark).schema
    have = {f.name: f for f in actual.fields}
    new = [f for f in wanted.fields if f.name not in have]
    if not new and all(have[f.name].dataType == f.dataType for f in wanted.fields):
        return
    if any(_has_ntz(f.dataType) for f in new):
        spark.sql(f"ALTER TABLE {ref.sql} SET TBLPROPERTIES "
                  f"({sql.literal(_NTZ_FEATURE)} = 'supported')")
    want = {f.name: f for f in wanted.fields}
    expected = StructType([
        *(f if f.name not in want else type(f)(f.name, want[f.name].dataType, f.nullable)
          for f in actual.fields), *new])
    evolve_target(spark, ref, expected, lambda: table_properties(spark, ref).get(
        TYPE_WIDENING, "").lower() == "true")


def recorded_key(spark: SparkSession, ref: TableRef) -> tuple[str, ...] | None:
    """The key columns recorded on ``ref`` (:data:`KEY_PROPERTY`), or None."""
    if not ref.exists(spark):
        return None
    rows = spark.sql(f"SHOW TBLPROPERTIES {ref.sql} ({sql.literal(KEY_PROPERTY)})").collect()
    text = str(rows[0]["value"]) if rows else ""
    if not text or "does not have" in text:
        return None
    return tuple(text.split(","))


def record_key(spark: SparkSession, ref: TableRef, keys: tuple[str, ...]) -> None:
    """Record ``keys`` on ``ref``, or check they are the ones recorded.

    Raises:
        SchemaError: the table was written with another key.
    """
    if not keys:
        return
    recorded = recorded_key(spark, ref)
    if recorded == keys:
        return
    if recorded is not None:
        raise SchemaError(
            f"the change stream's key is now ({', '.join(keys)}) but {ref.describe()} was "
            f"written keyed on ({', '.join(recorded)}): a new primary key makes a new table; "
            "point target at a new location (or table) and start the pipeline from the "
            "snapshot")
    spark.sql(f"ALTER TABLE {ref.sql} SET TBLPROPERTIES "
              f"({sql.literal(KEY_PROPERTY)} = {sql.literal(','.join(keys))})")


def keyed(spark: SparkSession, config: PipelineConfig) -> PipelineConfig:
    """``config`` with its change stream's key as ``target.dedup_key``, as the target records
    it (unchanged for an event topic, or a target no batch has written yet)."""
    if not config.change_stream:
        return config
    keys = recorded_key(spark, config.target.ref)
    if not keys:
        return config
    target = config.target.model_copy(update={"dedup_key": keys})
    return config.model_copy(update={"target": target})
