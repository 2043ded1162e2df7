"""The corpus of real Debezium messages in ``tests/data/debezium/``, captured again and compared.

One Kafka Connect worker runs two Debezium Postgres connectors on the same database: one with
the JSON converter's schemas off, the worker's setting (``corpus_off``), one with them on, its
own override (``corpus_on``). Three tables
(``types``: a column per Postgres type deltasink decodes; ``full_identity``: REPLICA IDENTITY
FULL; ``toasted``: an out-of-line value an update leaves alone) go through a snapshot and then
:data:`CHANGES`. Each topic's records are compared with its file, the fields that differ from
run to run (positions, transaction ids, clocks: :data:`VOLATILE_SOURCE`) masked.

``DELTASINK_WRITE_CORPUS=1`` writes the files instead (``tests/data/debezium/README.md``).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipelines.kafka.broker import EmbeddedBroker
from tests.support import debezium
from tests.support.kafka_connect import ConnectWorker
from tests.support.postgres import PostgresServer
from tests.support.topic_records import TopicRecord, read_jsonl, wait_for_records, write_jsonl

pytestmark = pytest.mark.extended

CORPUS = Path(__file__).resolve().parents[2] / "data" / "debezium"
WRITE = os.environ.get("DELTASINK_WRITE_CORPUS") == "1"
#: topic.prefix: schemas.enable. The worker's converters have schemas off; ``corpus_on`` turns
#: them on for its own key and value (both ways of choosing are then run).
PREFIXES = {"corpus_on": True, "corpus_off": False}
#: The envelope's and the source block's fields that change from one capture to the next.
VOLATILE = ("ts_ms", "ts_us", "ts_ns")
VOLATILE_SOURCE = ("ts_ms", "ts_us", "ts_ns", "txId", "lsn", "sequence")

CREATE = r"""
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE types (
  id int PRIMARY KEY, big bigint, small smallint, name text, active boolean,
  price numeric(12,2), ratio numeric, score double precision,
  born date, wakes time, wakes_ms time(3), seen timestamp, seen_ms timestamp(3),
  seen_tz timestamptz, wakes_tz timetz, doc json, docb jsonb, uid uuid, mood mood, raw bytea);
