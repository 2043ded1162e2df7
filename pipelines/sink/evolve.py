"""Schema evolution of an existing target table: add what is new and optional, refuse the rest.

Compared by column name with the schema's target struct (:meth:`EventSchema.target_schema`):

* a column the schema has and the table lacks, nullable (an optional field, a header column):
  added with ``ALTER TABLE ... ADD COLUMNS``; old rows read it as null;
* such a column that is required: refused (old rows would break its NOT NULL);
* a column whose type differs (``int`` -> ``long``, a struct that gained a field): refused;
* a NOT NULL table column the schema no longer has (a removed or renamed required field):
  refused (every new row would violate it);
* a nullable table column the schema no longer has (a removed optional field): kept, and null
  in new rows (the MERGE inserts the source's columns by name).

Refusals name every column and the migration. The ALTER TABLE is its own Delta commit, outside
the batch's txn-guarded MERGE, and that is safe: it only adds nullable columns (no row changes,
so no record can be lost or duplicated), it is idempotent (a rerun, or a racing start, finds the
columns and does nothing), and it writes no ``txn`` action, so the exactly-once bookkeeping of
(txnAppId, batch id) is untouched. A crash between it and the next MERGE leaves a table with
extra nullable columns, which is what the next start would have made anyway.
"""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql.types import StructField, StructType

from pipelines.errors import SchemaError
from pipelines.storage.tables import TableRef


def plan(actual: StructType, expected: StructType) -> tuple[list[StructField], list[str]]:
    """The columns to add to a table with ``actual`` columns, and what cannot be evolved.

    Args:
        actual: the existing table's schema.
        expected: the schema's target struct.

    Returns:
        (nullable columns to add, one problem per incompatible column, each with its migration).
    """
    have = {f.name: f for f in actual.fields}
    want = {f.name for f in expected.fields}
    add: list[StructField] = []
    problems: list[str] = []
    for f in expected.fields:
        sql = f.dataType.simpleString()
        old = have.get(f.name)
        if old is None and f.nullable:
            add.append(f)
        elif old is None:
            problems.append(
                f"new column '{f.name}' ({sql}) is required, but existing rows have no value: "
                f"declare it required: false, or add and backfill it first (ALTER TABLE ... ADD "
                f"COLUMNS (`{f.name}` {sql}); UPDATE ... SET `{f.name}` = ...)")
        elif old.dataType != f.dataType:
            problems.append(
                f"column '{f.name}' is {old.dataType.simpleString()} in the table but {sql} in "
                f"the schema: Delta cannot change a column's type in place; write to a new "
                f"target and copy the rows (INSERT INTO <new> SELECT ..., CAST(`{f.name}` AS "
                f"{sql}) ... FROM <old>), or keep the old type")
    for f in actual.fields:
        if f.name not in want and not f.nullable:
            problems.append(
                f"column '{f.name}' is NOT NULL in the table but no longer in the schema (a "
                f"removed or renamed required field): keep the field, or drop the constraint "
                f"first (ALTER TABLE ... ALTER COLUMN `{f.name}` DROP NOT NULL)")
    return add, problems


def evolve_target(spark: SparkSession, ref: TableRef, expected: StructType, sql_name: str) -> None:
    """Add the schema's new nullable columns to an existing target; refuse incompatible changes.

    A no-op for a table that does not exist yet (it is created with every column).

    Raises:
        SchemaError: one line naming each incompatible column and its migration.
    """
    if not ref.exists(spark):
        return
    add, problems = plan(ref.read(spark).schema, expected)
    if problems:
        raise SchemaError(f"the schema changed incompatibly with table {ref.describe()}: "
                          + "; ".join(problems))
    if not add:
        return
    columns = ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in add)
    try:
        spark.sql(f"ALTER TABLE {sql_name} ADD COLUMNS ({columns})")
    except Exception:  # a racing start added them first: fine if they are all there now
        now = set(ref.read(spark).schema.fieldNames())
        if any(f.name not in now for f in add):
            raise
