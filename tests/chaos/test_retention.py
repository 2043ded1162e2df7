"""Scenario 5: Kafka retention deleted offsets the pipeline had not read yet."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)
from pyspark.sql import SparkSession

from pipelines.errors import SourceError
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import produce_events
from pipelines.kafka.topics import client_config
from pipelines.run import run_pipeline
from tests.chaos.conftest import PROFILES, Profile, record
from tests.support.checker import check
from tests.support.configs import make_config


def set_retention(bootstrap: str, topic: str, **settings: str) -> None:
    admin = AdminClient(client_config(bootstrap))
    entries = [ConfigEntry(k.replace("_", "."), v,
                           incremental_operation=AlterConfigOpType.SET)
               for k, v in settings.items()]
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=entries)
    for future in admin.incremental_alter_configs([resource]).values():
        future.result()


def earliest(bootstrap: str, topic: str, partitions: int) -> list[int]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({**client_config(bootstrap), "group.id": "chaos-retention"})
    try:
        return [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[0]
                for p in range(partitions)]
    finally:
        consumer.close()


@pytest.mark.parametrize("profile", PROFILES)
def test_offsets_deleted_by_retention(spark: SparkSession, broker: EmbeddedBroker, lake: Path,
                                      topic: str, profile: Profile, seed: int) -> None:
    bootstrap = broker.bootstrap_servers
    said: list[str] = []
    strict = make_config(lake, bootstrap, topic, source={"fail_on_data_loss": True})
    read = produce_events(bootstrap, topic, profile.small, duplicate_rate=0.1, seed=seed,
                          partitions=2, id_prefix="read")
    run_pipeline(spark, strict, validate=False, progress=said.append)
    before = strict.target.ref.history(spark, 1).collect()[0]["version"]

    # The pipeline is stopped; more records arrive, and retention deletes them unread.
    set_retention(bootstrap, topic, retention_ms="1000", segment_ms="200")
    unread = produce_events(bootstrap, topic, profile.small, duplicate_rate=0.1, seed=seed + 1,
                            partitions=2, id_prefix="unread")
    deadline = time.monotonic() + 120
    while (low := earliest(bootstrap, topic, 2)) and sum(low) < unread.sent + read.sent:
        assert time.monotonic() < deadline, f"retention never deleted the records: {low}"
        time.sleep(1)
    set_retention(bootstrap, topic, retention_ms="-1", segment_ms="604800000")
    later = produce_events(bootstrap, topic, profile.small, duplicate_rate=0.1, seed=seed + 2,
                           partitions=2, id_prefix="later")

    with pytest.raises(SourceError) as failed:
        run_pipeline(spark, strict, validate=False, progress=said.append)
    message = str(failed.value)
    assert f"Kafka retention deleted {unread.sent} offsets" in message
    assert "source.fail_on_data_loss: false" in message
    assert strict.target.ref.history(spark, 1).collect()[0]["version"] == before

    lenient = make_config(lake, bootstrap, topic, source={"fail_on_data_loss": False})
    said.clear()
    run_pipeline(spark, lenient, validate=False, progress=said.append)
    assert any(line.startswith(f"skipping {unread.sent} offsets that Kafka retention deleted")
               for line in said), said
    verdict = check(spark, lenient, read.event_ids + later.event_ids, 0)
    record("5 retention deleted unread offsets", profile, verdict,
           f"strict: SourceError; lenient: skipped {unread.sent}")
    assert verdict.clean, (seed, verdict, said)
