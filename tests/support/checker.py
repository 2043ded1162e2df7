"""The exactly-once checker: compare what was produced with what landed.

Counts, each of which must be 0:
- lost: a valid event id that was produced but is missing from the target;
- duplicated: an event id that occurs more than once in the target;
- unexpected: a target row whose event id was never produced;
- quarantine_lost / quarantine_duplicated: poison pills missing from, or repeated in, quarantine
  by (topic, partition, offset).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipelines.config.model import PipelineConfig


@dataclass(frozen=True)
class Verdict:
    """The checker's counts."""

    lost: int
    duplicated: int
    unexpected: int
    quarantine_lost: int
    quarantine_duplicated: int

    @property
    def clean(self) -> bool:
        """All counts are zero."""
        return not any(asdict(self).values())


def check(spark: SparkSession, config: PipelineConfig, event_ids: Iterable[str],
          poison_count: int) -> Verdict:
    """Check the target and quarantine tables of ``config`` against the produced input.

    Args:
        spark: the session.
        config: the pipeline whose tables to read.
        event_ids: every distinct valid event id produced.
        poison_count: how many poison records were produced (each must be quarantined once).
    """
    key = config.target.dedup_keys[0]
    expected = set(event_ids)
    target = config.target.ref.read(spark)
    counts = {r[key]: int(r["n"]) for r in target.groupBy(key).agg(F.count("*").alias("n"))
              .collect()}
    quarantine = config.target.quarantine_ref.read(spark)
    q_counts = [int(r["n"]) for r in quarantine.groupBy(
        "kafka_topic", "kafka_partition", "kafka_offset").agg(F.count("*").alias("n")).collect()]
    return Verdict(
        lost=len(expected - counts.keys()),
        duplicated=sum(1 for n in counts.values() if n > 1),
        unexpected=len(counts.keys() - expected),
        quarantine_lost=max(0, poison_count - len(q_counts)),
        quarantine_duplicated=sum(1 for n in q_counts if n > 1),
    )
