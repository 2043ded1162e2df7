"""The streaming query of a run: start it under the lease, watch it, ride out broker outages.

``run.run_pipeline`` prepares the run (preflight, tables, the lease, the resume point) and calls
``stream``, which starts the query, waits for it and restarts it after a recovered checkpoint or
a broker outage shorter than ``source.broker_timeout``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from pipelines.batches import BatchFeed
from pipelines.config.model import PipelineConfig
from pipelines.config.units import parse_duration
from pipelines.errors import (
    BrokerError,
    CheckpointMismatchError,
    DeltasinkError,
    SourceError,
    failure_line,
    raised_in_batch,
)
from pipelines.kafka import topics
from pipelines.kafka.source import read_stream, starting_offsets
from pipelines.ledger import checkpoint
from pipelines.ledger.lease import Lease
from pipelines.ledger.resume import Resume, recover
from pipelines.runtime.signals import deferred
from pipelines.sink.batch import BatchSink

Progress = Callable[[str], None]
#: Writes the run-metrics rows noted since its last call, with each batch's lag from the query's
#: progress; never raises.
Harvest = Callable[..., None]  # harvest(query, final=False): pipelines.ledger.lag.harvester

#: Seconds between two writes of run-metrics rows while a query runs (one append, on the driver,
#: beside the batches); the query's end writes the rest.
_HARVEST_EVERY = 60.0
#: Failures of a Kafka client that mean "the broker is not answering": retry within the timeout.
_TRANSIENT = ("TimeoutException", "Timed out waiting", "DisconnectException",
              "NetworkException", "Connection refused", "BrokerNotAvailable")


def stream(spark: SparkSession, config: PipelineConfig, run_id: str, trigger: str,
            interval: str, partitions: dict[str, list[int]],
            feed: BatchFeed, say: Progress, resume: Resume, lease: Lease,
            harvest: Harvest | None = None, own_client: bool = True,
            stopping: Callable[[], bool] | None = None) -> None:
    """Run the query to its end, restarting it after a recovered checkpoint or a short outage.

    Raises:
        DeltasinkError: a subclass naming what went wrong (the batch's own, or ``explain``'s).
    """
    outage: dict[str, float] = {}  # 'since': when the broker stopped answering
    recoveries = 0
    while True:
        if stopping is not None and stopping():
            raise KeyboardInterrupt  # stopped before (or between) its queries
        start: str = config.source.starting_offsets
        location = checkpoint.active(spark, config.checkpoint)  # changes when it is retired
        if not checkpoint.has_state(spark, location):
            start = starting_offsets(resume.offsets, partitions, start)
            if resume.offsets:
                say("no checkpoint state: resuming from the offsets recorded in the target table")
        sink = BatchSink(config, config.event_schema(), run_id,
                         lambda s: checkpoint.query_id(s, location),
                         lambda s, b: checkpoint.planned_offsets(s, location, b),
                         guard=lease.verify, source=resume.metadata,
                         compact=trigger == "continuous" and config.target.compact_while_streaming)
        writer = (read_stream(spark, config, start).writeStream
                  .queryName(f"deltasink-{config.name}-{run_id}")
                  .foreachBatch(sink).option("checkpointLocation", location))
        if trigger == "available-now":
            writer = writer.trigger(availableNow=True)
        else:
            writer = writer.trigger(processingTime=f"{parse_duration(interval)} seconds")
        query = checkpoint.start(writer, location, config.name)  # a racing writer: refused
        try:
            watch(spark, query, config, outage, feed, harvest, probe=own_client,
                   stopping=stopping)
            return
        except StreamingQueryException as exc:
            failure = raised_in_batch(str(exc))  # the batch's own typed error, from its text
            if isinstance(failure, CheckpointMismatchError) and recoveries < 2:
                recoveries += 1
                recover(spark, config, lease, say, str(failure))
                resume = resume.refresh(spark, config)
                if own_client:
                    partitions = topics.list_partitions(spark, config.source,
                                                        config.source.broker_timeout)
                continue
            if failure is not None:
                raise failure from None
            text = str(exc)
            if not any(marker in text for marker in _TRANSIENT):
                raise explain(exc, config) from None
            now = time.monotonic()
            waited = now - outage.setdefault("since", now)
            if waited >= config.source.broker_timeout:
                raise BrokerError(
                    f"Kafka at {config.source.bootstrap_servers} was unavailable for "
                    f"{waited:.0f}s (source.broker_timeout={config.source.broker_timeout:.0f}s). "
                    "Everything committed so far is consistent; run again when the broker is "
                    "back and it continues where it stopped.") from None
            say(f"Kafka unavailable ({waited:.0f}s so far); retrying within "
                f"{config.source.broker_timeout:.0f}s")
            time.sleep(min(5.0, config.source.broker_timeout))
            resume = resume.refresh(spark, config)  # the run may have moved on
        except KeyboardInterrupt:
            say("interrupted: stopping after the current batch")
            query.stop()
            return
        except DeltasinkError:
            query.stop()  # the client's own verdict (a cadence validation): stop the stream too
            raise
        finally:
            _report(feed, query, say)  # every batch that finished, failed run or not
            if harvest is not None:
                harvest(query, final=True)  # the rows (and lags) of the batches since the last


def _report(feed: BatchFeed, query: StreamingQuery, say: Progress) -> None:
    """Report the query's finished batches; a failed read warns, never fails the run."""
    try:
        feed.poll(query)
    except DeltasinkError:
        raise  # a cadence validation's verdict (quality.on_failure: stop)
    except Exception as exc:  # reporting must not turn a good run into a failed one
        first = failure_line(exc)
        say(f"warning: could not read the finished batches from the target's history ({first})")


