"""Count the Spark jobs a piece of driver code runs: a count, never a timing.

Spark job ids are global and increase by one per job, so a one-task probe job before and after
the code brackets the ids of the jobs it ran. Only meaningful while nothing else runs jobs on
the session (no streaming query, no other thread).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from pyspark.sql import SparkSession

_GROUP = "tests-job-probe"


def _probe(spark: SparkSession) -> int:
    """Run a one-task job and return its id."""
    sc = spark.sparkContext
    sc.setJobGroup(_GROUP, "job-id probe")
    try:
        sc.parallelize([1], 1).count()
        return max(sc.statusTracker().getJobIdsForGroup(_GROUP))
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]


@dataclass
class JobCount:
    """The number of Spark jobs counted so far (set when the ``with`` block ends)."""

    jobs: int = 0


@contextmanager
def spark_jobs(spark: SparkSession) -> Iterator[JobCount]:
    """Count the Spark jobs run inside the ``with`` block (the probes are not counted)."""
    count = JobCount()
    before = _probe(spark)
    yield count
    count.jobs = _probe(spark) - before - 1
