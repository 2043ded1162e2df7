"""Schema evolution of an existing target: add what is new, widen what widened, refuse the rest.

Compared by column name with the schema's target struct (:meth:`EventSchema.target_schema`):

* a column the schema has and the table lacks, nullable (an optional field, a header column):
  added with ``ALTER TABLE ... ADD COLUMNS``; old rows read it as null;
* such a column that is required: refused (old rows would break its NOT NULL);
* a struct column (or an array of structs) that gained a field: the field is added in place at
  the schema's position (``ADD COLUMNS (s.f ... AFTER ...)``); old rows read it as null;
* a column or nested field whose type widened (``int`` -> ``bigint``, decimal precision up:
  :mod:`pipelines.sink.widen`): widened in place with ``ALTER TABLE ... ALTER COLUMN ... TYPE``
  when the table has ``delta.enableTypeWidening`` (set it in ``target.properties``); refused
  otherwise, naming the property;
* a narrowed or otherwise changed type, a struct that lost or reordered fields: refused;
* a NOT NULL table column the schema no longer has (a removed or renamed required field):
  refused (every new row would violate it);
* a nullable table column the schema no longer has (a removed optional field): kept, and null
  in new rows (the MERGE inserts the source's columns by name).

Refusals name every column and the migration, and change nothing (every check runs before the
first ALTER). Each ALTER TABLE is its own Delta commit, outside the batch's txn-guarded MERGE,
and that is safe: it changes no row (an added column or field is null in old rows; a widened
type rewrites no file, old files are read with their own type and upcast), so no record can be
lost or duplicated; it is idempotent (a rerun, or a racing start, finds the change made and
does nothing); and it writes no ``txn`` action, so the exactly-once bookkeeping of
(txnAppId, batch id) is untouched. A crash between two of them, or before the next MERGE, leaves
a table part of the way to the schema, which the next start completes. A run of an older
deltasink still writing meets a metadata change, which its MERGE retries as a conflict
(``target.commit_retries``) and then inserts its narrower values, upcast.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import SparkSession
from pyspark.sql.types import StructField, StructType

from pipelines.config.table_properties import TYPE_WIDENING
from pipelines.errors import SchemaError
from pipelines.sink.widen import TypeChanges, compare, dotted, named
from pipelines.sql import ident
from pipelines.storage.tables import TableRef


def plan(actual: StructType, expected: StructType) -> tuple[list[StructField], TypeChanges]:
    """The columns to add to a table with ``actual`` columns, and its type changes.

    Args:
        actual: the existing table's schema.
        expected: the schema's target struct.

    Returns:
        (nullable columns to add, the nested fields, widenings and one problem per
        incompatible column, each with its migration).
    """
    have = {f.name: f for f in actual.fields}
    want = {f.name for f in expected.fields}
    add: list[StructField] = []
    changes = TypeChanges()
    for f in expected.fields:
        sql = f.dataType.simpleString()
        old = have.get(f.name)
        if old is None and f.nullable:
            add.append(f)
        elif old is None:
            changes.problems.append(
                f"new column '{f.name}' ({sql}) is required, but existing rows have no value: "
                f"declare it required: false, or add and backfill it first (ALTER TABLE ... ADD "
                f"COLUMNS (`{f.name}` {sql}); UPDATE ... SET `{f.name}` = ...)")
        else:
            compare(old.dataType, f.dataType, (f.name,), changes)
    for f in actual.fields:
        if f.name not in want and not f.nullable:
            changes.problems.append(
                f"column '{f.name}' is NOT NULL in the table but no longer in the schema (a "
                f"removed or renamed required field): keep the field, or drop the constraint "
                f"first (ALTER TABLE ... ALTER COLUMN `{f.name}` DROP NOT NULL)")
    return add, changes


def _path(path: tuple[str, ...]) -> str:
    return ".".join(ident(p) for p in path)


def _statements(add: list[StructField], changes: TypeChanges) -> list[str]:
    """The ALTER TABLE clauses of a plan, in order: columns, nested fields, widenings."""
    out = []
    if add:
        out.append("ADD COLUMNS (" + ", ".join(
            f"{ident(f.name)} {f.dataType.simpleString()}" for f in add) + ")")
    for n in changes.nested:
        where = f" AFTER {ident(n.after)}" if n.after else " FIRST"
        out.append(f"ADD COLUMNS ({_path((*n.path, n.field.name))} "
                   f"{n.field.dataType.simpleString()}{where})")
    return out + [f"ALTER COLUMN {_path(w.path)} TYPE {w.new.simpleString()}"
                  for w in changes.widen]


def evolve_target(spark: SparkSession, ref: TableRef, expected: StructType,
                  widening: Callable[[], bool]) -> list[str]:
    """Bring an existing target to the schema in place; refuse incompatible changes.

    A no-op for a table that does not exist yet (it is created with every column).

    Args:
        spark: the session.
        ref: the target.
        expected: the schema's target struct.
        widening: whether the table has ``delta.enableTypeWidening`` on (asked only when a
            type widened).

    Returns:
        One line per kind of change made (nested fields added, types widened), for the run.

    Raises:
        SchemaError: one line naming each incompatible column and its migration.
    """
    if not ref.exists(spark):
        return []
    add, changes = plan(ref.read(spark).schema, expected)
    if changes.widen and not widening():
        changes.problems += [
            f"{named(w.path)} widens {w.old.simpleString()} -> {w.new.simpleString()}: set "
            f"target.properties {TYPE_WIDENING}: true to widen it in place (adds the "
            f"typeWidening table feature: readers then need a Delta that knows it), or keep "
            f"{w.old.simpleString()}" for w in changes.widen]
    if changes.problems:
        raise SchemaError(f"the schema changed incompatibly with table {ref.describe()}: "
                          + "; ".join(changes.problems))
    for statement in _statements(add, changes):
        try:
            spark.sql(f"ALTER TABLE {ref.sql} {statement}").collect()
        except Exception:  # a racing start made it first: fine if it is made now
            again, left = plan(ref.read(spark).schema, expected)
            if statement in _statements(again, left):
                raise
    notes = []
    if changes.nested:
        notes.append(f"table {ref.describe()}: added nested field(s) in place: " + ", ".join(
            f"{dotted((*n.path, n.field.name))} {n.field.dataType.simpleString()}"
            for n in changes.nested))
    if changes.widen:
        notes.append(f"table {ref.describe()}: widened in place ({TYPE_WIDENING}): " + ", ".join(
            f"{dotted(w.path)} {w.old.simpleString()} -> {w.new.simpleString()}"
            for w in changes.widen))
    return notes
