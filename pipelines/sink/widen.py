"""How a table's column types may follow a changed schema in place: Delta 4.0's type widening.

With ``delta.enableTypeWidening`` on, ``ALTER TABLE ... ALTER COLUMN <c> TYPE <t>`` changes a
column's type without rewriting a file: old files are read with their own type and upcast. Which
changes Delta 4.0.0 makes is its ``TypeWideningShims.isTypeChangeSupported`` (delta-spark 4.0.0,
for Spark 4.0), mirrored by :func:`widens`:

* byte -> short -> int -> long;
* float -> double; byte, short, int -> double;
* date -> timestamp_ntz;
* decimal -> a decimal with at least as many digits before and after the point;
* byte, short, int -> decimal with at least 10 digits before the point; long -> at least 20.

The same holds inside structs, arrays and maps (``s.a``, ``arr.element``, ``m.value``), and for
partition columns. Anything else is a narrowing or an incompatible change: no in-place path.

Turning the property on adds the ``typeWidening`` table feature: the table protocol goes to
reader version 3 and writer version 7 (table features), and only readers that know the
feature can read the table from then on (Delta 4.0 does; an older engine refuses the table).
Dropping it again takes ``ALTER TABLE ... DROP FEATURE``, which rewrites the widened files. So
it is the user's choice: deltasink never turns it on by itself (``target.properties``).

A struct that gains a field gains it in place too (``ALTER TABLE ... ADD COLUMNS (s.f ...
AFTER ...)``), at the schema's position, so the table's struct stays the schema's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql.types import (
    ArrayType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StructField,
    StructType,
    TimestampNTZType,
)

_INTEGRAL: tuple[type[DataType], ...] = (ByteType, ShortType, IntegerType, LongType)
#: Digits before the point an integer type needs in a decimal (Delta: ``isWiderThan``).
_INT_DIGITS: dict[type[DataType], int] = {ByteType: 10, ShortType: 10, IntegerType: 10,
                                          LongType: 20}


def widens(old: DataType, new: DataType) -> bool:
    """Whether Delta 4.0 changes an atomic column from ``old`` to ``new`` in place."""
    if isinstance(old, _INTEGRAL) and isinstance(new, _INTEGRAL):
        return _INTEGRAL.index(type(old)) < _INTEGRAL.index(type(new))
    if isinstance(new, DoubleType):
        return isinstance(old, FloatType | ByteType | ShortType | IntegerType)
    if isinstance(old, DateType):
        return isinstance(new, TimestampNTZType)
    if isinstance(new, DecimalType):
        if isinstance(old, DecimalType):
            return (old.precision, old.scale) != (new.precision, new.scale) and \
                new.scale >= old.scale and new.precision - new.scale >= old.precision - old.scale
        digits = _INT_DIGITS.get(type(old))
        return digits is not None and new.precision - new.scale >= digits
    return False


def same_type(a: DataType, b: DataType) -> bool:
    """``a == b`` apart from field metadata (Delta keeps a widened field's history there)."""
    return _bare(a) == _bare(b)


def _bare(t: DataType) -> DataType:
    if isinstance(t, StructType):
        return StructType([StructField(f.name, _bare(f.dataType), f.nullable) for f in t.fields])
    if isinstance(t, ArrayType):
        return ArrayType(_bare(t.elementType), t.containsNull)
    if isinstance(t, MapType):
        return MapType(_bare(t.keyType), _bare(t.valueType), t.valueContainsNull)
    return t


@dataclass(frozen=True)
class NestedField:
    """A field to add to a struct column: where, and after which sibling (None: first)."""

    path: tuple[str, ...]
    field: StructField
    after: str | None


@dataclass(frozen=True)
class Widening:
    """A column or nested field whose type widens in place."""

    path: tuple[str, ...]
    old: DataType
    new: DataType


@dataclass
class TypeChanges:
    """What a changed column type needs: nested fields to add, types to widen, and refusals."""

    nested: list[NestedField] = field(default_factory=list)
    widen: list[Widening] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def dotted(path: tuple[str, ...]) -> str:
    """``s.a`` for messages."""
    return ".".join(path)


def named(path: tuple[str, ...]) -> str:
    """``column 'n'`` or ``field 's.a'`` for messages."""
    return f"{'column' if len(path) == 1 else 'field'} '{dotted(path)}'"


def compare(old: DataType, new: DataType, path: tuple[str, ...], out: TypeChanges) -> None:
    """Record in ``out`` how the table's ``old`` type at ``path`` becomes the schema's ``new``."""
    if same_type(old, new):
        return
    if isinstance(old, StructType) and isinstance(new, StructType):
        _compare_structs(old, new, path, out)
    elif isinstance(old, ArrayType) and isinstance(new, ArrayType) and \
            old.containsNull == new.containsNull:
        compare(old.elementType, new.elementType, (*path, "element"), out)
    elif isinstance(old, MapType) and isinstance(new, MapType) and \
            old.valueContainsNull == new.valueContainsNull:
        compare(old.keyType, new.keyType, (*path, "key"), out)
        compare(old.valueType, new.valueType, (*path, "value"), out)
    elif widens(old, new):
        out.widen.append(Widening(path, old, new))
    else:
        kind = "narrows" if widens(new, old) else "changes"
        out.problems.append(
            f"{named(path)} is {old.simpleString()} in the table but {new.simpleString()} "
            f"in the schema, which {kind} it: Delta widens a type in place only (int -> "
            f"bigint, decimal precision up, ...); keep {old.simpleString()}, or write to a new "
            f"target and copy the rows (INSERT INTO <new> SELECT ..., CAST(... AS "
            f"{new.simpleString()}) FROM <old>)")


def _compare_structs(old: StructType, new: StructType, path: tuple[str, ...],
                     out: TypeChanges) -> None:
    have = {f.name: f for f in old.fields}
    want = {f.name for f in new.fields}
    gone = [f.name for f in old.fields if f.name not in want]
    if gone:
        out.problems.append(
            f"struct '{dotted(path)}' has field(s) {', '.join(gone)} in the table but not in "
            "the schema: keep them in the schema (nested fields are optional)")
        return
    kept = [f.name for f in new.fields if f.name in have]
    if kept != [f.name for f in old.fields]:
        out.problems.append(
            f"struct '{dotted(path)}' has its fields in another order in the schema than in "
            f"the table ({', '.join(f.name for f in old.fields)}): declare them in the "
            "table's order")
        return
    previous: str | None = None
    for f in new.fields:
        if f.name not in have:
            out.nested.append(NestedField(path, f, previous))
        elif have[f.name].nullable != f.nullable:
            out.problems.append(f"{named((*path, f.name))} is "
                                f"{'' if have[f.name].nullable else 'NOT '}NULL in the table: "
                                "declare it as the table has it")
        else:
            compare(have[f.name].dataType, f.dataType, (*path, f.name), out)
        previous = f.name
