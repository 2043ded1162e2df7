"""Deterministic in-batch deduplication on the event key (one column or several)."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

#: The first record wins: earliest Kafka timestamp, then topic, partition and offset. The order
#: is total, so a replayed batch keeps exactly the same rows.
FIRST_BY = ("kafka_timestamp", "kafka_topic", "kafka_partition", "kafka_offset")


def dedup_on_key(events: DataFrame, keys: tuple[str, ...],
                 order_by: tuple[str, ...] = FIRST_BY) -> DataFrame:
    """Keep one row per ``keys`` tuple: the first by ``order_by``.

    Args:
        events: parsed, valid event rows.
        keys: the dedup key columns (e.g. ``("event_id",)``; several for a composite key).
        order_by: the columns that pick the survivor, ascending.

    Returns:
        ``events`` with at most one row per key, same columns.
    """
    return first_per_key(events, keys, [F.col(c).asc_nulls_last() for c in order_by])


def first_per_key(events: DataFrame, keys: tuple[str, ...], order: list[Column]) -> DataFrame:
    """Keep one row per ``keys`` tuple: the first by ``order`` (the survivor of a window).

    Args:
        events: rows with the key columns.
        keys: the key columns.
        order: sort expressions; a total order makes the survivor deterministic.

    Returns:
        ``events`` with at most one row per key, same columns.
    """
    window = Window.partitionBy(*keys).orderBy(*order)
    return (events.withColumn("_rank", F.row_number().over(window))
            .where(F.col("_rank") == 1)
            .drop("_rank"))
