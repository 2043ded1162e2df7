"""Debezium is at-least-once: what a restarted Kafka Connect sends again, run for real.

Connect flushes a task's source offsets every ``offset.flush.interval.ms`` and at a graceful
stop. Here the interval is ten minutes, so within a test the only flush is a graceful stop's,
and a SIGKILL after changes is a kill between two flushes. What follows each restart is read
up to a *fence*: a row inserted after the restart, whose record comes after anything sent again
(Debezium replays the slot in LSN order before it streams new changes).

These are the failures deltasink's CDC format must survive (issue 61): a change sent again with
the same source position (``source.lsn``) at a higher Kafka offset, and, with no offsets
flushed at all, the whole snapshot taken again.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pipelines.kafka.broker import EmbeddedBroker
from tests.support import debezium
from tests.support.kafka_connect import ConnectWorker
from tests.support.postgres import Database, PostgresServer
from tests.support.topic_records import TopicRecord, read_topic, wait_for_records

pytestmark = pytest.mark.extended

TABLE = "public.items"
TEN_MINUTES = 600_000
CREATE = """
CREATE TABLE items (id int PRIMARY KEY, qty int);
INSERT INTO items VALUES (1, 1), (2, 2);
"""


def event(record: TopicRecord) -> tuple[Any, ...]:
    """What a record says, without where it sits: key, op, source position, after."""
    body = debezium.payload(record)
    if body is None:
        return (record.key, None, None, None)
    return (record.key, body["op"], body["source"]["lsn"], body["after"])


@dataclass
class Run:
    """A worker, its database and topic, and the records read at each step."""

    worker: ConnectWorker
    db: Database
    bootstrap: str
    topic: str
    seen: dict[str, list[TopicRecord]] = field(default_factory=dict)
    offsets: dict[str, dict[str, Any]] = field(default_factory=dict)

    def wait(self, step: str, count: int) -> list[TopicRecord]:
        self.seen[step] = wait_for_records(self.bootstrap, self.topic, count)
        self.offsets[step] = self.worker.flushed_offsets()
        return self.seen[step]

    def fence(self, step: str, key: int) -> list[TopicRecord]:
        """Insert row ``key`` and return the records after ``step``'s, up to its create."""
        before = len(self.seen[step])
        self.db.sql(f"INSERT INTO items VALUES ({key}, 0)")
        records = wait_for_records(self.bootstrap, self.topic, before + 1)
        while debezium.key_fields(records[-1]) != {"id": key}:
            records = wait_for_records(self.bootstrap, self.topic, len(records) + 1)
        return records[before:-1]


def start_run(postgres: PostgresServer, broker: EmbeddedBroker, folder: Path,
              name: str) -> Run:
    db = postgres.database(name)
    db.sql(CREATE)
    worker = ConnectWorker(folder, broker.bootstrap_servers,
                           {name: debezium.connector(db, name, [TABLE])},
                           offset_flush_ms=TEN_MINUTES)
    return Run(worker, db, broker.bootstrap_servers, debezium.topic(name, TABLE))


@pytest.fixture(scope="module")
def kills(postgres: PostgresServer, broker: EmbeddedBroker,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    """Snapshot and two changes, a graceful restart (fenced), two more changes, a SIGKILL
    before any flush, a restart (fenced)."""
    run = start_run(postgres, broker, tmp_path_factory.mktemp("connect"), "kills")
    try:
        run.worker.start()
        debezium.wait_snapshot_done(run.worker)
        run.db.sql("INSERT INTO items VALUES (3, 3); UPDATE items SET qty = 20 WHERE id = 2")
        run.wait("first run", 4)
        run.worker.restart()
        run.seen["after the graceful restart"] = run.fence("first run", 100)
        run.wait("fenced", 5)
        run.db.sql("DELETE FROM items WHERE id = 1; INSERT INTO items VALUES (4, 4)")
        run.wait("before the kill", 8)
        run.worker.kill()
        run.worker.start()
        run.seen["after the kill"] = run.fence("before the kill", 101)
        yield run
    finally:
        run.worker.stop()
        debezium.drop_slot(run.db, "kills")


def test_a_graceful_restart_sends_nothing_again(kills: Run) -> None:
    assert kills.seen["after the graceful restart"] == []
    flushed = kills.offsets["fenced"]['["kills",{"server":"kills"}]']
    assert flushed["lsn"] == event(kills.seen["first run"][-1])[2]  # the stop flushed the last


def test_a_kill_between_offset_flushes_resends_its_changes_at_higher_offsets_same_lsn(
        kills: Run) -> None:
    sent = kills.seen["before the kill"][4:]  # all since the graceful stop's flush
    again = kills.seen["after the kill"]
    assert [event(r)[1] for r in sent] == ["c", "d", None, "c"]  # fence, delete, tombstone, c
    assert [event(r) for r in again] == [event(r) for r in sent]
    assert min(r.offset for r in again) > max(r.offset for r in sent)
    sources = [(p or {}).get("source") for p in map(debezium.payload, sent)]
    assert [(p or {}).get("source") for p in map(debezium.payload, again)] == sources, \
        "the whole source block (lsn, txId, sequence, ts_ms) is sent again unchanged"
    assert kills.offsets["before the kill"] == kills.offsets["fenced"], \
        "no offset flush came between the graceful stop and the kill"


def test_a_kill_before_the_first_offset_flush_takes_the_snapshot_again(
        postgres: PostgresServer, broker: EmbeddedBroker, tmp_path: Path) -> None:
    run = start_run(postgres, broker, tmp_path / "connect", "resnap")
    try:
        run.worker.start()
        debezium.wait_snapshot_done(run.worker)
        run.db.sql("INSERT INTO items VALUES (3, 3); UPDATE items SET qty = 20 WHERE id = 2")
        run.wait("first run", 4)
        assert run.worker.flushed_offsets() == {}
        run.worker.kill()
        run.worker.start()
        debezium.wait_snapshot_done(run.worker, count=2)
        again = wait_for_records(run.bootstrap, run.topic, 7)[4:]
        first_lsn = event(run.seen["first run"][0])[2]
        # Every current row once more as a read, at a later position; the two streamed
        # changes are not re-sent: the new snapshot holds their result.
        assert sorted(((event(r)[1], event(r)[3]) for r in again), key=str) == [
            ("r", {"id": 1, "qty": 1}), ("r", {"id": 2, "qty": 20}), ("r", {"id": 3, "qty": 3})]
        assert len({event(r)[2] for r in again}) == 1
        assert event(again[0])[2] > first_lsn
        assert len(read_topic(run.bootstrap, run.topic)) == 7
    finally:
        run.worker.stop()
        debezium.drop_slot(run.db, "resnap")
