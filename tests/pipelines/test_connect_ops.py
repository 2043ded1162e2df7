"""Operator actions through Spark Connect: a rolled-back checkpoint, ``rewind``, ``replay``,
two writers on one checkpoint, an upsert pipeline, and Avro with a ``quarantine redrive``, each
a ``deltasink`` process with ``spark.remote`` set against Spark's own Connect server. One topic
and one pipeline carry the operator actions in turn (the runs are shared, to keep ``make test``
within its budget); after each, ``tests/support/checker.py`` proves every event landed once.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from pyspark.sql import SparkSession

from pipelines.config.loader import load_config
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import produce_events
from pipelines.kafka.topics import ensure_topic
from pipelines.runtime.connect_server import ConnectServer
from tests.support import runner
from tests.support.checker import check
from tests.support.checkpoint_files import roll_back
from tests.support.clicks import DECLARED, V1, click, wire
from tests.support.configs import write_config
from tests.support.crashes import assert_killed_over_connect_after_the_target_commit_of_batch_1
from tests.support.registry import running_registry

pytestmark = pytest.mark.slow


def _ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    return done.stdout


@pytest.mark.extended
def test_rollback_rewind_replay_and_a_second_writer_over_spark_connect(
        connect_server: ConnectServer, broker: EmbeddedBroker, lake: Path,
        request: pytest.FixtureRequest) -> None:
    topic = f"connect-ops-{uuid.uuid4().hex[:8]}"
    bootstrap = broker.bootstrap_servers
    path = write_config(lake, bootstrap, topic, spark={"remote": connect_server.url},
                        source={"max_records_per_batch": 150})
    cfg = load_config(path, environ={})
    spark: SparkSession = request.getfixturevalue("spark")
    # ~333 records at 150 a batch: 3 batches, so a roll-back by two leaves one behind.
    sends = [produce_events(bootstrap, topic, 300, duplicate_rate=0.1, poison_rate=0.01,
                            seed=31)]

    def verdict() -> None:
        got = check(spark, cfg, [e for s in sends for e in s.event_ids],
                    sum(sum(s.poison.values()) for s in sends))
        assert got.clean, got

    _ok(runner.run(path))
    after_first = cfg.target.ref.latest_version(spark)
    planned = [p for p in (Path(cfg.checkpoint) / "offsets").iterdir() if p.name.isdigit()]
    assert len(planned) >= 3, sorted(p.name for p in planned)

    # The checkpoint rolled back by two batches while new records arrive: caught, retired (a
    # record written through Spark: nothing to rename over Connect), re-read from the table.
    sends.append(produce_events(bootstrap, topic, 150, duplicate_rate=0.1, poison_rate=0.01,
                                seed=32, id_prefix="b"))
    roll_back(cfg.checkpoint, 2)
    out = _ok(runner.run(path))
    assert "checkpoint does not match the target" in out, out[-3000:]
    verdict()

    # rewind to the first run's version: the second run's rows go and come back, once.
    out = _ok(runner.deltasink("rewind", "--config", str(path), "--to-version",
                               str(after_first)))
    assert "retired; the next run starts at" in out, out
    assert cfg.target.ref.read(spark).count() == len(sends[0].event_ids)

    # The run that brings them back is the first of two writers: it holds a batch open in the
    # server's worker; the second is refused in one line, and the first then finishes.
    gate = lake / "gate"
    gate.mkdir()
    env = dict(runner.cold_env(), DELTASINK_FAULT=f"pause_in_batch={gate}")
    first = subprocess.Popen([runner.DELTASINK, "run", "--config", str(path), "--no-validate"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while not any(gate.glob("ready-*")):
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "the first writer never reached its batch"
            time.sleep(0.5)
        second = runner.run(path)
        assert second.returncode == 1, second.stdout[-2000:] + second.stderr[-2000:]
        said = second.stdout + second.stderr
        assert f"pipeline {cfg.name} is already running on checkpoint" in said, said[-3000:]
        assert "Traceback" not in said
        (gate / "go").write_text("")
        out, err = first.communicate(timeout=300)
        assert first.returncode == 0, out[-3000:] + err[-3000:]
    finally:
        runner.killpg(first)
    verdict()

    # replay from the start: nothing is written twice; its checkpoint cannot be deleted from a
    # Connect client, and it says so.
    out = _ok(runner.deltasink("replay", "--config", str(path), "--from-timestamp",
                               "2000-01-01T00:00:00"))
    assert "is left in place" in out, out[-3000:]
    verdict()


@pytest.mark.extended
def test_an_upsert_pipeline_over_spark_connect_keeps_one_row_per_key(
        connect_server: ConnectServer, broker: EmbeddedBroker, lake: Path,
        request: pytest.FixtureRequest) -> None:
    topic = f"connect-upsert-{uuid.uuid4().hex[:8]}"
    path = write_config(lake, broker.bootstrap_servers, topic,
                        spark={"remote": connect_server.url},
                        source={"max_records_per_batch": 300},
                        target={"mode": "upsert", "dedup_window": "0d"})
    # ~847 records at 300 a batch: 3 batches, so the kill after batch 1 leaves one to come;
    # the run after it validates batch 2 alone, ~250 records with one poison of the seven
    # (the quarantine ratio must stay within 1% in a run's records).
    sent = produce_events(broker.bootstrap_servers, topic, 700, duplicate_rate=0.2,
                          poison_rate=0.01, seed=37)
    spark: SparkSession = request.getfixturevalue("spark")
    cfg = load_config(path, environ={})
    killed = runner.run(path, fault="after_target_commit@1")
    assert_killed_over_connect_after_the_target_commit_of_batch_1(spark, cfg, killed)
    _ok(runner.run(path, validate=True))
    assert (Path(cfg.checkpoint) / "commits" / "2").exists()  # the run went on past batch 1
    got = check(spark, cfg, sent.event_ids, sum(sent.poison.values()))
    assert got.clean, got


@pytest.mark.extended
def test_avro_with_a_registry_and_a_redrive_over_spark_connect(
        connect_server: ConnectServer, broker: EmbeddedBroker, lake: Path,
        request: pytest.FixtureRequest) -> None:
    """Avro in the Confluent wire format through Connect; a record whose schema id is unknown is
    quarantined, and lands by ``quarantine redrive`` once its schema is registered."""
    topic = f"connect-avro-{uuid.uuid4().hex[:8]}"
    ensure_topic(broker.bootstrap_servers, topic, partitions=2)
    with running_registry(credentials=("deltasink", "pw-connect")) as registry:
        client = SchemaRegistryClient({"url": registry.url,
                                       "basic.auth.user.info": "deltasink:pw-connect"})
        serialize = AvroSerializer(client, V1, conf={"auto.register.schemas": True})
        context = SerializationContext(topic, MessageField.VALUE)
        values = [serialize(click(i), context) for i in range(200)]
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
        for value in [*values, *values[:20], wire(2, V1, click(999))]:  # id 2: not yet known
            producer.produce(topic, value=value)
        assert producer.flush(30) == 0
        path = write_config(lake, broker.bootstrap_servers, topic, schema=DECLARED,
                            spark={"remote": connect_server.url}, source={
                                "format": "avro", "avro": {"registry_url": registry.url,
                                                           "registry_user": "deltasink"}},
                            target={"dedup_window": "30m"})  # an event-time window on "ts"
        secret = {"DELTASINK_SOURCE__AVRO__REGISTRY_PASSWORD": "pw-connect"}
        out = _ok(runner.run(path, env={**os.environ, **secret}))
        assert "pw-connect" not in out
        assert registry.register(f"{topic}-value", V1.replace('"name": "Click"',
                                 '"name": "Click", "doc": "v2"')) == 2
        _ok(runner.deltasink("quarantine", "redrive", "--config", str(path),
                             env={**os.environ, **secret}))
    spark: SparkSession = request.getfixturevalue("spark")
    cfg = load_config(path, environ=secret)
    got = check(spark, cfg, [f"c-{i}" for i in [*range(200), 999]], poison_count=1)
    assert got.clean, got
