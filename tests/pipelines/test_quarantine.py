"""The quarantine key survives a deleted and recreated topic, and stays exactly-once on replays."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from pyspark.sql import SparkSession

from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import make_event
from pipelines.kafka.topics import ensure_topic
from pipelines.run import run_pipeline
from tests.support.configs import make_config


def produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for value in values:
        producer.produce(topic, value=value, partition=0)
    assert producer.flush(30) == 0


def recreate(bootstrap: str, topic: str) -> None:
    """Delete ``topic`` and create it again (offsets restart at 0)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.delete_topics([topic]).values():
        future.result()
    deadline = time.monotonic() + 60
    while topic in admin.list_topics(timeout=10).topics:  # deletion completes asynchronously
        assert time.monotonic() < deadline, f"topic {topic} was not deleted"
        time.sleep(0.5)
    while True:
        try:
            ensure_topic(bootstrap, topic, partitions=1)
            return
        except Exception as exc:  # "marked for deletion" until the broker finishes
            assert time.monotonic() < deadline, exc
            time.sleep(0.5)


@pytest.mark.extended
@pytest.mark.slow
def test_a_new_poison_pill_at_an_old_offset_of_a_recreated_topic_is_quarantined(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path) -> None:
    import datetime as dt
    import random

    bootstrap, topic = broker.bootstrap_servers, f"recreated-{uuid.uuid4().hex[:8]}"
    when, rng = dt.datetime.now(dt.UTC), random.Random(3)
    ensure_topic(bootstrap, topic, partitions=1)
    produce(bootstrap, topic, [make_event("a1", when, rng), b"{old poison"])  # poison: offset 1
    first = make_config(lake, bootstrap, topic, name="before")
    assert run_pipeline(spark, first, validate=False, progress=lambda _l: None).quarantined == 1

    recreate(bootstrap, topic)
    produce(bootstrap, topic, [make_event("b1", when, rng), b"{new poison"])  # offset 1 again
    second = make_config(lake, bootstrap, topic, name="after")  # same tables, fresh checkpoint
    assert run_pipeline(spark, second, validate=False, progress=lambda _l: None).quarantined == 1
    # A replay of the new topic from offset 0 under a new txn id: only the MERGE keys stop it.
    replay = make_config(lake, bootstrap, topic, name="replay")
    assert run_pipeline(spark, replay, validate=False, progress=lambda _l: None).inserted == 0

    rows = first.target.quarantine_ref.read(spark).collect()
    assert sorted((r["kafka_offset"], bytes(r["raw_value"])) for r in rows) == [
        (1, b"{new poison"), (1, b"{old poison")]
    assert all(r["record_hash"] is not None for r in rows)
    ids = sorted(r["event_id"] for r in first.target.ref.read(spark).collect())
    assert ids == ["a1", "b1"]
