"""Count the Spark jobs that driver code or a micro-batch runs: a count, never a timing.

Spark job ids are global and increase by one per job, so a one-task probe job before and after
the code brackets the ids of the jobs it ran. Only meaningful while nothing else runs jobs on
the session (no other streaming query, no other thread).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, SparkSession

from pipelines.config.model import PipelineConfig
from pipelines.kafka.source import read_stream
from pipelines.ledger import checkpoint
from pipelines.ledger.lease import Lease
from pipelines.sink.batch import BatchSink
from pipelines.sink.metrics import BatchMetrics
from pipelines.sink.tables import ensure_sink_tables

_GROUP = "deltasink-job-probe"


def last_job_id(spark: SparkSession) -> int:
    """Run a one-task probe job and return its id (two probes bracket the jobs in between)."""
    sc = spark.sparkContext
    sc.setJobGroup(_GROUP, "job-id probe")
    try:
        sc.parallelize([1], 1).count()
        return max(sc.statusTracker().getJobIdsForGroup(_GROUP))
    finally:  # leave no group or description on the thread's later jobs
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        sc.setLocalProperty("spark.job.description", None)  # type: ignore[arg-type]


@dataclass
class CountedBatches:
    """Each batch's metrics and the number of Spark jobs its ``foreachBatch`` call ran."""

    metrics: list[BatchMetrics] = field(default_factory=list)
    jobs: list[int] = field(default_factory=list)


def run_counting_jobs(spark: SparkSession, config: PipelineConfig) -> CountedBatches:
    """Stream the config's topic through a :class:`BatchSink` (available-now) and count each
    batch's Spark jobs, as ``pipelines.run`` would run it (a streaming batch's own session)."""
    schema = config.event_schema()
    ensure_sink_tables(spark, config, schema)
    seen = CountedBatches()
    lease = Lease(config.checkpoint, config.name)
    lease.acquire(spark)  # verified before every commit, as a run does
    sink = BatchSink(config, schema, "run-jobs",
                     lambda s: checkpoint.query_id(s, config.checkpoint),
                     lambda s, b: checkpoint.planned_offsets(s, config.checkpoint, b),
                     guard=lease.verify, on_batch=seen.metrics.append)

    def counted(batch: DataFrame, batch_id: int, body: Callable[[DataFrame, int], None] = sink
                ) -> None:
        before = last_job_id(spark)
        body(batch, batch_id)
        seen.jobs.append(last_job_id(spark) - before - 1)

    query = (read_stream(spark, config, "earliest").writeStream.foreachBatch(counted)
             .option("checkpointLocation", config.checkpoint).trigger(availableNow=True).start())
    query.awaitTermination()
    lease.release(spark)
    return seen


@dataclass
class JobCount:
    """The number of Spark jobs counted so far (set when the ``with`` block ends)."""

    jobs: int = 0


@contextmanager
def spark_jobs(spark: SparkSession) -> Iterator[JobCount]:
    """Count the Spark jobs run inside the ``with`` block (the probes are not counted)."""
    count = JobCount()
    before = last_job_id(spark)
    yield count
    count.jobs = last_job_id(spark) - before - 1
