"""The job a user writes instead of deltasink: Kafka -> from_json -> Delta append, availableNow.

``python -m bench.plain_append BOOTSTRAP TOPIC TARGET CHECKPOINT MAX_PER_BATCH``. It uses the
same Spark settings and jars as deltasink (so the comparison is of the work, not the tuning) and
prints a ``timings:`` line in deltasink's format: Spark start, the stream, the total.
``bench/plain_group.py`` runs one such query per topic in one process.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.query import StreamingQuery


def session(app_name: str) -> SparkSession:
    """A local session with deltasink's Spark settings, Delta and the Kafka connector."""
    from delta import configure_spark_with_delta_pip
    from pyspark.sql import SparkSession

    from pipelines.runtime import jvm
    from pipelines.runtime.spark import LOCAL_CONF

    builder = SparkSession.builder.master("local[2]").appName(app_name)
    for key, value in {**LOCAL_CONF, **jvm.spark_conf()}.items():
        builder = builder.config(key, value)
    spark = configure_spark_with_delta_pip(
        builder, extra_packages=[jvm.KAFKA_CONNECTOR]).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def start_append(spark: SparkSession, bootstrap: str, topic: str, target: str,
                 checkpoint: str, per_batch: str, every: str | None = None) -> StreamingQuery:
    """Start the plain append of ``topic`` into ``target``: availableNow, or with ``every``
    (e.g. ``"5 seconds"``) a processing-time trigger that runs until stopped
    (``bench/plain_stream.py``)."""
    from pyspark.sql import functions as F

    schema = "event_id STRING, event_type STRING, event_time TIMESTAMP, payload STRING"
    writer = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", per_batch).load()
              .select(F.from_json(F.col("value").cast("string"), schema).alias("e"),
                      "timestamp")
              .select("e.*", F.col("timestamp").alias("kafka_timestamp"))
              .withColumn("event_date", F.to_date("event_time"))
              .writeStream.format("delta").option("checkpointLocation", checkpoint)
              .partitionBy("event_date"))
    writer = (writer.trigger(availableNow=True) if every is None
              else writer.trigger(processingTime=every))
    return writer.start(target)


def run_appends(name: str, bootstrap: str, per_batch: str,
                places: list[tuple[str, str, str]]) -> int:
    """Start one append query per (topic, target, checkpoint), all at once, in one session; wait
    for every one, print the ``timings:`` line; return 0."""
    started = time.monotonic()
    spark = session(name)
    up = time.monotonic()
    queries = [start_append(spark, bootstrap, topic, target, checkpoint, per_batch)
               for topic, target, checkpoint in places]
    for query in queries:
        query.awaitTermination()
    done = time.monotonic()
    print(f"timings: spark {up - started:.1f}s, stream {done - up:.1f}s, "
          f"total {done - started:.1f}s", flush=True)
    spark.stop()
    return 0


def main(argv: list[str]) -> int:
    """Run the plain append once; return 0."""
    bootstrap, topic, target, checkpoint, per_batch = argv
    return run_appends("plain-append", bootstrap, per_batch, [(topic, target, checkpoint)])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
