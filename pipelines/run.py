"""The run's lifecycle: preflight, the tables, the lease, the resume point, the query, validation.

The query itself (its start, its watch, broker outages ridden out) is ``pipelines/query.py``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable

from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from pipelines import faults, preflight
from pipelines.batches import BatchFeed
from pipelines.config.model import PipelineConfig
from pipelines.formats.avro import writer_schemas
from pipelines.kafka import reach, topics
from pipelines.kafka.retention import check_retention
from pipelines.ledger.lag import harvester
from pipelines.ledger.resume import agree
from pipelines.ledger.single_writer import claim_checkpoint
from pipelines.query import Harvest, Progress, stream
from pipelines.runtime.aside import Aside
from pipelines.runtime.phases import Phases
from pipelines.runtime.sessions import on_databricks, side_session
from pipelines.sink.metrics import BatchMetrics, RunResult
from pipelines.sink.run_log import RunLog
from pipelines.sink.tables import ensure_sink_tables
from pipelines.storage import exclusive

log = logging.getLogger("deltasink")


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
            for note in ensure_sink_tables(spark, config, schema):
                say(note)  # a property set, a nested field added, a type widened in place
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
            stream(spark, config, run_id, trigger, interval, partitions, feed, say,
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
