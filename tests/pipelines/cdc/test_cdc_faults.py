"""A real change stream through the faults of issue 61, end to end: Kafka Connect SIGKILLed
between its offset flushes (it sends again), and before its first flush (it takes the snapshot
again); deltasink SIGKILLed between a batch's side write and its target commit, in a classic
run and over Spark Connect. Each target is then compared with the database: the replica row
for row, the history version for version.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.config.model import PipelineConfig
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.ledger import state
from pipelines.runtime.connect_server import ConnectServer
from tests.support import debezium, runner
from tests.support.cdc_run import (
    CHANGES,
    TABLE,
    Event,
    capture,
    database_rows,
    events,
    history_versions,
    replica_rows,
    topic_versions,
)
from tests.support.configs import change_stream_config
from tests.support.kafka_connect import ConnectWorker
from tests.support.postgres import Database, PostgresServer
from tests.support.topic_records import TopicRecord, read_topic, wait_for_records

pytestmark = pytest.mark.extended

TEN_MINUTES = 600_000


@dataclass
class Stream:
    db: Database
    worker: ConnectWorker
    bootstrap: str
    topic: str

    def records(self) -> list[TopicRecord]:
        return read_topic(self.bootstrap, self.topic)

    def fence(self, key: int) -> list[TopicRecord]:
        """Insert row ``key``; every record up to its create (what was sent again is before)."""
        self.db.sql(f"INSERT INTO items (id, name) VALUES ({key}, 'fence')")
        records = self.records()
        while not any(debezium.key_fields(r) == {"id": key} for r in records):
            records = wait_for_records(self.bootstrap, self.topic, len(records) + 1)
        return records


@pytest.fixture(scope="module")
def resent(postgres: PostgresServer, broker: EmbeddedBroker,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stream]:
    """The table's life, with Connect SIGKILLed after its second half, before a flush: the
    second half is sent again at higher offsets."""
    db = postgres.database("cdc_faults")
    prefix = "faults"
    worker = capture(db, tmp_path_factory.mktemp("connect"), broker.bootstrap_servers,
                     prefix, flush_ms=TEN_MINUTES)
    stream = Stream(db, worker, broker.bootstrap_servers, debezium.topic(prefix, TABLE))
    try:
        db.sql(";\n".join(CHANGES[:4]))
        worker.restart()  # a graceful stop flushes: nothing sent again
        before = len(stream.fence(100))
        db.sql(";\n".join(CHANGES[4:]))
        sent = wait_for_records(stream.bootstrap, stream.topic, before + 9)
        worker.kill()  # between two flushes
        worker.start()
        again = stream.fence(101)[len(sent):-1]
        seen = {(r.key, e.lsn) for r, e in zip(sent, events_or_none(sent), strict=True) if e}
        assert len(again) >= 9 and all(
            (r.key, e.lsn) in seen for r, e in zip(again, events_or_none(again), strict=True)
            if e), "Connect did not send its changes again"
        yield stream
    finally:
        worker.stop()
        debezium.drop_slot(db, prefix)


def events_or_none(records: list[TopicRecord]) -> list[Event | None]:
    """Each record's event (None for a tombstone)."""
    return [next(iter(events([r])), None) for r in records]


def config(lake: Path, stream: Stream, mode: str, **extra: object) -> tuple[Path,
                                                                             PipelineConfig]:
    name = f"faults_{mode}"
    cfg = change_stream_config(lake, topic=stream.topic, name=name, mode=mode,
                               bootstrap=stream.bootstrap,
                               source={"max_records_per_batch": 8}, **extra)  # type: ignore[arg-type]
    return lake / f"{name}.yml", cfg


def txn_versions(table: str) -> set[int]:
    """The txnVersions (batch ids) a Delta table's log holds commits of."""
    found = set()
    for log in (Path(table) / "_delta_log").glob("*.json"):
        for line in log.read_text().splitlines():
            action = json.loads(line)
            if "txn" in action:
                found.add(int(action["txn"]["version"]))
    return found


def killed_then_resumed(spark: SparkSession, path: Path, cfg: PipelineConfig) -> None:
    """Killed after batch 1's side write (its deletes or changes), before its target commit;
    then run again to the end."""
    killed = runner.run(path, fault="after_side_commit@1")
    assert killed.returncode in (-signal.SIGKILL, 1), killed.stderr[-3000:]
    side = cfg.companion_tables()[0][1].path or ""
    committed = {c.batch_id for c in state.sink_commits(spark, cfg.target.ref, cfg.name)}
    assert 1 in txn_versions(side) and 1 not in committed, (committed, killed.stderr[-2000:])
    done = runner.run(path, validate=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def test_a_resent_stream_and_a_killed_run_leave_the_replica_equal_to_the_table(
        spark: SparkSession, resent: Stream, lake: Path) -> None:
    path, cfg = config(lake, resent, "upsert")
    killed_then_resumed(spark, path, cfg)
    assert replica_rows(spark, cfg) == database_rows(resent.db)


def test_a_resent_stream_and_a_run_killed_over_spark_connect_leave_every_version_once(
        spark: SparkSession, resent: Stream, lake: Path, connect_server: ConnectServer) -> None:
    path, cfg = config(lake, resent, "scd2", spark={"remote": connect_server.url})
    killed_then_resumed(spark, path, cfg)
    assert history_versions(spark, cfg) == topic_versions(events(resent.records()))
    current = {(v[0], v[1], v[2]) for v in history_versions(spark, cfg) if v[4] is None}
    rows = database_rows(resent.db)
    assert current == {(int(r[0]), None if r[1] == "<null>" else r[1],
                        None if r[4] == "<null>" else r[4]) for r in rows}


def test_a_snapshot_taken_again_adds_no_version_and_changes_no_row(
        spark: SparkSession, postgres: PostgresServer, broker: EmbeddedBroker,
        lake: Path, tmp_path: Path) -> None:
    db = postgres.database("cdc_resnap")
    prefix = "cdc_resnap"  # its own topic: test_debezium_restarts uses "resnap"
    worker = capture(db, tmp_path / "connect", broker.bootstrap_servers, prefix,
                     flush_ms=TEN_MINUTES)
    stream = Stream(db, worker, broker.bootstrap_servers, debezium.topic(prefix, TABLE))
    try:
        db.sql(";\n".join(CHANGES[:2]))
        wait_for_records(stream.bootstrap, stream.topic, 5)
        assert worker.flushed_offsets() == {}
        worker.kill()  # before any flush: the restart takes the snapshot again
        worker.start()
        debezium.wait_snapshot_done(worker, count=2)
        stream.fence(100)
        (lake / "history").mkdir()
        (lake / "replica").mkdir()
        path, cfg = config(lake / "history", stream, "scd2")
        done = runner.run(path, validate=True)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        found = events(stream.records())
        assert sum(e.op == "r" for e in found) == 3 + 4  # 3 rows, then all 4 again
        history = history_versions(spark, cfg)
        assert history == topic_versions(found)
        assert len(history) == 6  # row 1 changed once, 5 rows: no version for the reads again
        path, replica = config(lake / "replica", stream, "upsert")
        assert runner.run(path, validate=True).returncode == 0
        assert replica_rows(spark, replica) == database_rows(db)
    finally:
        worker.stop()
        debezium.drop_slot(db, prefix)
