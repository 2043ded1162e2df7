"""Kafka metadata and offsets through the Java client that Spark's Kafka connector ships.

Preflight, partition listing, the broker watch, watermarks and topic ids all go through the
driver JVM (``spark._jvm``, Py4J), with exactly the ``kafka.*`` options the stream is given
(:func:`pipelines.kafka.source.client_options`). So whatever Spark can connect with (SASL_SSL,
SCRAM, OAUTHBEARER, MSK IAM, Kerberos, JKS key and trust stores, a custom login callback class)
the preflight can too; when it cannot, it fails with Kafka's own reason in one line.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from pyspark.sql import SparkSession

from pipelines.config.model import SourceConfig
from pipelines.errors import BrokerAuthError, BrokerError, ConfigError, EnvironmentSetupError
from pipelines.kafka.source import client_options

#: Kafka exceptions (simple class names) meaning: the client's credentials or TLS were refused.
_AUTH = ("AuthenticationException", "SaslAuthenticationException", "SslAuthenticationException",
         "SSLHandshakeException", "SaslException", "LoginException",
         "TopicAuthorizationException", "ClusterAuthorizationException")
#: ... and: the client's own configuration is invalid (raised before it connects anywhere).
_CONFIG = ("ConfigException", "InvalidConfigurationException", "ClassNotFoundException",
           "NoSuchFileException", "FileNotFoundException")
#: Where the Kafka client lives in the driver JVM: Apache Spark, then Databricks' shaded copy.
_PACKAGES = ("org.apache.kafka", "kafkashaded.org.apache.kafka")


def _kafka(spark: SparkSession) -> Any:
    """The JVM package holding the Kafka client classes (Py4J view).

    Raises:
        EnvironmentSetupError: neither the connector's nor Databricks' client is loaded.
    """
    from py4j.java_gateway import JavaClass

    jvm: Any = spark._jvm
    for name in _PACKAGES:
        package = jvm
        for part in name.split("."):
            package = getattr(package, part)
        if isinstance(package.clients.admin.Admin, JavaClass):
            return package
    raise EnvironmentSetupError("the Kafka client classes are not in the driver JVM; is Spark's "
                                "Kafka connector (spark-sql-kafka-0-10) on its class path?")


def _properties(spark: SparkSession, source: SourceConfig, timeout: float,
                extra: Mapping[str, str] | None = None) -> Any:
    props = spark._jvm.java.util.Properties()  # type: ignore[union-attr]
    millis = str(max(1000, int(timeout * 1000)))
    settings = {**client_options(source), "request.timeout.ms": millis,
                "default.api.timeout.ms": millis, **(extra or {})}
    for key, value in settings.items():
        props.setProperty(key, str(value))
    return props


def kafka_reason(exc: BaseException, secrets: Mapping[str, str] | None = None) -> tuple[str, str]:
    """The root cause of a Java exception: its simple class name and a one-line message.

    Args:
        exc: a ``Py4JJavaError`` (anything else is described by ``str``).
        secrets: the source options, whose values are masked in the message.

    Returns:
        ``(class name, "ClassName: message")``, redacted, on one line.
    """
    from pipelines.failures import redact, secret_values

    java = getattr(exc, "java_exception", None)
    name, text = type(exc).__name__, str(exc)
    if java is not None:
        seen = 0
        while java.getCause() is not None and seen < 20:
            java, seen = java.getCause(), seen + 1
        name = str(java.getClass().getSimpleName())
        text = f"{name}: {java.getMessage()}"
    line = " ".join(text.split())[:400]
    return name, redact(line, secret_values(secrets or {}))


def _fail(exc: BaseException, source: SourceConfig, what: str, timeout: float) -> Exception:
    """The deltasink error for a failed Kafka call: config, auth, or an unreachable broker."""
    name, reason = kafka_reason(exc, source.kafka_options())
    where = f"Kafka at {source.bootstrap_servers}"
    if name in _CONFIG:
        return ConfigError(f"source.options: the Kafka client rejected its configuration "
                           f"({reason}); fix the option it names.")
    if name in _AUTH or "authenticat" in reason.lower():
        return BrokerAuthError(f"{where} refused the connection while {what} ({reason}); check "
                               "the credentials and TLS settings in source.options.")
    return BrokerError(f"{where} did not answer while {what} within {timeout:.0f}s ({reason}). "
                       "Is the broker running and reachable? (`deltasink broker start` for the "
                       "embedded one)")


@contextmanager
def _client(spark: SparkSession, source: SourceConfig, timeout: float, kind: str) -> Iterator[Any]:
    from py4j.protocol import Py4JError

    jvm: Any = spark._jvm
    kafka = _kafka(spark)
    try:
        if kind == "admin":
            client = kafka.clients.admin.Admin.create(_properties(spark, source, timeout))
        else:
            raw = kafka.common.serialization.ByteArrayDeserializer._fqn
            extra = {"key.deserializer": raw, "value.deserializer": raw,
                     "enable.auto.commit": "false"}
            client = kafka.clients.consumer.KafkaConsumer(
                _properties(spark, source, timeout, extra))
    except Py4JError as exc:
        raise _fail(exc, source, f"creating a {kind} client", timeout) from None
    try:
        yield client
    finally:
        try:
            client.close(jvm.java.time.Duration.ofMillis(int(min(timeout, 5.0) * 1000)))
        except Py4JError:
            pass  # closing never masks the real outcome


def _get(spark: SparkSession, future: Any, timeout: float) -> Any:
    unit = spark._jvm.java.util.concurrent.TimeUnit.MILLISECONDS  # type: ignore[union-attr]
    return future.get(int(timeout * 1000), unit)


def _subscribed(spark: SparkSession, admin: Any, source: SourceConfig,
                timeout: float) -> dict[str, tuple[list[int], str]]:
    """Every subscribed topic that exists, asked through an open ``admin`` client."""
    import re

    names = [str(n) for n in _get(spark, admin.listTopics().names(), timeout)]
    if source.topic_pattern:
        pattern = re.compile(source.topic_pattern)
        names = [n for n in names if pattern.fullmatch(n)]
    else:
        names = [n for n in names if n in source.topics]
    if not names:
        return {}
    wanted = spark._jvm.java.util.ArrayList()  # type: ignore[union-attr]
    for name in names:
        wanted.add(name)
    found = _get(spark, admin.describeTopics(wanted).allTopicNames(), timeout)
    return {str(name): (sorted(int(p.partition()) for p in desc.partitions()),
                        str(desc.topicId().toString()))
            for name, desc in found.items()}


def topic_partitions(spark: SparkSession, source: SourceConfig,
                     timeout: float = 10.0) -> dict[str, tuple[list[int], str]]:
    """Every subscribed topic that exists: its partitions and its topic id.

    Raises:
        BrokerError: the broker did not answer (:class:`BrokerAuthError`: it refused the client).
        ConfigError: the Kafka client rejected an option.
    """
    from py4j.protocol import Py4JError

    with _client(spark, source, timeout, "admin") as admin:
        try:
            return _subscribed(spark, admin, source, timeout)
        except Py4JError as exc:
            raise _fail(exc, source, "listing topics", timeout) from None


def describe_source(spark: SparkSession, source: SourceConfig, timeout: float = 10.0
                    ) -> tuple[str | None, dict[str, tuple[list[int], str]]]:
    """The cluster id, and every subscribed topic's partitions and id, from one admin client.

    A start-up needs both; one client is one connection and one (TLS/SASL) handshake.

    Raises:
        BrokerError: the broker did not answer (:class:`BrokerAuthError`: it refused the client).
        ConfigError: the Kafka client rejected an option.
    """
    from py4j.protocol import Py4JError

    with _client(spark, source, timeout, "admin") as admin:
        try:
            cluster = _get(spark, admin.describeCluster().clusterId(), timeout)
            return (str(cluster) if cluster else None,
                    _subscribed(spark, admin, source, timeout))
        except Py4JError as exc:
            raise _fail(exc, source, "describing the cluster and its topics", timeout) from None


def offsets(spark: SparkSession, source: SourceConfig, partitions: Mapping[str, list[int]],
            timeout: float = 10.0, at_ms: int | None = None
            ) -> dict[tuple[str, int], tuple[int, int, int | None]]:
    """The earliest and next offset Kafka has per partition, and the first at ``at_ms``.

    Args:
        spark: the session whose JVM runs the client.
        source: the pipeline's source.
        partitions: topic -> partition numbers.
        timeout: per request, in seconds.
        at_ms: a timestamp (epoch milliseconds); ``None`` skips the time lookup.

    Returns:
        ``(topic, partition) -> (earliest, next, first offset at or after at_ms or None)``.

    Raises:
        BrokerError: the broker did not answer or refused the client.
    """
    from py4j.protocol import Py4JError

    jvm: Any = spark._jvm
    kafka = _kafka(spark)
    wanted = jvm.java.util.ArrayList()
    for topic, numbers in partitions.items():
        for number in numbers:
            wanted.add(kafka.common.TopicPartition(topic, int(number)))
    if wanted.size() == 0:
        return {}
    wait = jvm.java.time.Duration.ofMillis(int(timeout * 1000))
    with _client(spark, source, timeout, "consumer") as consumer:
        try:
            low = consumer.beginningOffsets(wanted, wait)
            high = consumer.endOffsets(wanted, wait)
            times: Any = {}
            if at_ms is not None:
                query = jvm.java.util.HashMap()
                for tp in wanted:
                    query.put(tp, jvm.java.lang.Long.valueOf(str(int(at_ms))))
                times = consumer.offsetsForTimes(query, wait)
            out: dict[tuple[str, int], tuple[int, int, int | None]] = {}
            for tp in wanted:
                hit = times.get(tp) if at_ms is not None else None
                out[(str(tp.topic()), int(tp.partition()))] = (
                    int(low.get(tp)), int(high.get(tp)),
                    int(hit.offset()) if hit is not None else None)
            return out
        except Py4JError as exc:
            raise _fail(exc, source, "reading offsets", timeout) from None
