"""Kafka metadata asked with confluent-kafka, in this process, without Spark's JVM."""

from __future__ import annotations

import gc
import time
import uuid
from pathlib import Path

import pytest

from pipelines.config.model import SourceConfig
from pipelines.errors import BrokerError, OwnClientUnavailable
from pipelines.kafka import admin, identity, topics
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import produce_events
from pipelines.kafka.topics import ensure_topic
from tests.support.configs import make_config


def test_partitions_ids_and_offsets_come_without_a_spark_session(
        broker: EmbeddedBroker) -> None:
    topic = f"admin-{uuid.uuid4().hex[:8]}"
    before = int(time.time() * 1000)
    produce_events(broker.bootstrap_servers, topic, 60, seed=3)
    source = SourceConfig(bootstrap_servers=broker.bootstrap_servers, topics=(topic,))
    cluster, found = admin.describe_source(None, source, 10.0)  # no session at all
    assert cluster and found[topic][0] == [0, 1, 2]
    topic_id = found[topic][1]
    assert len(topic_id) == 22 and "=" not in topic_id  # Java's Uuid.toString(): base64url
    marks = admin.offsets(None, source, {topic: [0, 1, 2]}, 10.0, at_ms=before - 60_000)
    assert sum(high for _low, high, _at in marks.values()) == 60
    assert all(low == 0 and at == 0 for low, _high, at in marks.values())
    future = int(time.time() * 1000) + 3_600_000
    later = admin.offsets(None, source, {topic: [0]}, 10.0, at_ms=future)
    assert later[(topic, 0)][2] is None  # nothing at or after a future time


def test_a_recreated_topic_gets_another_id(broker: EmbeddedBroker) -> None:
    from confluent_kafka.admin import AdminClient

    topic = f"admin-re-{uuid.uuid4().hex[:8]}"
    ensure_topic(broker.bootstrap_servers, topic, 1)
    source = SourceConfig(bootstrap_servers=broker.bootstrap_servers, topics=(topic,))
    first = admin.topic_partitions(None, source)[topic][1]
    client = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    for future in client.delete_topics([topic]).values():
        future.result()
    deadline = time.monotonic() + 30
    while topic in client.list_topics(timeout=10).topics and time.monotonic() < deadline:
        time.sleep(0.2)
    ensure_topic(broker.bootstrap_servers, topic, 1)
    assert admin.topic_partitions(None, source)[topic][1] != first


def test_an_unreachable_broker_is_one_broker_error_within_the_timeout(
        capfd: pytest.CaptureFixture[str]) -> None:
    source = SourceConfig(bootstrap_servers="127.0.0.1:1", topics=("t",))
    started = time.monotonic()
    with pytest.raises(BrokerError, match=r"did not answer while describing .* within 2s"):
        admin.describe_source(None, source, 2.0)
    took = time.monotonic() - started
    # A guard against a hang, not a speed bound: 30 times the 2 s timeout, however loaded.
    assert took < 60, f"hung: describe_source took {took:.0f} s with a 2 s timeout"
    assert capfd.readouterr().err == ""  # librdkafka's own log lines never reach the terminal


def test_a_failed_call_destroys_its_client_when_it_returns() -> None:
    """No reference cycle holds the client after a failed call: the garbage collector would
    destroy the librdkafka handle later, in whatever thread it happens to run in (the broker
    watch fails a call every 5 s while a broker is frozen)."""
    from confluent_kafka.admin import AdminClient

    source = SourceConfig(bootstrap_servers="127.0.0.1:1", topics=("t",))
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)  # what a collection finds stays in gc.garbage to be named
    try:
        for call in (lambda: admin.topic_partitions(None, source, 1.0),
                     lambda: admin.describe_source(None, source, 1.0)):
            with pytest.raises(BrokerError):
                call()
        gc.collect()
        left = [o for o in gc.garbage if isinstance(o, AdminClient)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert not left, "a failed call left its client to a garbage collection"


def test_list_partitions_and_watermarks(broker: EmbeddedBroker, lake: Path) -> None:
    sent = produce_events(broker.bootstrap_servers, "admin-marks", 30, partitions=3, seed=11)
    source = make_config(lake, broker.bootstrap_servers, "admin-marks").source
    partitions = topics.inspect_source(None, source, 10.0).partitions  # type: ignore[arg-type]
    assert partitions == {"admin-marks": [0, 1, 2]}
    marks = topics.watermarks(None, source, partitions)
    assert set(marks) == {("admin-marks", p) for p in range(3)}
    assert sum(high - low for low, high in marks.values()) == sent.sent == 30


def test_deleted_offsets_and_identity(broker: EmbeddedBroker, lake: Path) -> None:
    produce_events(broker.bootstrap_servers, "admin-ids", 5, partitions=2, seed=12)
    source = make_config(lake, broker.bootstrap_servers, "admin-ids").source
    assert topics.deleted_offsets(None, source, {"admin-ids": {0: 0, 1: 0}}) == {}
    now = identity.describe(None, source, ["admin-ids"])
    assert now.cluster_id and len(now.topic_ids["admin-ids"]) == 22  # a base64 Kafka Uuid


def test_a_java_only_login_class_is_a_named_gap_not_a_refusal(
        broker: EmbeddedBroker, lake: Path) -> None:
    """The own client cannot load a Java class: the start-up check says why, and asks nothing
    (the run then reads with Spark's source alone; tests/pipelines/kafka/test_logins.py)."""
    source = make_config(lake, broker.bootstrap_servers, "admin-bad", source={
        "options": {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
                    "sasl.login.callback.handler.class": "com.example.NoSuchHandler"}}).source
    now = topics.inspect_source(None, source, timeout=5.0)  # type: ignore[arg-type]
    assert now.gap == "OAUTHBEARER through the Java class NoSuchHandler"
    assert now.partitions == {} and now.identity.topic_ids == {}
    with pytest.raises(OwnClientUnavailable, match="NoSuchHandler"):
        topics.list_partitions(None, source)  # type: ignore[arg-type]