INSERT INTO types VALUES (1, 9007199254740993, 7, 'Zoë 😀', true, 1234567890.12,
  3.14159265358979, 2.5, '2024-02-29', '13:45:30.123456', '13:45:30.123',
  '2024-02-29 13:45:30.123456', '2024-02-29 13:45:30.123', '2024-02-29 13:45:30.123456+02',
  '13:45:30+02', '{"a": [1, 2],  "kept": "as typed"}', '{"b": {"c": null}, "a": 1}',
  'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'happy', '\xdeadbeef');
INSERT INTO types (id) VALUES (2);
CREATE TABLE full_identity (id int PRIMARY KEY, name text, price numeric(12,2));
ALTER TABLE full_identity REPLICA IDENTITY FULL;
INSERT INTO full_identity VALUES (1, 'one', 1.50);
CREATE TABLE toasted (id int PRIMARY KEY, body text, n int);
ALTER TABLE toasted ALTER COLUMN body SET STORAGE EXTERNAL;
INSERT INTO toasted VALUES (1, repeat('0123456789', 400), 1);
"""
#: Each statement is its own transaction unless wrapped in BEGIN/COMMIT; then the ops it adds to
#: its table's topic (None: a tombstone).
CHANGES: list[tuple[str, str, list[str | None]]] = [
    ("types", "INSERT INTO types VALUES (3, -9223372036854775808, -32768, '', false, -0.01, "
              "1e-20, 'NaN', '1969-07-20', '00:00:00', '23:59:59.999', '1900-01-01 00:00:00', "
              "'1969-12-31 23:59:59.999', '1969-12-31 23:59:59.999999+00', '00:00:00-05:30', "
              "'[]', '[1, \"a\", null]', '00000000-0000-0000-0000-000000000000', 'sad', '')",
     ["c"]),
    ("types", "UPDATE types SET name = 'updated', price = 0 WHERE id = 1", ["u"]),
    ("types", "DELETE FROM types WHERE id = 2", ["d", None]),
    ("types", "INSERT INTO types (id, name) VALUES (2, 'again')", ["c"]),
    ("types", "BEGIN; INSERT INTO types (id, name) VALUES (5, 'in one transaction'); "
              "UPDATE types SET name = 'changed in it' WHERE id = 5; "
              "DELETE FROM types WHERE id = 5; COMMIT", ["c", "u", "d", None]),
    ("types", "UPDATE types SET id = 6 WHERE id = 3", ["d", None, "c"]),  # a key changed
    ("types", "ALTER TABLE types ADD COLUMN added text", []),
    ("types", "INSERT INTO types (id, added) VALUES (4, 'a new column')", ["c"]),
    ("types", "ALTER TABLE types DROP COLUMN small", []),
    ("types", "UPDATE types SET added = 'after a column was dropped' WHERE id = 4", ["u"]),
    ("types", "TRUNCATE types", ["t"]),
    ("full_identity", "UPDATE full_identity SET price = 2.25 WHERE id = 1", ["u"]),
    ("full_identity", "DELETE FROM full_identity WHERE id = 1", ["d", None]),
    ("toasted", "UPDATE toasted SET n = 2 WHERE id = 1", ["u"]),
]
TABLES = ("types", "full_identity", "toasted")
SNAPSHOT = {"types": 2, "full_identity": 1, "toasted": 1}
#: Each table's ops, in offset order (None: a tombstone).
OPS: dict[str, list[str | None]] = {
    table: [*(["r"] * SNAPSHOT[table]), *(op for t, _, ops in CHANGES if t == table for op in ops)]
    for table in TABLES}


def corpus_file(prefix: str, table: str) -> Path:
    return CORPUS / f"{table}.schemas-{'on' if PREFIXES[prefix] else 'off'}.jsonl"


@pytest.fixture(scope="module")
def captured(postgres: PostgresServer, broker: EmbeddedBroker,
             tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[dict[tuple[str, str], list[TopicRecord]]]:
    db = postgres.database("corpus")
    db.sql(CREATE)
    tables = [f"public.{t}" for t in TABLES]
    worker = ConnectWorker(tmp_path_factory.mktemp("connect"), broker.bootstrap_servers,
                           {prefix: debezium.connector(db, prefix, tables,
                                                       schemas=True if schemas else None)
                            for prefix, schemas in PREFIXES.items()}, schemas=False)
    try:
        worker.start()
        debezium.wait_snapshot_done(worker, count=len(PREFIXES))
        db.sql(";\n".join(sql for _, sql, _ in CHANGES))
        yield {(prefix, table): wait_for_records(broker.bootstrap_servers,
                                                 debezium.topic(prefix, f"public.{table}"),
                                                 len(OPS[table]))
               for prefix in PREFIXES for table in TABLES}
    finally:
        worker.stop()
        for prefix in PREFIXES:
            debezium.drop_slot(db, prefix)


def masked(record: TopicRecord) -> dict[str, Any]:
    """The record with its run-to-run fields replaced by ``"<volatile>"``."""
    value = copy.deepcopy(record.value_json())
    if value is not None:  # not a tombstone
        body = value["payload"] if set(value) == {"schema", "payload"} else value
        for name in VOLATILE:
            body[name] = "<volatile>"
        for name in VOLATILE_SOURCE:
            body["source"][name] = "<volatile>"
    return {"key": record.key_json(), "value": value, "topic": record.topic,
            "partition": record.partition, "offset": record.offset}


def ops(records: list[TopicRecord]) -> list[str | None]:
    return [None if (p := debezium.payload(r)) is None else p["op"] for r in records]


@pytest.mark.parametrize("prefix", list(PREFIXES))
@pytest.mark.parametrize("table", TABLES)
def test_debezium_emits_what_the_corpus_holds(
        captured: dict[tuple[str, str], list[TopicRecord]], prefix: str, table: str) -> None:
    records = captured[prefix, table]
    assert ops(records) == OPS[table]
    if WRITE:
        write_jsonl(corpus_file(prefix, table), records)
    assert [masked(r) for r in records] == [masked(r) for r in read_jsonl(
        corpus_file(prefix, table))]


@pytest.mark.parametrize("prefix", list(PREFIXES))
def test_one_transaction_s_changes_share_its_txid_at_rising_lsns(
        captured: dict[tuple[str, str], list[TopicRecord]], prefix: str) -> None:
    events = [p for p in map(debezium.payload, captured[prefix, "types"]) if p is not None]
    in_it = [e["source"] for e in events if (e["after"] or e["before"] or {}).get("id") == 5]
    assert len(in_it) == 3 and len({s["txId"] for s in in_it}) == 1
    assert [s["lsn"] for s in in_it] == sorted({s["lsn"] for s in in_it})
