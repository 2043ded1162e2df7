"""Kafka admin calls the pipeline needs before it starts: reachability, topics, partitions.

The pipeline's own calls go through :mod:`admin` (confluent-kafka, no JVM); the config here
serves the test and demo tooling too (producing, creating topics), translated the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from pyspark.sql import SparkSession

from pipelines.config.model import SourceConfig
from pipelines.errors import BrokerAuthError, BrokerError, OwnClientUnavailable, SourceError
from pipelines.kafka import admin
from pipelines.kafka.client_conf import ClientConfig, librdkafka_config
from pipelines.kafka.identity import SourceIdentity, identity_of

T = TypeVar("T")


def client_config(bootstrap: str, options: Mapping[str, str] | None = None) -> ClientConfig:
    """A confluent-kafka config: bootstrap servers plus the pipeline's options, translated
    from the Java client's names (:func:`pipelines.kafka.client_conf.librdkafka_config`).

    Raises:
        ConfigError: an option the Python client cannot express.
    """
    return {**librdkafka_config(options or {}), "bootstrap.servers": bootstrap}


def list_partitions(spark: SparkSession, source: SourceConfig,
                    timeout: float = 10.0) -> dict[str, list[int]]:
    """The partitions of every subscribed topic (topics list, or topics matching the pattern).

    Asked with confluent-kafka, with the stream's own options translated.

    Raises:
        BrokerError: the broker did not answer within ``timeout`` seconds, or refused the
            client (:class:`BrokerAuthError`).
        ConfigError: the Kafka client rejected an option.
    """
    found = admin.topic_partitions(spark, source, timeout)
    return {name: numbers for name, (numbers, _id) in found.items()}


@dataclass(frozen=True)
class SourceNow:
    """What the broker says about the source at start-up, from one admin client.

    Attributes:
        partitions: topic -> partitions (empty when ``gap`` is set: not asked).
        identity: the cluster and topic ids (empty when ``gap`` is set).
        gap: why deltasink's own client cannot log in as the stream does (None: it can);
            the run then reads with the stream only (:mod:`pipelines.kafka.reach`).
    """

    partitions: dict[str, list[int]]
    identity: SourceIdentity
    gap: str | None = None


def ride_out(call: Callable[[], T], timeout: float) -> T:
    """``call()``, asked again every 2 s while the broker does not answer, up to ``timeout``
    seconds. A broker that refuses the client fails at once: waiting for it cannot help.

    Raises:
        BrokerError: the last failure, once ``timeout`` has passed (or a refusal at once).
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            return call()
        except BrokerAuthError:
            raise
        except BrokerError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(2.0)


def inspect_source(spark: SparkSession, source: SourceConfig, timeout: float) -> SourceNow:
    """Wait (up to ``timeout`` seconds) for the broker, then check that the topics exist.

    A broker that refuses the client (wrong credentials, TLS) fails at once: waiting for it
    cannot help. The cluster id and topic ids come with the partitions, in the same client.

    Returns:
        The partitions per topic and the source's identity; or, when deltasink's own client
        cannot log in the way the stream does, neither, and why (``gap``).

    Raises:
        BrokerError: the broker stayed unreachable, or refused the client.
        SourceError: a listed topic does not exist.
    """
    try:
        cluster, described = ride_out(lambda: admin.describe_source(
            spark, source, timeout=min(10.0, max(1.0, timeout))), timeout)
    except OwnClientUnavailable as exc:
        return SourceNow({}, SourceIdentity(), gap=str(exc))
    except BrokerAuthError:
        raise
    except BrokerError as exc:
        raise BrokerError(f"{exc} Gave up after source.broker_timeout="
                          f"{timeout:.0f}s; nothing was written.") from None
    found = {name: numbers for name, (numbers, _id) in described.items()}
    missing = [t for t in source.topics if t not in found]
    if missing:
        raise SourceError(f"topic(s) {', '.join(missing)} do not exist on "
                          f"{source.bootstrap_servers}; create them or fix source.topics.")
    return SourceNow(found, identity_of(cluster, described, found))


def ensure_topic(bootstrap: str, topic: str, partitions: int = 3,
                 options: Mapping[str, str] | None = None) -> None:
    """Create ``topic`` with ``partitions`` partitions unless it exists; return once the
    broker's metadata lists it (it answers the creation first: a describe at once, under load,
    missed a topic just created), or after 10 s."""
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
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        listed = admin.list_topics(topic, timeout=10).topics.get(topic)
        if listed is not None and listed.error is None and listed.partitions:
            return
        time.sleep(0.1)


def add_partitions(bootstrap: str, topic: str, total: int) -> None:
    """Grow ``topic`` to ``total`` partitions."""
    from confluent_kafka import admin as kafka_admin

    admin = kafka_admin.AdminClient(client_config(bootstrap))
    grow = kafka_admin.NewPartitions(topic, total)  # type: ignore[attr-defined]
    for future in admin.create_partitions([grow]).values():
        future.result()


def deleted_offsets(spark: SparkSession, source: SourceConfig,
                    expected: Mapping[str, Mapping[int, int]], timeout: float = 10.0,
                    existing: Mapping[str, list[int]] | None = None,
                    ) -> dict[tuple[str, int], tuple[int, int]]:
    """Partitions whose next unread offset Kafka no longer has (retention deleted it).

    Args:
        spark: the session whose JVM asks Kafka.
        source: the pipeline's source.
        expected: the next offset to read per topic and partition.
        timeout: per offsets request, in seconds.
        existing: the partitions that exist now, if the caller just asked (else listed here).

    Returns:
        ``(topic, partition) -> (next offset to read, earliest offset Kafka still has)`` for
        every partition where the earliest available offset is past the next one to read.
        Partitions of topics that no longer exist are left out (Spark's source reports them).
    """
    if existing is None:
        existing = list_partitions(spark, source, timeout) if expected else {}
    wanted = {t: [p for p in ps if p in existing.get(t, [])] for t, ps in expected.items()}
    marks = admin.offsets(spark, source, {t: ps for t, ps in wanted.items() if ps}, timeout)
    return {(t, p): (expected[t][p], low) for (t, p), (low, _high, _at) in marks.items()
            if low > expected[t][p]}


def watermarks(spark: SparkSession, source: SourceConfig, partitions: Mapping[str, list[int]],
               timeout: float = 10.0) -> dict[tuple[str, int], tuple[int, int]]:
    """The earliest and the next offset Kafka has, per partition (one client, no group).

    Raises:
        BrokerError: an offsets request failed (broker down or a partition without a leader).
    """
    marks = admin.offsets(spark, source, partitions, timeout)
    return {tp: (low, high) for tp, (low, high, _at) in marks.items()}
