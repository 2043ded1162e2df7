"""A topic deleted and created again under the same name: its old offsets must not be trusted.

Before topic ids were recorded, the run resumed the new topic at the old topic's offsets and
skipped its first records silently (measured: 300 of 600 new events lost, exit 0).
"""

from __future__ import annotations

import shutil
import time
import uuid
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.identity import SourceIdentity, recreated
from pipelines.kafka.produce import produce_events
from pipelines.ledger.record import parse_commit_metadata
from pipelines.run import run_pipeline
from tests.support.checker import check
from tests.support.configs import make_config


def delete_topic(bootstrap: str, topic: str, timeout: float = 60.0) -> None:
    """Delete ``topic`` and wait until the broker no longer lists it."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.delete_topics([topic]).values():
        future.result()
    deadline = time.monotonic() + timeout
    while topic in admin.list_topics(timeout=10).topics:
        assert time.monotonic() < deadline, f"{topic} is still listed after deletion"
        time.sleep(0.5)
    time.sleep(2)  # let the deletion settle before the name is used again


def test_recreated_compares_topic_ids_and_names_another_cluster() -> None:
    old = SourceIdentity("c1", {"a": "id-a", "b": "id-b"})
    assert recreated(old, SourceIdentity("c1", {"a": "id-a", "b": "id-b"})) == {}
    assert list(recreated(old, SourceIdentity("c1", {"a": "id-a", "b": "id-B"}))) == ["b"]
    assert "deleted and created again" in recreated(old, SourceIdentity("c1", {"b": "x"}))["b"]
    assert "another Kafka cluster" in recreated(old, SourceIdentity("c2", {"a": "z"}))["a"]
    assert recreated(SourceIdentity(), SourceIdentity("c1", {"a": "id-a"})) == {}  # old commits


@pytest.mark.extended
@pytest.mark.slow
@pytest.mark.parametrize("keep_checkpoint", [True, False])
def test_a_recreated_topic_is_read_from_its_start_and_lands_exactly_once(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path, keep_checkpoint: bool) -> None:
    topic = f"recreate-{uuid.uuid4().hex[:8]}"
    first = produce_events(broker.bootstrap_servers, topic, 300, seed=1, partitions=2,
                           id_prefix="old")
    cfg = make_config(lake, broker.bootstrap_servers, topic)
    run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)
    commit = cfg.target.ref.history(spark, 1).collect()[0]
    recorded = parse_commit_metadata(commit["userMetadata"])
    assert recorded is not None and topic in recorded["source"]["topic_ids"]

    delete_topic(broker.bootstrap_servers, topic)
    second = produce_events(broker.bootstrap_servers, topic, 600, seed=2, partitions=2,
                            id_prefix="new")
    if not keep_checkpoint:
        shutil.rmtree(cfg.checkpoint)
    lines: list[str] = []
    result = run_pipeline(spark, cfg, validate=False, progress=lines.append)

    assert any("was deleted and created again" in line for line in lines), lines
    assert result.records_in == 600  # the whole new topic, from offset 0
    verdict = check(spark, cfg, first.event_ids + second.event_ids, 0)
    assert verdict.clean, verdict
    again = run_pipeline(spark, cfg, validate=False, progress=lines.append)
    assert again.records_in == 0  # the new topic id is recorded: no second recovery
