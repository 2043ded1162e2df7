"""The Kafka source: Spark's own ``kafka`` format, started where the table says input stopped."""

from __future__ import annotations

import json

from pyspark.sql import DataFrame, SparkSession

from pipelines.config.model import PipelineConfig, SourceConfig
from pipelines.kafka.client_conf import SOURCE_OPTIONS

#: Fail a stuck metadata or fetch call in bounded time, so the run can retry the query.
_DEFAULT_KAFKA_OPTIONS = {"default.api.timeout.ms": "30000", "request.timeout.ms": "20000"}


def client_options(source: SourceConfig) -> dict[str, str]:
    """The Kafka client settings the stream uses: every ``kafka.*`` option without the prefix.

    The admin client and the offset lookups (:mod:`pipelines.kafka.admin`) use exactly these, so
    a preflight passes where Spark can connect.
    """
    return {"bootstrap.servers": source.bootstrap_servers,
            "isolation.level": source.isolation_level,
            **_DEFAULT_KAFKA_OPTIONS, **source.kafka_options()}


def starting_offsets(recorded: dict[str, dict[int, int]] | None,
                     partitions: dict[str, list[int]], default: str) -> str:
    """The ``startingOffsets`` option for a query that has no checkpoint state.

    Args:
        recorded: the next offsets recorded in the target table, or None for a new table.
        partitions: every subscribed topic's partitions now; empty when they could not be
            asked (no own client): the recorded ones then, and Spark's source names any
            partition that appeared since.
        default: ``earliest`` or ``latest``, used only when nothing is recorded.

    Returns:
        ``default``, or a JSON map of offsets: recorded ones where known, and ``-2`` (earliest)
        for partitions and topics that appeared since.
    """
    if not recorded:
        return default
    partitions = partitions or {t: sorted(ps) for t, ps in recorded.items()}
    spec = {t: {str(p): recorded.get(t, {}).get(p, -2) for p in ps}
            for t, ps in sorted(partitions.items()) if ps}
    return json.dumps(spec)


def read_stream(spark: SparkSession, config: PipelineConfig, start: str) -> DataFrame:
    """The streaming DataFrame of Kafka records.

    Args:
        spark: the session.
        config: the pipeline config.
        start: the ``startingOffsets`` value (ignored by Spark once the checkpoint has state).

    Returns:
        Rows of ``key, value, topic, partition, offset, timestamp, timestampType`` (and
        ``headers`` when the schema selects header columns).
    """
    src = config.source
    reader = (spark.readStream.format("kafka")
              .option("startingOffsets", start)
              .option("maxOffsetsPerTrigger", src.max_records_per_batch)
              .option("failOnDataLoss", str(src.fail_on_data_loss).lower()))
    if src.topic_pattern:
        reader = reader.option("subscribePattern", src.topic_pattern)
    else:
        reader = reader.option("subscribe", ",".join(src.topics))
    if config.event_schema().headers:  # only then: it costs a column per record
        reader = reader.option("includeHeaders", "true")
    for key, value in client_options(src).items():
        reader = reader.option(key if key in SOURCE_OPTIONS else f"kafka.{key}", value)
    return reader.load()
