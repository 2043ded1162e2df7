"""A real PostgreSQL table's life through Debezium into Delta: its replica and its history.

One stream for the file (``tests/support/cdc_run.py``): a snapshot, then every op, a column
added mid-stream, a truncate, a primary key changed. Then ``run_pipeline`` lands the topic
twice, as a replica (``target.mode: upsert``) and as a history (``scd2``), each validated by
its quality suite; the replica is compared with the database value for value, the history with
the versions the topic's events make (its current versions with the database too).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.config.model import PipelineConfig
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.run import run_pipeline
from pipelines.sink.metrics import RunResult
from tests.support import debezium
from tests.support.cdc_run import (
    CHANGES,
    RECORDS,
    TABLE,
    capture,
    database_rows,
    events,
    history_versions,
    replica_rows,
    topic_versions,
)
from tests.support.configs import change_stream_config
from tests.support.postgres import Database, PostgresServer
from tests.support.topic_records import TopicRecord, wait_for_records

PREFIX = "cdcrun"
TOPIC = debezium.topic(PREFIX, TABLE)


@dataclass
class Stream:
    db: Database
    bootstrap: str
    records: list[TopicRecord]


@pytest.fixture(scope="module")
def stream(postgres: PostgresServer, broker: EmbeddedBroker,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stream]:
    db = postgres.database("cdc_run")
    worker = capture(db, tmp_path_factory.mktemp("connect"), broker.bootstrap_servers, PREFIX)
    try:
        db.sql(";\n".join(CHANGES))
        yield Stream(db, broker.bootstrap_servers,
                     wait_for_records(broker.bootstrap_servers, TOPIC, RECORDS))
    finally:
        worker.stop()
        debezium.drop_slot(db, PREFIX)


def land(spark: SparkSession, lake: Path, stream: Stream, mode: str) -> tuple[PipelineConfig,
                                                                              RunResult]:
    cfg = change_stream_config(lake, topic=TOPIC, name=f"items_{mode}", mode=mode,
                               bootstrap=stream.bootstrap, source={"topics": [TOPIC],
                                                                   "max_records_per_batch": 9})
    result = run_pipeline(spark, cfg, validate=True, progress=lambda _l: None)
    return cfg, result


def test_the_replica_is_the_database_table_value_for_value(
        spark: SparkSession, stream: Stream, lake: Path) -> None:
    cfg, result = land(spark, lake, stream, "upsert")
    assert replica_rows(spark, cfg) == database_rows(stream.db)
    assert len(result.batches) >= 2  # a key's changes in two batches (2, 6 and the truncate)
    assert result.quarantined == 0 and result.records_in == RECORDS
    assert sum(b.skipped for b in result.batches) == 2  # the tombstones of the two deletes


def test_the_history_holds_every_version_once_and_its_current_ones_are_the_table(
        spark: SparkSession, stream: Stream, lake: Path) -> None:
    cfg, result = land(spark, lake, stream, "scd2")
    history = history_versions(spark, cfg)
    assert history == topic_versions(events(stream.records))
    current = {(v[0], v[1], v[2]) for v in history if v[4] is None}
    table = {(int(r[0]), None if r[1] == "<null>" else r[1], None if r[4] == "<null>" else r[4])
             for r in database_rows(stream.db)}
    assert current == table
    assert result.quarantined == 0
