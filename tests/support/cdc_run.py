"""A table's life in a real PostgreSQL, captured by Debezium on Kafka Connect, and what its
replica and its history must then be: read from the database itself, and from the topic.

``items (id int PRIMARY KEY, name text, price numeric(10,2), seen timestamptz)`` gains a column
``note text`` mid-stream. :func:`database_rows` reads the table as text, value for value;
:func:`replica_rows` reads a replica the same way; :func:`topic_versions` computes, from the
change events on the topic, the history an SCD2 target must hold.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipelines.config.model import PipelineConfig
from tests.support import debezium
from tests.support.kafka_connect import ConnectWorker
from tests.support.postgres import Database
from tests.support.topic_records import TopicRecord

TABLE = "public.items"
CREATE = """
CREATE TABLE items (id int PRIMARY KEY, name text, price numeric(10,2), seen timestamptz);
INSERT INTO items VALUES (1, 'one', 1.50, '2024-02-29 11:45:30.123456+00'),
                         (2, 'two', 2.00, NULL), (3, 'three', NULL, '1969-12-31 23:59:59Z');
"""
#: Each its own transaction, after the snapshot: every op, a column added, a truncate.
CHANGES = [
    "INSERT INTO items VALUES (4, 'four', 4.25, now())",
    "UPDATE items SET name = 'one again', price = 10.10 WHERE id = 1",
    "DELETE FROM items WHERE id = 2",
    "INSERT INTO items VALUES (2, 'two back', 20.00, NULL)",
    "UPDATE items SET price = price WHERE id = 3",  # a change that changes nothing
    "ALTER TABLE items ADD COLUMN note text",
    "UPDATE items SET note = 'noted' WHERE id = 4",
    "TRUNCATE items",
    "INSERT INTO items VALUES (5, 'five', 5.55, '2030-01-01 00:00:00Z', 'after the truncate')",
    "INSERT INTO items VALUES (6, 'six', NULL, NULL, NULL)",
    "UPDATE items SET name = 'six!', note = 'late' WHERE id = 6",
    "UPDATE items SET id = 7 WHERE id = 5",  # a primary key changed: d of 5, c of 7
]
#: The records those make on the topic: 3 snapshot reads, then per change its events (a
#: delete's tombstone included; the ALTER makes none).
RECORDS = 3 + 1 + 1 + 2 + 1 + 1 + 0 + 1 + 1 + 1 + 1 + 1 + 3
COLUMNS = ("id", "name", "price", "seen", "note")
Row = tuple[str, ...]


def database_rows(db: Database) -> list[Row]:
    """The table as text, sorted: numeric as Postgres prints it, timestamps in UTC."""
    noted = db.value("SELECT count(*) FROM information_schema.columns WHERE "
                     "table_name = 'items' AND column_name = 'note'") == "1"
    note = "coalesce(note, '<null>')" if noted else "'<null>'"
    return sorted(tuple(r) for r in db.sql(
        "SELECT id::text, coalesce(name, '<null>'), coalesce(price::text, '<null>'), "
        "coalesce(to_char(seen AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US'), '<null>'), "
        f"{note} FROM items"))


def _text(value: Any) -> str:
    if value is None:
        return "<null>"
    if hasattr(value, "strftime"):
        return str(value.strftime("%Y-%m-%d %H:%M:%S.%f"))
    if isinstance(value, Decimal):
        return str(value)
    return str(value)


def replica_rows(spark: SparkSession, config: PipelineConfig) -> list[Row]:
    """The replica as :func:`database_rows` reads the table (timestamps in UTC)."""
    table = config.target.ref.read(spark)
    note = F.col("note") if "note" in table.columns else F.lit(None).cast("string")
    rows = table.select(
        *COLUMNS[:3], F.date_format(F.col("seen"), "yyyy-MM-dd HH:mm:ss.SSSSSS").alias("seen"),
        note.alias("note")).collect()
    return sorted(tuple(_text(r[c]) for c in COLUMNS) for r in rows)


@dataclass(frozen=True)
class Event:
    """One change event as the topic holds it: key, op, LSN, and the row after."""

    id: int | None
    op: str
    lsn: int
    after: dict[str, Any] | None


def events(records: Iterable[TopicRecord]) -> list[Event]:
    """The change events of the records (tombstones left out)."""
    out = []
    for record in records:
        body = debezium.payload(record)
        if body is None:
            continue
        key = debezium.key_fields(record)
        out.append(Event(None if key is None else int(key["id"]), body["op"],
                         int(body["source"]["lsn"]), body["after"]))
    return out


#: A version of a row: (id, name, note, start LSN, end LSN or None).
Version = tuple[int, str | None, str | None, int, int | None]


def topic_versions(found: Iterable[Event]) -> list[Version]:
    """The history the events make, every column tracked; an event sent twice is one."""
    distinct = {(e.id, e.lsn): e for e in found}
    cuts = sorted(e.lsn for e in distinct.values() if e.op == "t")
    out: list[Version] = []
    for key in sorted({e.id for e in distinct.values() if e.id is not None}):
        mine = [e for e in distinct.values() if e.id == key] + \
            [Event(key, "d", cut, None) for cut in cuts]
        open_: list[Any] | None = None
        values: dict[str, Any] | None = None
        for e in sorted(mine, key=lambda e: e.lsn):
            row = None if e.op == "d" else {c: (e.after or {}).get(c) for c in COLUMNS}
            if row == values and row is not None:
                continue
            if open_ is not None:
                open_[4] = e.lsn
                out.append(tuple(open_))  # type: ignore[arg-type]
                open_ = None
            if row is not None:
                open_ = [key, row["name"], row["note"], e.lsn, None]
            values = row
        if open_ is not None:
            out.append(tuple(open_))  # type: ignore[arg-type]
    return sorted(out, key=lambda v: (v[0], v[3]))


def history_versions(spark: SparkSession, config: PipelineConfig) -> list[Version]:
    """An SCD2 target's versions, as :func:`topic_versions` gives them."""
    table = config.target.ref.read(spark)
    note = F.col("note") if "note" in table.columns else F.lit(None).cast("string")
    rows = table.select(
        "id", "name", note.alias("note"), F.col("__START_AT").cast("long").alias("s"),
        F.col("__END_AT").cast("long").alias("e")).collect()
    return sorted(((int(r["id"]), r["name"], r["note"], int(r["s"]),
                    None if r["e"] is None else int(r["e"])) for r in rows),
                  key=lambda v: (v[0], v[3]))


def capture(db: Database, folder: Path, bootstrap: str, prefix: str,
            flush_ms: int = 60_000) -> ConnectWorker:
    """The table created and snapshotted by a started Connect worker (schemas on)."""
    db.sql(CREATE)
    worker = ConnectWorker(folder, bootstrap, {prefix: debezium.connector(db, prefix, [TABLE])},
                           offset_flush_ms=flush_ms)
    worker.start()
    debezium.wait_snapshot_done(worker)
    return worker
