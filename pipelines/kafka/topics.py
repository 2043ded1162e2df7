"""Kafka admin calls the pipeline needs before it starts: reachability, topics, partitions."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping

from pipelines.config.model import SourceConfig
from pipelines.errors import BrokerError, SourceError

ClientConfig = dict[str, str | int | float | bool]


#: Java-client settings that librdkafka (confluent-kafka) does not accept: dropped for admin
#: calls here (Spark's Java consumer still gets them all).
_JAVA_ONLY = ("sasl.jaas.config", "sasl.login.callback.handler.class",
              "sasl.client.callback.handler.class", "ssl.truststore.", "ssl.keystore.",
              "ssl.key.password", "ssl.endpoint.identification.algorithm")
JAAS_CREDENTIAL = re.compile(r'\b(username|password)\s*=\s*"((?:[^"\\]|\\.)*)"')


def client_config(bootstrap: str, options: Mapping[str, str] | None = None) -> ClientConfig:
    """A confluent-kafka config: bootstrap servers plus the pipeline's extra options.

    Java-only options are dropped; a JAAS ``username``/``password`` pair becomes librdkafka's
    ``sasl.username``/``sasl.password``.
    """
    conf: ClientConfig = {"bootstrap.servers": bootstrap, "log_level": 0}
    for key, value in (options or {}).items():
        if key == "sasl.jaas.config":
            for name, secret in JAAS_CREDENTIAL.findall(value):
                conf.setdefault(f"sasl.{name}", re.sub(r"\\(.)", r"\1", secret))
        if not key.startswith(_JAVA_ONLY):
            conf[key] = value
    return conf


def list_partitions(source: SourceConfig, timeout: float = 10.0) -> dict[str, list[int]]:
    """The partitions of every subscribed topic (topics list, or topics matching the pattern).

    Raises:
        BrokerError: the broker did not answer within ``timeout`` seconds.
    """
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(client_config(source.bootstrap_servers, source.kafka_options()))
    try:
        metadata = admin.list_topics(timeout=timeout)
    except KafkaException as exc:
        raise BrokerError(f"Kafka at {source.bootstrap_servers} did not answer within "
                          f"{timeout:.0f}s ({exc.args[0].str() if exc.args else exc}). Is the "
                          "broker running and reachable? (`deltasink broker start` for the "
                          "embedded one)") from None
    names = list(metadata.topics)
    if source.topic_pattern:
        pattern = re.compile(source.topic_pattern)
        names = [n for n in names if pattern.fullmatch(n)]
    else:
        names = [n for n in names if n in source.topics]
    return {n: sorted(metadata.topics[n].partitions) for n in names}


def wait_for_source(source: SourceConfig, timeout: float) -> dict[str, list[int]]:
    """Wait (up to ``timeout`` seconds) for the broker, then check that the topics exist.

    Returns:
        The partitions per topic.

    Raises:
        BrokerError: the broker stayed unreachable.
        SourceError: a listed topic does not exist.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            found = list_partitions(source, timeout=min(10.0, max(1.0, timeout)))
            break
        except BrokerError as exc:
            if time.monotonic() >= deadline:
                raise BrokerError(f"{exc} Gave up after source.broker_timeout="
                                  f"{timeout:.0f}s; nothing was written.") from None
            time.sleep(2.0)
    missing = [t for t in source.topics if t not in found]
    if missing:
        raise SourceError(f"topic(s) {', '.join(missing)} do not exist on "
                          f"{source.bootstrap_servers}; create them or fix source.topics.")
    return found


def ensure_topic(bootstrap: str, topic: str, partitions: int = 3,
                 options: Mapping[str, str] | None = None) -> None:
    """Create ``topic`` with ``partitions`` partitions unless it exists."""
    from confluent_kafka import admin as kafka_admin

    admin = kafka_admin.AdminClient(client_config(bootstrap, options))
    if topic in admin.list_topics(timeout=10).topics:
        return
    new = kafka_admin.NewTopic(topic, partitions, 1)  # type: ignore[attr-defined]
    for future in admin.create_topics([new]).values():
        try:
            future.result()
        except Exception as exc:
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise


def add_partitions(bootstrap: str, topic: str, total: int) -> None:
    """Grow ``topic`` to ``total`` partitions."""
    from confluent_kafka import admin as kafka_admin

    admin = kafka_admin.AdminClient(client_config(bootstrap))
    grow = kafka_admin.NewPartitions(topic, total)  # type: ignore[attr-defined]
    for future in admin.create_partitions([grow]).values():
        future.result()


def deleted_offsets(source: SourceConfig, expected: Mapping[str, Mapping[int, int]],
                    timeout: float = 10.0) -> dict[tuple[str, int], tuple[int, int]]:
    """Partitions whose next unread offset Kafka no longer has (retention deleted it).

    Args:
        source: the pipeline's source.
        expected: the next offset to read per topic and partition.
        timeout: per watermark request, in seconds.

    Returns:
        ``(topic, partition) -> (next offset to read, earliest offset Kafka still has)`` for
        every partition where the earliest available offset is past the next one to read.
    """
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    consumer = Consumer({**client_config(source.bootstrap_servers, source.kafka_options()),
                         "group.id": "deltasink-preflight", "enable.auto.commit": False})
    gone: dict[tuple[str, int], tuple[int, int]] = {}
    try:
        for topic, partitions in expected.items():
            for partition, next_offset in partitions.items():
                try:
                    low, _high = consumer.get_watermark_offsets(
                        TopicPartition(topic, partition), timeout=timeout)
                except KafkaException:
                    continue  # a topic that went away: Spark's source reports it
                if low > next_offset:
                    gone[(topic, partition)] = (next_offset, low)
    finally:
        consumer.close()
    return gone


def watermarks(source: SourceConfig, partitions: Mapping[str, list[int]],
               timeout: float = 10.0) -> dict[tuple[str, int], tuple[int, int]]:
    """The earliest and the next offset Kafka has, per partition (one client, no group).

    Raises:
        BrokerError: a watermark request failed (broker down or a partition without a leader).
    """
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    consumer = Consumer({**client_config(source.bootstrap_servers, source.kafka_options()),
                         "group.id": "deltasink-lag", "enable.auto.commit": False})
    out: dict[tuple[str, int], tuple[int, int]] = {}
    try:
        for topic, numbers in partitions.items():
            for partition in numbers:
                try:
                    low, high = consumer.get_watermark_offsets(
                        TopicPartition(topic, partition), timeout=timeout)
                except KafkaException as exc:
                    raise BrokerError(f"Kafka at {source.bootstrap_servers} did not report the "
                                      f"offsets of {topic}[{partition}] ({exc})") from None
                out[(topic, partition)] = (int(low), int(high))
    finally:
        consumer.close()
    return out
