"""``deltasink replay``: re-read Kafka from a point in time into the same tables, a backfill.

The records go through the pipeline's own :class:`~pipelines.sink.batch.BatchSink` (parse,
quarantine, dedup, insert-only MERGE on the event key), so a replay cannot duplicate a row:
only rows missing from the target (or records missing from quarantine) are written. It reads
from the first offset at or after the timestamp up to the offsets that are latest when it starts
(an availableNow query), with its own temporary checkpoint and its own txn app id
(``deltasink-replay:<pipeline>:<id>``). Its commits are marked ``"replay": true``, which
:func:`pipelines.ledger.state.recorded_offsets` ignores: the pipeline's offsets and checkpoint
stay put.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession

from pipelines.batches import BatchFeed
from pipelines.config.model import PipelineConfig
from pipelines.errors import (
    ConfigError,
    DeltasinkError,
    SourceError,
    failure_line,
    raised_in_batch,
)
from pipelines.kafka import admin, topics
from pipelines.kafka.source import read_stream
from pipelines.ledger import checkpoint
from pipelines.runtime.connect_client import start_query
from pipelines.runtime.hadoop import HadoopFS
from pipelines.runtime.sessions import is_connect
from pipelines.sink.batch import BatchSink
from pipelines.sink.metrics import BatchMetrics

Offsets = dict[str, dict[int, int]]


@dataclass(frozen=True)
class ReplayResult:
    """What a replay read and wrote."""

    replay_id: str
    start: Offsets
    end: Offsets
    batches: tuple[BatchMetrics, ...]

    @property
    def records_read(self) -> int:
        """Kafka records read (valid and bad)."""
        return sum(b.records_in for b in self.batches)

    @property
    def inserted(self) -> int:
        """Rows the replay added to the target (the ones that were missing)."""
        return sum(b.inserted for b in self.batches)

    @property
    def bad(self) -> int:
        """Bad records sent to the quarantine MERGE (already quarantined ones are skipped)."""
        return sum(b.quarantined for b in self.batches)


def parse_timestamp(text: str) -> int:
    """Milliseconds since the epoch of an ISO timestamp (UTC unless it names a zone).

    Raises:
        ConfigError: not a timestamp.
    """
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise ConfigError(f"--from-timestamp {text!r} is not a timestamp; use ISO 8601, e.g. "
                          "2026-11-23T09:00:00Z.") from None
    return int((when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp() * 1000)


def offset_range(spark: SparkSession, config: PipelineConfig, partitions: dict[str, list[int]],
                 since_ms: int) -> tuple[Offsets, Offsets]:
    """Per partition: the first offset at or after ``since_ms``, and the end offset now."""
    start: Offsets = {}
    end: Offsets = {}
    marks = admin.offsets(spark, config.source, partitions, timeout=30.0, at_ms=since_ms)
    for (topic, partition), (_low, high, at) in marks.items():
        end.setdefault(topic, {})[partition] = high
        start.setdefault(topic, {})[partition] = at if at is not None else high
    return start, end


def _source_config(config: PipelineConfig, only: list[str] | None) -> PipelineConfig:
    if not only:
        return config
    known = set(config.source.topics)
    unknown = [t for t in only if t not in known] if known else []
    if unknown:
        raise ConfigError(f"--topics {','.join(unknown)} not in source.topics "
                          f"({','.join(sorted(known))}); replay reads the pipeline's topics only.")
    source = config.source.model_copy(update={"topics": tuple(only), "topic_pattern": None})
    return config.model_copy(update={"source": source})


def replay(spark: SparkSession, config: PipelineConfig, from_timestamp: str, *,
           only_topics: list[str] | None = None,
           say: Callable[[str], None] = print) -> ReplayResult:
    """Re-ingest Kafka records from ``from_timestamp`` up to the offsets latest now.

    Raises:
        ConfigError: a bad timestamp or topic, or the target does not exist.
        DeltasinkError: the replay's streaming query failed (nothing partial is visible:
            every batch commits atomically, and running the replay again is safe).
    """
    since = parse_timestamp(from_timestamp)
    if not config.target.ref.exists(spark):
        raise ConfigError(f"target {config.target.ref.describe()} does not exist; run the "
                          "pipeline first (`deltasink run`), replay only backfills it.")
    reading = _source_config(config, only_topics)
    now = topics.inspect_source(spark, reading.source, reading.source.broker_timeout)
    if now.gap is not None:
        raise SourceError(f"replay needs deltasink's own Kafka client to find the offsets at "
                          f"{from_timestamp}; it is unavailable for {now.gap}. Rewind the "
                          "pipeline instead, or run replay where the own client can log in.")
    partitions = now.partitions
    start, end = offset_range(spark, reading, partitions, since)
    replay_id = uuid.uuid4().hex[:12]
    batches: list[BatchMetrics] = []
    todo = sum(end[t][p] - o for t, ps in start.items() for p, o in ps.items())
    say(f"replay {replay_id}: {todo} records of {','.join(sorted(start))} from {from_timestamp}")
    if todo:
        location = f"{config.checkpoint.rstrip('/')}.replay-{replay_id}"
        sink = BatchSink(config, config.event_schema(), f"replay-{replay_id}",
                         lambda _s: replay_id,
                         lambda s, b: checkpoint.planned_offsets(s, location, b), replay=True)

        def on_batch(metrics: BatchMetrics) -> None:
            batches.append(metrics)
            if metrics.rerun:  # a batch re-run after losing its blocks says so, as in a run
                say(metrics.rerun)

        feed = BatchFeed(spark, config, f"replay-{replay_id}", on_batch, query_id=replay_id)
        spec = json.dumps({t: {str(p): o for p, o in ps.items()} for t, ps in start.items()})
        writer = (read_stream(spark, reading, spec).writeStream
                  .queryName(f"deltasink-replay-{config.name}-{replay_id}")
                  .foreachBatch(sink).option("checkpointLocation", location)
                  .trigger(availableNow=True))
        query = start_query(writer.start, f"replay {replay_id}")
        try:
            query.awaitTermination()
        except StreamingQueryException as exc:
            failure = raised_in_batch(str(exc))
            if failure is not None:
                raise failure from None
            first = failure_line(exc)
            raise DeltasinkError(f"replay {replay_id} failed ({first}); what it committed is "
                                 "consistent, run the same replay again to finish.") from None
        finally:
            feed.poll(query)
        if is_connect(spark):  # no Spark API deletes a folder, and this client has no JVM
            say(f"replay {replay_id}: its checkpoint {location} is left in place (a Spark "
                "Connect client cannot delete folders); delete it by hand, e.g. dbutils.fs.rm")
        else:
            HadoopFS(spark).delete(location, recursive=True)
    result = ReplayResult(replay_id, start, end, tuple(batches))
    say(f"replay {replay_id} done: read={result.records_read} inserted={result.inserted} "
        f"bad={result.bad} (already present rows and quarantined records are not rewritten)")
    return result
