"""Before streaming: has Kafka retention deleted offsets the pipeline had not read yet?"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import SparkSession

from pipelines.config.model import PipelineConfig
from pipelines.errors import SourceError
from pipelines.kafka import topics


def check_retention(spark: SparkSession, config: PipelineConfig,
                    recorded: dict[str, dict[int, int]] | None, say: Callable[[str], None],
                    partitions: dict[str, list[int]] | None = None) -> None:
    """Compare the offsets the table recorded with the earliest ones Kafka still has.

    ``partitions``: the subscribed partitions, if the caller just listed them. A broker that
    does not answer (or, just back from an outage, has no partition leaders yet) is asked again
    until ``source.broker_timeout``, as at the run's start.

    Raises:
        SourceError: retention deleted unread offsets and ``source.fail_on_data_loss`` is true.
        BrokerError: the broker did not answer within ``source.broker_timeout``, or refused
            the client.
    """
    gone = topics.ride_out(lambda: topics.deleted_offsets(
        spark, config.source, recorded or {}, existing=partitions), config.source.broker_timeout)
    if not gone:
        return
    count = sum(low - nxt for nxt, low in gone.values())
    where = ", ".join(f"{t}[{p}] offsets {nxt}..{low - 1}"
                      for (t, p), (nxt, low) in sorted(gone.items()))
    if config.source.fail_on_data_loss:
        raise SourceError(
            f"Kafka retention deleted {count} offsets this pipeline had not read yet ({where}); "
            "those records are lost upstream. Re-produce them if you can; to skip them and "
            "continue, set source.fail_on_data_loss: false.")
    say(f"skipping {count} offsets that Kafka retention deleted before they were read "
        f"({where})")
