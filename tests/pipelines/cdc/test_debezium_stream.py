"""What Debezium 3.6.1's Postgres connector writes to Kafka for a table's life, run for real.

A real PostgreSQL (``postgres`` fixture), Debezium on Kafka Connect standalone writing to the
session broker, the JSON converter with schemas on (the worker's default). One stream is run
once for the file: a snapshot of two rows, then an insert, an update, a delete, the re-insert
of the deleted key, a column added by ``ALTER TABLE`` and a TRUNCATE. Each test asserts one
thing about the records that stream left on the topic: the behaviour deltasink's CDC format
is built on (issue 61).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pipelines.kafka.broker import EmbeddedBroker
from tests.support import debezium
from tests.support.kafka_connect import ConnectWorker
from tests.support.postgres import PostgresServer
from tests.support.topic_records import TopicRecord, wait_for_records

PREFIX = "stream"
TABLE = "public.items"
TOPIC = debezium.topic(PREFIX, TABLE)
CREATE = """
CREATE TABLE items (id int PRIMARY KEY, name text, qty int);
INSERT INTO items VALUES (1, 'one', 1), (2, 'two', 2);
"""
#: Each statement its own transaction; after it the ops its records carry (None: a tombstone).
CHANGES: list[tuple[str, list[str | None]]] = [
    ("INSERT INTO items VALUES (3, 'three', 3)", ["c"]),
    ("UPDATE items SET qty = 10 WHERE id = 1", ["u"]),
    ("DELETE FROM items WHERE id = 2", ["d", None]),
    ("INSERT INTO items VALUES (2, 'two again', 20)", ["c"]),
    ("ALTER TABLE items ADD COLUMN note text", []),
    ("INSERT INTO items VALUES (4, 'four', 4, 'added')", ["c"]),
    ("UPDATE items SET note = 'noted' WHERE id = 3", ["u"]),
    ("TRUNCATE items", ["t"]),
]
OPS = ["r", "r", *(op for _, ops in CHANGES for op in ops)]


@pytest.fixture(scope="module")
def records(postgres: PostgresServer, broker: EmbeddedBroker,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[TopicRecord]]:
    db = postgres.database("cdc_stream")
    db.sql(CREATE)
    worker = ConnectWorker(tmp_path_factory.mktemp("connect"), broker.bootstrap_servers,
                           {PREFIX: debezium.connector(db, PREFIX, [TABLE])})
    try:
        worker.start()
        debezium.wait_snapshot_done(worker)
        db.sql(";\n".join(sql for sql, _ in CHANGES))
        yield wait_for_records(broker.bootstrap_servers, TOPIC, len(OPS))
    finally:
        worker.stop()
        debezium.drop_slot(db, PREFIX)


def ops(records: list[TopicRecord]) -> list[str | None]:
    return [None if (p := debezium.payload(r)) is None else p["op"] for r in records]


def envelope(record: TopicRecord) -> dict[str, Any]:
    body = debezium.payload(record)
    assert body is not None, f"a tombstone at offset {record.offset}"
    return body


def test_the_snapshot_comes_first_then_every_change_in_commit_order(
        records: list[TopicRecord]) -> None:
    assert ops(records) == OPS
    assert [r.offset for r in records] == list(range(len(OPS)))


def test_snapshot_rows_share_one_position_and_the_changes_follow_it_in_lsn_order(
        records: list[TopicRecord]) -> None:
    events = [envelope(r) for r in records if r.value is not None]
    snapshot = [e["source"] for e in events if e["op"] == "r"]
    streamed = [e["source"] for e in events if e["op"] != "r"]
    assert [s["snapshot"] for s in snapshot] == ["first", "last"]
    assert len({s["lsn"] for s in snapshot}) == 1
    assert {s["snapshot"] for s in streamed} == {"false"}
    positions = [snapshot[0]["lsn"], *(s["lsn"] for s in streamed)]
    assert positions == sorted(set(positions)), "each change at a position of its own, rising"
    assert [envelope(r)["after"] for r in records[:2]] == [
        {"id": 1, "name": "one", "qty": 1}, {"id": 2, "name": "two", "qty": 2}]


def test_the_key_is_the_primary_key_struct_with_its_schema(records: list[TopicRecord]) -> None:
    key = records[0].key_json()
    assert key == {"schema": {"type": "struct", "optional": False,
                              "name": f"{TOPIC}.Key",
                              "fields": [{"type": "int32", "optional": False, "field": "id"}]},
                   "payload": {"id": 1}}


def test_under_the_default_replica_identity_an_update_has_no_before_and_a_delete_only_the_key(
        records: list[TopicRecord]) -> None:
    update, delete = records[3], records[4]
    assert envelope(update)["before"] is None
    assert envelope(update)["after"] == {"id": 1, "name": "one", "qty": 10}
    assert envelope(delete)["before"] == {"id": 2, "name": None, "qty": None}
    assert envelope(delete)["after"] is None


def test_a_delete_is_followed_by_a_tombstone_of_its_key(records: list[TopicRecord]) -> None:
    delete, tombstone = records[4], records[5]
    assert tombstone.value is None
    assert tombstone.key == delete.key
    assert debezium.key_fields(tombstone) == {"id": 2}


def test_a_reinserted_key_comes_back_as_a_create_after_its_tombstone(
        records: list[TopicRecord]) -> None:
    again = records[6]
    assert debezium.key_fields(again) == {"id": 2}
    assert envelope(again)["op"] == "c"
    assert envelope(again)["after"] == {"id": 2, "name": "two again", "qty": 20}


def test_a_column_added_mid_stream_is_in_the_next_events_schema_and_values(
        records: list[TopicRecord]) -> None:
    def after_fields(record: TopicRecord) -> list[str]:
        schema = record.value_json()["schema"]
        after = next(f for f in schema["fields"] if f["field"] == "after")
        return [f["field"] for f in after["fields"]]

    assert after_fields(records[6]) == ["id", "name", "qty"]
    assert after_fields(records[7]) == after_fields(records[8]) == ["id", "name", "qty", "note"]
    assert envelope(records[7])["after"] == {"id": 4, "name": "four", "qty": 4, "note": "added"}
    assert envelope(records[8])["after"] == {"id": 3, "name": "three", "qty": 3,
                                              "note": "noted"}


def test_a_truncate_is_one_event_without_key_before_or_after(records: list[TopicRecord]) -> None:
    truncate = records[-1]
    assert truncate.key is None
    body = envelope(truncate)
    assert (body["op"], body["before"], body["after"]) == ("t", None, None)
    assert body["source"]["table"] == "items"
