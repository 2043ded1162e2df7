"""Kafka metadata and offsets, asked by this process with confluent-kafka: no JVM needed.

Preflight, partition listing, the broker watch, watermarks, offsets for a time and topic ids all
go through librdkafka's admin client, with the stream's own ``kafka.*`` options translated
(:mod:`pipelines.kafka.client_conf`). It needs no Spark JVM, so it runs the same beside a classic
session and in a Spark Connect client (serverless, standard access mode), where there is none.
End offsets honour ``isolation.level`` as Spark's source does (read_committed: the last stable
offset). Failures are one line: the broker's own reason, secrets masked.

The ``spark`` parameters are kept so callers need not know which client answers; they are not
used.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from pyspark.sql import SparkSession

from pipelines.config.model import SourceConfig
from pipelines.config.secrets import redact, secret_values
from pipelines.errors import BrokerAuthError, BrokerError, ConfigError, OwnClientUnavailable
from pipelines.kafka.client_conf import librdkafka_config
from pipelines.kafka.source import client_options

#: librdkafka error names meaning: the client's credentials or TLS were refused.
_AUTH = ("_AUTHENTICATION", "SASL_AUTHENTICATION_FAILED", "TOPIC_AUTHORIZATION_FAILED",
         "CLUSTER_AUTHORIZATION_FAILED", "_SSL", "ILLEGAL_SASL_STATE",
         "UNSUPPORTED_SASL_MECHANISM")
_NO_PROVIDER = re.compile(r"No provider for SASL mechanism ([\w-]+)")
_UNKNOWN_PROPERTY = re.compile(r'No such configuration property: "([^"]+)"')


def _conf(source: SourceConfig, timeout: float, seen: list[Any]) -> dict[str, Any]:
    """The client's settings; errors librdkafka reports in the background go to ``seen``
    (a refused login arrives there, not in the request's answer), never to the terminal."""
    millis = max(1000, int(timeout * 1000))
    return {**librdkafka_config(client_options(source)), "socket.timeout.ms": millis,
            "error_cb": seen.append}


def kafka_reason(exc: BaseException, secrets: Mapping[str, str] | None = None) -> tuple[str, str]:
    """A Kafka failure's error name and a one-line message, secrets masked.

    Args:
        exc: a ``KafkaException`` (anything else is described by its type and ``str``).
        secrets: the source options, whose values are masked in the message.
    """
    error: Any = exc.args[0] if exc.args else None
    name = str(error.name()) if hasattr(error, "name") else type(exc).__name__
    text = str(error.str()) if hasattr(error, "str") else str(exc)
    if not text.strip() and isinstance(exc, TimeoutError):
        name, text = "_TIMED_OUT", "no answer within the timeout"
    line = " ".join(f"{name}: {text}".split())[:400]
    return name, redact(line, secret_values(secrets or {}))


def _fail(exc: BaseException, source: SourceConfig, what: str, timeout: float) -> Exception:
    """The deltasink error for a failed Kafka call: config, auth, or an unreachable broker."""
    name, reason = kafka_reason(exc, source.kafka_options())
    where = f"Kafka at {source.bootstrap_servers}"
    if name in ("_INVALID_ARG", "_UNKNOWN_PROTOCOL") or isinstance(exc, (ValueError, TypeError)):
        return ConfigError(f"source.options: the Kafka client rejected its configuration "
                           f"({reason}); fix the option it names.")
    if name in _AUTH or "authenticat" in reason.lower() or "SSL handshake" in reason:
        return BrokerAuthError(f"{where} refused the connection while {what} ({reason}); check "
                               "the credentials and TLS settings in source.options.")
    return BrokerError(f"{where} did not answer while {what} within {timeout:.0f}s ({reason}). "
                       "Is the broker running and reachable? (`deltasink broker start` for the "
                       "embedded one)")


@contextmanager
def _admin(source: SourceConfig, timeout: float, what: str) -> Iterator[Any]:
    """An admin client; Java-only tuning options librdkafka does not know are left out.

    Raises:
        BrokerError: a call inside failed (:class:`BrokerAuthError` when the broker refused
            the login or TLS, as librdkafka reported meanwhile).
    """
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    seen: list[Any] = []
    conf = _conf(source, timeout, seen)
    while True:
        try:
            client = AdminClient(conf)
            break
        except (KafkaException, ValueError, TypeError) as exc:
            missing = _NO_PROVIDER.search(str(exc))
            if missing:  # a login this build of librdkafka cannot do (Kerberos, often)
                raise OwnClientUnavailable(f"{missing[1]}: this build of librdkafka has no "
                                           "provider for it") from None
            unknown = _UNKNOWN_PROPERTY.search(str(exc))
            if unknown is None or unknown[1].startswith(("sasl.", "ssl.", "security.")) or \
                    unknown[1] not in conf:
                raise _fail(exc, source, "creating an admin client", timeout) from None
            del conf[unknown[1]]  # Java-client tuning: no bearing on what it connects to
    asker, error = _Asker(client, seen), None
    try:
        yield asker
    except Exception as exc:
        client.poll(0)  # serves the error callbacks librdkafka queued meanwhile
        refused = _refusals(seen)
        error = _fail(KafkaException(refused[-1]) if refused else exc, source, what, timeout)
    finally:
        # The handle is destroyed here, in this thread, when the call ends. Raised from inside
        # the ``except``, the error held the failure's frames, and so the client, in a
        # reference cycle: it was destroyed at some later garbage collection, in whatever
        # thread ran it. (A test worker once died of an abort in a native thread, after a
        # frozen broker's timeouts; this was the one client lifetime nobody could predict.)
        asker.client = None
        del client
    if error is not None:
        try:
            raise error
        finally:
            del error  # no cycle through this frame either


def _refusals(seen: list[Any]) -> list[Any]:
    return [e for e in seen if str(e.name()) in _AUTH or "uthenticat" in str(e.str())]


class _Asker:
    """An admin client whose answers are awaited in short steps, so that a refused login,
    which librdkafka reports through its error callback, ends the wait at once."""

    def __init__(self, client: Any, seen: list[Any]) -> None:
        self.client, self.seen = client, seen

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)

    def get(self, future: Any, timeout: float) -> Any:
        import concurrent.futures
        import time

        deadline = time.monotonic() + timeout
        while True:
            try:
                return future.result(timeout=min(0.25, max(0.0, deadline - time.monotonic())))
            except concurrent.futures.TimeoutError:
                self.client.poll(0)
                if _refusals(self.seen) or time.monotonic() >= deadline:
                    raise


