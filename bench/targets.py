"""Existing target tables of a given size, built directly with Spark (not through Kafka)."""

from __future__ import annotations

import shutil
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipelines.storage.tables import TableRef
from schemas import get_schema

#: Rows are spread over whole days up to today; one file per ``event_date`` partition.
_SECONDS_PER_DAY = 86_400


def build_target(spark: SparkSession, path: Path, rows: int, days: int) -> None:
    """Create an ``events_v1`` target at ``path`` with ``rows`` rows over the last ``days`` days.

    Event ids (``old-<n>``) never collide with produced ones, so every produced event is new.
    An empty target (``rows == 0``) is only created, as the sink would.
    """
    schema = get_schema("events_v1").target_schema()
    ref = TableRef(path=str(path))
    ref.create_if_missing(spark, schema, ("event_date",))
    if rows == 0:
        return
    midnight = F.date_trunc("day", F.current_timestamp())
    span = days * _SECONDS_PER_DAY
    seconds = (F.col("id") * F.lit(7919)) % F.lit(span)
    event_time = F.timestamp_seconds(F.unix_timestamp(midnight) + F.lit(_SECONDS_PER_DAY)
                                     - F.lit(1) - seconds)
    df = spark.range(rows).select(
        "id",
        F.concat(F.lit("old-"), F.col("id").cast("string")).alias("event_id"),
        F.element_at(F.array(*[F.lit(t) for t in ("order_placed", "order_paid",
                                                  "order_shipped")]),
                     (F.col("id") % 3 + 1).cast("int")).alias("event_type"),
        event_time.alias("event_time"),
        F.format_string('{"amount":%d.5,"currency":"EUR"}', F.col("id") % 500).alias("payload"),
    ).select(
        "*",
        F.to_date("event_time").alias("event_date"),
        F.lit("old").alias("kafka_topic"),
        F.lit(0).cast("long").alias("kafka_partition"),
        F.col("id").alias("kafka_offset"),
        F.col("event_time").alias("kafka_timestamp"),
        F.current_timestamp().alias("ingested_at"),
    )
    (df.select(*schema.fieldNames()).repartition("event_date")
     .write.format("delta").mode("append").save(str(path)))


def copy_target(base: Path, dest: Path) -> None:
    """Copy a built target (Delta logs hold relative paths, so a folder copy is a table)."""
    shutil.copytree(base, dest)