def watch(spark: SparkSession, query: StreamingQuery, config: PipelineConfig,
           outage: dict[str, float], feed: BatchFeed, harvest: Harvest | None = None,
           every: int = 5, probe: bool = True,
           stopping: Callable[[], bool] | None = None) -> None:
    """Wait for the query to end, probing the broker every ``every`` s: Spark's source may hang.

    A paused or unreachable broker can leave a batch waiting inside Kafka client calls for
    minutes. If the broker stays unreachable for ``source.broker_timeout``, stop the query.
    With no own client (``probe`` false) the stream's own timeouts fail the query instead,
    and the caller retries it within the same timeout.

    Raises:
        BrokerError: the broker was unreachable for longer than ``source.broker_timeout``.
        StreamingQueryException: the query failed (the caller decides whether to retry).
        KeyboardInterrupt: a stop signal arrived (a group's: ``stopping`` said so). The loop
            stops on its next turn, between two Spark calls, not inside one
            (:func:`pipelines.runtime.signals.deferred`), so the caller's stop has a sound
            gateway to stop the query with.
    """
    timeout = config.source.broker_timeout
    with deferred() as signalled:  # a stop signal ends the loop on its next turn
        harvested = probed = time.monotonic()
        while not query.awaitTermination(1):  # each finished batch is reported within a second
            _report(feed, query, lambda _line: None)  # a failure here is said at the query's end
            if signalled() or (stopping is not None and stopping()):
                raise KeyboardInterrupt  # the caller stops the query, as for Ctrl-C
            if harvest is not None and time.monotonic() - harvested >= _HARVEST_EVERY:
                harvest(query)  # a long-running query records its batches' rows as it goes
                harvested = time.monotonic()
            if not probe or time.monotonic() - probed < every:
                continue
            probed = time.monotonic()
            try:
                topics.list_partitions(spark, config.source, timeout=float(every))
                outage.pop("since", None)
            except BrokerError:
                now = time.monotonic()
                waited = now - outage.setdefault("since", probed)
                if waited >= timeout:
                    query.stop()
                    raise BrokerError(
                        f"Kafka at {config.source.bootstrap_servers} was unavailable for "
                        f"{waited:.0f}s (source.broker_timeout={timeout:.0f}s); the "
                        "run was stopped. Everything committed so far is consistent; run again "
                        "when the broker is back and it continues where it stopped.") from None


def explain(exc: StreamingQueryException, config: PipelineConfig) -> DeltasinkError:
    """Turn a streaming failure into an actionable deltasink error."""
    text = str(exc)
    first = failure_line(exc, 500)
    if "UnknownTopicOrPartitionException" in text:  # Spark's source lists a missing topic
        return SourceError(
            f"a topic of source.topics does not exist on {config.source.bootstrap_servers} "
            "(Kafka: UnknownTopicOrPartition); create it or fix source.topics. Nothing of it "
            "was read.")
    if "data may have been lost" in text or "OFFSET_OUT_OF_RANGE" in text.upper():
        return SourceError(
            "Kafka no longer has offsets this pipeline has not read yet (retention deleted "
            "them). Records were lost upstream. To skip ahead and continue, set "
            f"source.fail_on_data_loss: false. Detail: {first}")
    if "No space left on device" in text:
        return DeltasinkError(
            "a disk the run writes to is full (No space left on device). Free space and run "
            "again: it continues where it stopped, losing and duplicating nothing. Detail: "
            f"{first}")
    return DeltasinkError(f"the streaming query failed: {first}")
