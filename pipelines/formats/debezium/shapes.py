"""What a run has learned of its topic's Connect schemas, and the columns a batch lands.

With the JSON converter's schemas on, every record carries its schema, and a topic holds a few
(one per table version: ``ALTER TABLE ... ADD COLUMN`` makes a new one). Each distinct value and
key schema is learned once per run from the records themselves (the first batch, and any batch
with a schema not seen before), by its id: the ``xxhash64`` of its JSON text, computed per
record in the JVM. A record is then decoded with its own schema, chosen by that id
(:mod:`pipelines.formats.debezium.changes`).

A batch's columns (:meth:`Shapes.plan`) are the target's existing data columns (a column
dropped from the table stays, and is null in rows written since), then each learned schema's
new columns, all nullable. A column's type is the pinned one (``schema.fields``), else the
table's when every schema's type fits it without loss, else the schema's own (the tables then
widen the column where Delta can, or the run stops naming the column).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql.types import (
    ByteType,
    DataType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StructField,
    StructType,
)

from pipelines.errors import SchemaError
from pipelines.formats.debezium.connect import ConnectField, ConnectSchemaError, spark_type

_INTEGRAL = (ByteType, ShortType, IntegerType, LongType)


class ShapeError(SchemaError):
    """The topic's records disagree with each other or with the table (one line)."""


def fits(small: DataType, large: DataType) -> bool:
    """Whether every value of ``small`` is a value of ``large`` (no loss on the cast)."""
    if small == large:
        return True
    if isinstance(small, _INTEGRAL) and isinstance(large, _INTEGRAL):
        return _INTEGRAL.index(type(small)) <= _INTEGRAL.index(type(large))
    if isinstance(small, FloatType) and isinstance(large, DoubleType):
        return True
    if isinstance(small, DecimalType) and isinstance(large, DecimalType):
        return small.scale <= large.scale and \
            small.precision - small.scale <= large.precision - large.scale
    return False


def row_schema(envelope: Any) -> ConnectField:
    """The row's struct schema (``after``, else ``before``) of an envelope's value schema.

    Raises:
        ConnectSchemaError: the schema is not a Debezium envelope.
    """
    if not isinstance(envelope, Mapping) or envelope.get("type") != "struct":
        raise ConnectSchemaError("the value schema is not a struct")
    parts = {f.get("field"): f for f in envelope.get("fields") or () if isinstance(f, Mapping)}
    row = parts.get("after") or parts.get("before")
    if row is None or "op" not in parts:
        raise ConnectSchemaError("the value schema has no before/after and op: not a Debezium "
                                 "change event")
    return ConnectField.parse(row, "after")


@dataclass
class Shapes:
    """The schemas a run has seen, by id, and the key's fields.

    Attributes:
        values: value-schema id -> the row's struct schema.
        keys: key-schema id -> the key's struct schema.
        key_names: the key's fields, learned from schema-less keys (``schemas.enable=false``).
        unreadable: schema id -> why it could not be read (its records are quarantined).
    """

    values: dict[int, ConnectField] = field(default_factory=dict)
    keys: dict[int, ConnectField] = field(default_factory=dict)
    key_names: tuple[str, ...] | None = None
    unreadable: dict[int, str] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        """Nothing learned yet."""
        return not (self.values or self.keys or self.key_names or self.unreadable)

    def learn(self, found: Mapping[str, Any]) -> bool:
        """Learn what a batch's observation found; whether anything was new.

        Args:
            found: ``values`` and ``keys`` (lists of ``{"id", "text"}``: a schema's id and JSON
                text) and ``names`` (lists of the fields of schema-less keys).
        """
        new = False
        for item in found.get("values") or ():
            sid = int(item["id"])
            if sid in self.values or sid in self.unreadable:
                continue
            new = True
            try:
                self.values[sid] = row_schema(json.loads(item["text"]))
            except (ValueError, ConnectSchemaError) as exc:
                self.unreadable[sid] = str(exc)
        for item in found.get("keys") or ():
            sid = int(item["id"])
            if sid in self.keys or sid in self.unreadable:
                continue
            new = True
            try:
                self.keys[sid] = ConnectField.parse(json.loads(item["text"]), "key")
            except (ValueError, ConnectSchemaError) as exc:
                self.unreadable[sid] = f"key schema: {exc}"
        for names in found.get("names") or ():
            learned = tuple(str(n) for n in names)
            if learned and learned != self.key_names:
                if self.key_names is not None:
                    raise ShapeError(f"the message keys' fields differ: {list(self.key_names)} "
                                     f"and {list(learned)}")
                self.key_names, new = learned, True
        return new

    def key_columns(self, pinned: Iterable[str] = ()) -> tuple[str, ...]:
        """The key's fields: every key schema's (they must agree), else the learned names.

        Raises:
            ShapeError: two key schemas name different fields.
        """
        found = {tuple(f.name for f in key.fields) for key in self.keys.values()}
        if self.key_names is not None:
            found.add(self.key_names)
        if len(found) > 1:
            raise ShapeError("the message keys' fields differ: "
                             + " and ".join(str(list(k)) for k in sorted(found)))
        return next(iter(found), tuple(pinned))

    def plan(self, existing: StructType, pinned: Mapping[str, DataType],
             keys: Iterable[str] = ()) -> StructType:
        """The batch's row columns (see the module): name and Spark type, all nullable.

        Args:
            existing: the target's data columns now (empty for a new table).
            pinned: ``schema.fields``: column -> its type, which wins.
            keys: the key's columns (typed by the key schemas when no value schema has them).
        """
        learned: dict[str, list[DataType]] = {}
        for schema in [*self.values.values(), *self.keys.values()]:
            for f in schema.fields:
                learned.setdefault(f.name, []).append(spark_type(f))
        have = {f.name: f.dataType for f in existing.fields}
        names = [*have, *(n for n in pinned if n not in have),
                 *(n for n in learned if n not in have and n not in pinned),
                 *(k for k in keys if k not in have and k not in pinned and k not in learned)]
        return StructType([StructField(n, _column_type(n, have.get(n), pinned.get(n),
                                                       learned.get(n, [])), True)
                           for n in names])


def _column_type(name: str, have: DataType | None, pinned: DataType | None,
                 learned: list[DataType]) -> DataType:
    if pinned is not None:
        return pinned
    if have is not None and all(fits(t, have) for t in learned):
        return have
    widest: DataType | None = None
    for kind in learned:
        if widest is None or fits(widest, kind):
            widest = kind
        elif not fits(kind, widest):
            widest = kind  # incompatible versions: the newest; the table refuses it by name
    if widest is None:
        raise ShapeError(f"column {name}: no type known (pin it in schema.fields)")
    return widest
