"""Which Kafka topics the offsets refer to: topic ids and the cluster id.

Offsets are positions in one incarnation of a topic on one cluster. A topic that is deleted and
created again under the same name (or the same name on another cluster) starts again at offset 0,
and nothing in a Spark checkpoint or in a table's recorded offsets notices: a run resuming at
offset 300 of the new topic silently skips its first 300 records. Kafka gives every topic a
UUID (its topic id) and every cluster an id; each commit records them, and every start compares
them with what the broker says now (:func:`recreated`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pyspark.sql import SparkSession

from pipelines.config.model import SourceConfig
from pipelines.kafka import admin


@dataclass(frozen=True)
class SourceIdentity:
    """The cluster id and the topic ids of a source, as the broker reports them now."""

    cluster_id: str | None = None
    topic_ids: Mapping[str, str] = field(default_factory=dict)


def describe(spark: SparkSession, source: SourceConfig, topics: Iterable[str],
             timeout: float = 10.0) -> SourceIdentity:
    """Ask the broker (through the driver JVM's Kafka client) for the cluster and topic ids.

    Args:
        spark: the session whose JVM asks Kafka.
        source: the pipeline's source (bootstrap servers and client options).
        topics: the subscribed topics that exist now.
        timeout: per request, in seconds.

    Returns:
        The identity; topics the broker could not describe are left out.

    Raises:
        BrokerError: the broker did not answer, or refused the client.
    """
    cluster, found = admin.describe_source(spark, source, timeout)
    return identity_of(cluster, found, topics)


def identity_of(cluster: str | None, found: Mapping[str, tuple[list[int], str]],
                topics: Iterable[str]) -> SourceIdentity:
    """The identity of ``topics`` from what :func:`admin.describe_source` found."""
    names = set(topics)
    return SourceIdentity(cluster, {name: topic_id for name, (_ps, topic_id) in found.items()
                                    if name in names})


def recreated(recorded: SourceIdentity, now: SourceIdentity) -> dict[str, str]:
    """Topics whose recorded offsets belong to another incarnation of the topic.

    Args:
        recorded: the identity stored with the table's newest commit (empty for commits made
            before deltasink recorded it: nothing can be compared then).
        now: what the broker says now.

    Returns:
        ``topic -> reason`` for every topic whose id changed.
    """
    other_cluster = (recorded.cluster_id is not None and now.cluster_id is not None
                     and recorded.cluster_id != now.cluster_id)
    out: dict[str, str] = {}
    for topic, old in sorted(recorded.topic_ids.items()):
        new = now.topic_ids.get(topic)
        if new is not None and new != old:
            out[topic] = (f"{topic} is on another Kafka cluster ({recorded.cluster_id} -> "
                          f"{now.cluster_id})" if other_cluster else
                          f"{topic} was deleted and created again (topic id {old} -> {new})")
    return out
