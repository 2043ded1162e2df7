"""Create the target and quarantine tables, or check that existing ones fit the schema."""

from __future__ import annotations

import time
from collections.abc import Mapping
from functools import partial

from pyspark.sql import SparkSession
from pyspark.sql.types import (
    BinaryType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from pipelines.config.model import PipelineConfig
from pipelines.config.table_properties import TYPE_WIDENING
from pipelines.errors import DeltasinkError, SchemaError
from pipelines.sink.evolve import evolve_target
from pipelines.sink.modes.choice import mode_for
from pipelines.sink.properties import plan_properties, set_properties, table_properties
from pipelines.sink.widen import same_type
from pipelines.storage.tables import TableRef
from schemas.base import EventSchema

QUARANTINE_SCHEMA = StructType([
    StructField("kafka_topic", StringType(), False),
    StructField("kafka_partition", LongType(), False),
    StructField("kafka_offset", LongType(), False),
    StructField("kafka_timestamp", TimestampType(), True),
    StructField("kafka_key", BinaryType(), True),
    StructField("raw_value", BinaryType(), True),
    StructField("reason", StringType(), False),
    StructField("pipeline", StringType(), False),
    StructField("batch_id", LongType(), False),
    StructField("quarantined_at", TimestampType(), False),
    StructField("record_hash", LongType(), True),  # added later: null in older rows
    StructField("redriven_at", TimestampType(), True),  # set by `quarantine redrive`
    StructField("redriven_version", LongType(), True),  # the target version it landed in
])
#: Columns added to QUARANTINE_SCHEMA after tables were created with it: (name, SQL type).
QUARANTINE_ADDED = (("record_hash", "BIGINT"), ("redriven_at", "TIMESTAMP"),
                    ("redriven_version", "BIGINT"))


def check_compatible(spark: SparkSession, ref: TableRef, expected: StructType) -> None:
    """Fail if an existing table lacks a column, or has it with another type.

    Raises:
        SchemaError: naming each mismatched column.
    """
    actual = {f.name: f.dataType for f in ref.read(spark).schema.fields}
    problems = []
    for f in expected.fields:
        if f.name not in actual:
            problems.append(f"missing column '{f.name}' ({f.dataType.simpleString()})")
        elif not same_type(actual[f.name], f.dataType):
            problems.append(f"column '{f.name}' is {actual[f.name].simpleString()}, "
                            f"expected {f.dataType.simpleString()}")
    if problems:
        raise SchemaError(
            f"existing table {ref.describe()} does not fit this pipeline's schema: "
            + "; ".join(problems)
            + ". Point target at a new location, or migrate the table first.")


def check_dedup_key(key: str, schema: EventSchema) -> None:
    """Refuse a dedup key that a valid record may lack, or hold blank.

    A null key never equals anything in a MERGE, so every copy of such a record would land again;
    a blank one would make all blank-key events one event. Such records must be quarantined, which
    only a required (and, for strings, non-empty) schema field guarantees.

    Raises:
        SchemaError: naming the key and the fix.
    """
    columns = set(schema.target_schema().fieldNames())
    if key not in columns:
        raise SchemaError(f"target.dedup_key '{key}' is not a column of schema {schema.name}; "
                          f"columns are {sorted(columns)}")
    spec = next((f for f in schema.fields if f.name == key), None)
    if spec is not None and not spec.required:
        raise SchemaError(f"target.dedup_key '{key}' is optional in schema {schema.name}: records "
                          "without it could never be deduplicated. Declare it "
                          f"FieldSpec('{key}', ..., required=True) or choose a required key.")
    if spec is not None and spec.kind == "string" and not spec.non_empty:
        raise SchemaError(f"target.dedup_key '{key}' may be blank in schema {schema.name}: all "
                          "blank-key events would count as one. Declare it "
                          f"FieldSpec('{key}', ..., non_empty=True) or choose another key.")


def ensure_sink_tables(spark: SparkSession, config: PipelineConfig,
                       schema: EventSchema) -> list[str]:
    """Create the target and quarantine tables (and the mode's own: a replica's deletes, a
    history's changes) if missing; check them if present.

    An existing table gets the config's table properties it lacks first
    (:mod:`pipelines.sink.properties`: ``delta.enableTypeWidening`` included), then an existing
    target is brought to the schema in place (:mod:`pipelines.sink.evolve`). A change stream's
    target is created with its change and Kafka columns only: the source table's are learned
    from its events and added by its batches (:mod:`pipelines.sink.modes.change_tables`); the
    mode's own tables take the target's properties.

    Returns:
        One line per change made to an existing table (properties set, nested fields added,
        types widened), for the run to say.

    Raises:
        SchemaError: the dedup key or partition columns are not in the schema, or an existing
            table's columns do not match (an incompatible schema change).
        ConfigError: a table property cannot be set on an existing table, or the table's own
            properties break a guarantee of the sink.
    """
    target = config.target
    target_schema = schema.target_schema()
    columns = set(target_schema.fieldNames())
    for key in target.dedup_keys:
        check_dedup_key(key, schema)
    for key, named in (("partition_by", target.partition_by), ("cluster_by", target.cluster_by)):
        unknown = [p for p in named if p not in columns]
        if unknown:
            raise SchemaError(f"target.{key} {unknown} are not columns of schema "
                              f"{schema.name}; columns are {sorted(columns)}")
    mode = mode_for(config)
    mode.check(spark, schema)
    companions = mode.companions(target_schema)
    versioned = not mode.inserts_only
    plans = [plan_properties(spark, ref, props, where, upsert=versioned,
                             quarantine=quarantine) for ref, props, where, quarantine in (
        (target.ref, target.properties, "target.properties", False),
        (target.quarantine_ref, target.quarantine_properties, "target.quarantine_properties",
         True),
        *((ref, target.properties, "target.properties", False) for ref, _ in companions),
    )]  # all checked before anything changes
    notes = [set_properties(spark, plan) for plan in plans if plan is not None]
    add_missing_columns(spark, target.ref, mode.added_columns())
    target_schema = mode.target_schema(target_schema)
    for ref, expected, parts, props in (
        (target.ref, target_schema, target.partition_by, target.properties),
        (target.quarantine_ref, QUARANTINE_SCHEMA, (), target.quarantine_properties),
        *((ref, own, (), target.properties) for ref, own in companions),
    ):
        if expected is QUARANTINE_SCHEMA:
            add_missing_columns(spark, ref, QUARANTINE_ADDED)
        else:
            notes += evolve_target(spark, ref, expected, partial(_widening, spark, ref))
        clustered = target.cluster_by if expected is target_schema else ()
        create_or_check(spark, ref, expected, tuple(parts), props, clustered)
    if target.cluster_by:
        cluster(spark, target.ref, target.cluster_by)
    relax_not_null(spark, target.ref, target_schema)
    return notes


def _widening(spark: SparkSession, ref: TableRef) -> bool:
    """Whether the table has type widening on (asked after its properties were set)."""
    return table_properties(spark, ref).get(TYPE_WIDENING, "").lower() == "true"


def relax_not_null(spark: SparkSession, ref: TableRef, expected: StructType) -> None:
    """Drop the NOT NULL constraint of columns ``expected`` makes nullable (a field made optional).

    A schema that makes a field optional (``events_v1`` -> ``events_v2``) would otherwise fail
    the first MERGE of a record without it. Only ever relaxes: a column made required stays
    nullable in the table (its old rows may be null), and the parser enforces it for new rows.
    """
    if not ref.exists(spark):
        return
    nullable = {f.name for f in expected.fields if f.nullable}
    for f in ref.read(spark).schema.fields:
        if f.name in nullable and not f.nullable:
            try:
                spark.sql(f"ALTER TABLE {ref.sql} ALTER COLUMN `{f.name}` DROP NOT NULL")
            except Exception:  # a concurrent start relaxed it first: fine if it is nullable now
                now = {c.name: c.nullable for c in ref.read(spark).schema.fields}
                if not now.get(f.name):
                    raise


def add_missing_columns(spark: SparkSession, ref: TableRef,
                        columns: tuple[tuple[str, str], ...]) -> None:
    """Add nullable ``columns`` an existing table lacks (``ALTER TABLE ... ADD COLUMNS``).

    A no-op for a missing table (it is created with them) or one that has them all. Two
    pipelines upgrading one table at once: the loser finds the column there on its retry.
    """
    if not columns or not ref.exists(spark):
        return
    have = set(ref.read(spark).schema.fieldNames())
    missing = [f"`{name}` {sql}" for name, sql in columns if name not in have]
    if not missing:
        return
    try:
        spark.sql(f"ALTER TABLE {ref.sql} ADD COLUMNS ({', '.join(missing)})")
    except Exception:
        have = set(ref.read(spark).schema.fieldNames())
        if any(name not in have for name, _ in columns):
            raise


def create_or_check(spark: SparkSession, ref: TableRef, expected: StructType,
                    partition_by: tuple[str, ...], properties: Mapping[str, str] | None = None,
                    cluster_by: tuple[str, ...] = (),
                    attempts: int = 5) -> None:
    """Create ``ref`` if missing, else check its schema; safe when writers race to create it.

    A table created here gets ``properties``; one that a racing writer created, or a killed
    creation left, gets those it lacks afterwards (:mod:`pipelines.sink.properties`, nothing
    to do when they match). Two pipelines starting on one new table both try to create it: one
    gets Delta's ProtocolChangedException, or reads the table before its first commit. Either
    way it waits a moment and looks again, and then finds the table and checks it.

    Raises:
        SchemaError: the existing table does not fit ``expected``.
    """
    for attempt in range(attempts):
        try:
            if ref.exists(spark):
                check_compatible(spark, ref, expected)
            else:
                ref.create_if_missing(spark, expected, partition_by, properties, cluster_by)
                plan = plan_properties(spark, ref, properties or {}, "table properties",
                                       upsert=False, quarantine=False)
                if plan is not None:  # a racing writer's table, or a recovered leftover
                    set_properties(spark, plan)
            return
        except DeltasinkError:
            raise
        except Exception:
            if attempt == attempts - 1:
                raise
            time.sleep(0.5 * (attempt + 1))


def cluster(spark: SparkSession, ref: TableRef, columns: tuple[str, ...]) -> None:
    """Make an existing target clustered by ``columns`` (``target.cluster_by``).

    A table created by this run already is. A clustered table with other columns takes them in
    place (``ALTER TABLE ... CLUSTER BY``: a metadata commit of its own, outside the batch's
    txn-guarded MERGE; it changes no row and writes no ``txn`` action, and a rerun finds the
    columns set and does nothing). A partitioned table cannot become a clustered one in place.

    Raises:
        SchemaError: the target is partitioned.
    """
    detail = ref.detail(spark)
    partitions = list(detail["partitionColumns"] or [])
    if partitions:
        raise SchemaError(
            f"target {ref.describe()} is partitioned by {partitions}, and target.cluster_by "
            "applies when a table is created: leave cluster_by out for this table, or point "
            "the target at a new location and copy the rows")
    have = list(detail["clusteringColumns"] or [])
    if have != list(columns):
        spark.sql(f"ALTER TABLE {ref.sql} CLUSTER BY "
                  f"({', '.join(f'`{c}`' for c in columns)})").collect()