def _uuid(topic_id: Any) -> str:
    """A topic id as Kafka's Java client prints it (URL-safe base64 of its 16 bytes)."""
    raw = (int(topic_id.get_most_significant_bits()).to_bytes(8, "big", signed=True)
           + int(topic_id.get_least_significant_bits()).to_bytes(8, "big", signed=True))
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _subscribed(admin: Any, source: SourceConfig,
                timeout: float) -> dict[str, tuple[list[int], str]]:
    """Every subscribed topic that exists, asked through an open ``admin`` client."""
    from confluent_kafka import TopicCollection

    listed = admin.list_topics(timeout=timeout)
    names = [n for n, t in listed.topics.items() if t.error is None or t.partitions]
    if source.topic_pattern:
        pattern = re.compile(source.topic_pattern)
        names = [n for n in names if pattern.fullmatch(n)]
    else:
        names = [n for n in names if n in source.topics]
    if not names:
        return {}
    described = admin.describe_topics(TopicCollection(names), request_timeout=timeout)
    out = {}
    for name, future in described.items():
        desc = admin.get(future, timeout)
        out[str(name)] = (sorted(int(p.id) for p in desc.partitions), _uuid(desc.topic_id))
    return out


def topic_partitions(spark: SparkSession | None, source: SourceConfig,
                     timeout: float = 10.0) -> dict[str, tuple[list[int], str]]:
    """Every subscribed topic that exists: its partitions and its topic id.

    Raises:
        BrokerError: the broker did not answer (:class:`BrokerAuthError`: it refused the client).
        ConfigError: the Kafka client rejected an option.
    """
    with _admin(source, timeout, "listing topics") as admin:
        return _subscribed(admin, source, timeout)


def describe_source(spark: SparkSession | None, source: SourceConfig, timeout: float = 10.0
                    ) -> tuple[str | None, dict[str, tuple[list[int], str]]]:
    """The cluster id, and every subscribed topic's partitions and id, from one admin client.

    Raises:
        BrokerError: the broker did not answer (:class:`BrokerAuthError`: it refused the client).
        ConfigError: the Kafka client rejected an option.
    """
    with _admin(source, timeout, "describing the cluster and its topics") as admin:
        cluster = admin.get(admin.describe_cluster(request_timeout=timeout), timeout)
        return (str(cluster.cluster_id) if cluster.cluster_id else None,
                _subscribed(admin, source, timeout))


def offsets(spark: SparkSession | None, source: SourceConfig,
            partitions: Mapping[str, list[int]], timeout: float = 10.0,
            at_ms: int | None = None) -> dict[tuple[str, int], tuple[int, int, int | None]]:
    """The earliest and next offset Kafka has per partition, and the first at ``at_ms``.

    Args:
        spark: unused (see the module docstring).
        source: the pipeline's source.
        partitions: topic -> partition numbers.
        timeout: per request, in seconds.
        at_ms: a timestamp (epoch milliseconds); ``None`` skips the time lookup.

    Returns:
        ``(topic, partition) -> (earliest, next, first offset at or after at_ms or None)``.

    Raises:
        BrokerError: the broker did not answer or refused the client.
    """
    from confluent_kafka import IsolationLevel, TopicPartition
    from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]

    wanted = [(t, int(p)) for t, ps in partitions.items() for p in ps]
    if not wanted:
        return {}
    isolation = (IsolationLevel.READ_COMMITTED if source.isolation_level == "read_committed"
                 else IsolationLevel.READ_UNCOMMITTED)
    specs: list[tuple[str, Any]] = [("low", OffsetSpec.earliest()),  # type: ignore[no-untyped-call]
                                    ("high", OffsetSpec.latest())]  # type: ignore[no-untyped-call]
    if at_ms is not None:
        specs.append(("at", OffsetSpec.for_timestamp(int(at_ms))))
    found: dict[str, dict[tuple[str, int], int]] = {}
    with _admin(source, timeout, "reading offsets") as admin:
        for kind, spec in specs:
            asked = admin.list_offsets({TopicPartition(t, p): spec for t, p in wanted},
                                       isolation_level=isolation, request_timeout=timeout)
            found[kind] = {(str(tp.topic), int(tp.partition)): int(admin.get(f, timeout).offset)
                           for tp, f in asked.items()}
    out: dict[tuple[str, int], tuple[int, int, int | None]] = {}
    for tp in wanted:
        at = found.get("at", {}).get(tp)
        out[tp] = (found["low"][tp], found["high"][tp], at if at is not None and at >= 0 else None)
    return out
