"""The streaming-query lifecycle: preflight, start, ride out broker outages, then validate."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable

from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from pipelines import faults, preflight
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
from pipelines.kafka import reach, topics
from pipelines.kafka.retention import check_retention
from pipelines.kafka.source import read_stream, starting_offsets
from pipelines.ledger import checkpoint
from pipelines.ledger.lag import harvester
from pipelines.ledger.lease import Lease
from pipelines.ledger.resume import Resume, agree, recover
from pipelines.ledger.single_writer import claim_checkpoint
from pipelines.runtime.aside import Aside
from pipelines.runtime.phases import Phases
from pipelines.runtime.spark import on_databricks, side_session
from pipelines.sink.avro import writer_schemas
from pipelines.sink.batch import BatchSink
from pipelines.sink.metrics import BatchMetrics, RunResult
from pipelines.sink.run_log import RunLog
from pipelines.sink.tables import ensure_sink_tables
from pipelines.storage import exclusive

log = logging.getLogger("deltasink")
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


def run_pipeline(spark: SparkSession, config: PipelineConfig, *, trigger: str = "available-now",
                 interval: str = "10s", validate: bool = True,
                 progress: Progress | None = None, phases: Phases | None = None,
                 metrics_to: Callable[[list[BatchMetrics]], None] | None = None,
                 stopping: Callable[[], bool] | None = None) -> RunResult:
    """Stream Kafka into the Delta target until caught up (or forever), then validate.

    Args:
        spark: the session.
        config: the pipeline config.
        trigger: ``available-now`` (process what exists, then stop) or ``continuous``
            (a micro-batch every ``interval`` until interrupted).
        interval: the micro-batch interval in continuous mode, e.g. ``10s``.
        validate: run the quality suites after the run; in continuous mode also every
            ``quality.validate_every`` (``quality/cadence.py``).
        progress: receives one line per batch and a summary (default: the logger).
        phases: adds the seconds of each phase (source, preflight, tables, lease: the wait for
            the lease, resume, stream, validate) to this clock, for the ``timings:`` line of
            ``deltasink run``.
        metrics_to: takes the run-metrics rows of the query's end instead of the run's own
            write: a group run writes all its pipelines' rows in one commit. Not with
            ``quality.max_staleness``, whose check reads the rows: that run writes its own.
        stopping: a stop asked of a run on another thread than the main one (a group's stop
            signal, which only the main thread receives): checked before the query starts
            (the run then raises ``KeyboardInterrupt``) and every second while it runs (the
            query is stopped as Ctrl-C stops it, and the run returns what it committed).

    Returns:
        The run's batches and totals.

    Raises:
        DeltasinkError: a subclass naming what went wrong; nothing partial is left behind.
    """
    say = progress or log.info
    clock = phases or Phases()
    schema = config.event_schema()
    run_id = uuid.uuid4().hex[:12]
    client = side_session(spark, config.spark.remote)  # never the stream's, under Connect
    # The lease is taken on a side thread while the start-up checks run; everything that needs
    # it (resuming, the query, every commit) runs after claim.wait().
    with claim_checkpoint(client, config.checkpoint, config.name) as claim, Aside() as aside:
        with clock.phase("source"):
            source = topics.inspect_source(spark, config.source, config.source.broker_timeout)
        partitions = source.partitions
        if source.gap is not None:  # Spark's source is the only client: say what that costs
            say(reach.reduced_checks(source.gap, config.source))
        with clock.phase("preflight"):
            for note in preflight.check_locations(spark, config) + \
                    exclusive.commit_notes(spark, preflight.tables(config), on_databricks()):
                say(note)
            writer_schemas(config)  # Avro: the registry answers, or the .avsc reads, first
        with clock.phase("tables"):
            faults.arm_registration_kill(spark)  # test-only: a kill inside a table's CREATE
            ensure_sink_tables(spark, config, schema)
        batches = RunLog()
        recorder = None
        harvest: Harvest | None = None
        if config.quality.enabled:  # per batch, so crashed and unvalidated runs count too
            from quality.recorder import MetricsRecorder

            keep = metrics_to if config.quality.max_staleness is None else None
            recorder = MetricsRecorder(client, config, say, keep)  # never fails a batch
            harvest = harvester(recorder.flush, say)
            if config.quality.max_staleness is None:  # the staleness check reads those rows
                harvest = _final_aside(harvest, aside)
        cadence = None
        if validate and config.quality.enabled and trigger == "continuous":
            from quality.cadence import CadenceValidator

            cadence = CadenceValidator(spark, config, run_id, say)  # quality.validate_every

        def on_batch(metrics: BatchMetrics) -> None:
            batches.add(metrics)
            if metrics.rerun:  # the batch's own retry line, carried by its commit
                say(metrics.rerun)
            say(metrics.progress_line())
            if recorder is not None:
                recorder.record(metrics)
            if cadence is not None:
                cadence(metrics)  # after the commit; may raise QualityError (on_failure: stop)

        with clock.phase("lease"):
            lease = claim.wait()
        say(f"run {run_id}: {config.describe}")
        feed = BatchFeed(client, config, run_id, on_batch)
        with clock.phase("resume"):
            resume = agree(spark, config, partitions, lease, say, now=source.identity)
            if source.gap is None:  # else Spark's failOnDataLoss (reach.reduced_checks)
                check_retention(spark, config, resume.offsets, say, partitions)
            if recorder is not None:
                recorder.backfill()  # rows of batches committed without one (crash, failure)
        with clock.phase("stream"):
            _stream(spark, config, run_id, trigger, interval, partitions, feed, say,
                    resume, lease, harvest, own_client=source.gap is None, stopping=stopping)
        claim.release_soon()  # nothing left to write under it: released while validating
        result = batches.result(config.name, run_id)
        say(f"run {run_id} done: {result.batch_count} batches, in={result.records_in} "
            f"inserted={result.inserted} quarantined={result.quarantined}")
        with clock.phase("validate"):
            if cadence is not None:
                cadence.finish()  # what the stream committed since its last cadence validation
            elif validate and config.quality.enabled:
                from quality.cadence import validate_run

                validate_run(spark, config, result, say)
    return result


def _final_aside(harvest: Harvest, aside: Aside) -> Harvest:
    """``harvest`` whose final write (the run's metrics rows, after the query ended) runs on a
    side thread, beside the validation; the run waits for it before it ends."""

    def harvest_aside(query: StreamingQuery, final: bool = False) -> None:
        if final:
            aside.wait()  # a query restarted after an outage: one final write at a time
            aside.start("deltasink-metrics", harvest, query, final=True)
        else:
            harvest(query)

    return harvest_aside


def _stream(spark: SparkSession, config: PipelineConfig, run_id: str, trigger: str,
            interval: str, partitions: dict[str, list[int]],
            feed: BatchFeed, say: Progress, resume: Resume, lease: Lease,
            harvest: Harvest | None = None, own_client: bool = True,
            stopping: Callable[[], bool] | None = None) -> None:
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
        query = lease.start(writer)  # a racing second writer is a CheckpointError
        try:
            _watch(spark, query, config, outage, feed, harvest, probe=own_client,
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


def _watch(spark: SparkSession, query: StreamingQuery, config: PipelineConfig,
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
        KeyboardInterrupt: ``stopping`` said so (a group's stop signal).
    """
    timeout = config.source.broker_timeout
    harvested = probed = time.monotonic()
    while not query.awaitTermination(1):  # each finished batch is reported within a second
        _report(feed, query, lambda _line: None)  # a failure here is said at the query's end
        if stopping is not None and stopping():
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
