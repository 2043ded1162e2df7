"""The plain job of several topics: one process, one Kafka -> Delta append query per topic.

``python -m bench.plain_group BOOTSTRAP WORK MAX_PER_BATCH TOPIC [TOPIC ...]``: what a user
writes instead of a group run. Each topic's query appends to ``WORK/<topic>/target`` with its
checkpoint beside it; all queries start at once (``availableNow``) and the process waits for
every one. Same Spark settings and jars as deltasink, as ``bench/plain_append.py``.
"""

from __future__ import annotations

import sys
import time


def main(argv: list[str]) -> int:
    """Run every topic's plain append once, concurrently; return 0."""
    started = time.monotonic()
    from delta import configure_spark_with_delta_pip
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from pipelines.runtime import jvm
    from pipelines.runtime.spark import LOCAL_CONF

    bootstrap, work, per_batch, *topics = argv
    builder = SparkSession.builder.master("local[2]").appName("plain-group")
    for key, value in {**LOCAL_CONF, **jvm.spark_conf()}.items():
        builder = builder.config(key, value)
    spark = configure_spark_with_delta_pip(
        builder, extra_packages=[jvm.KAFKA_CONNECTOR]).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    up = time.monotonic()
    schema = "event_id STRING, event_type STRING, event_time TIMESTAMP, payload STRING"
    queries = [
        spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic).option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", per_batch).load()
        .select(F.from_json(F.col("value").cast("string"), schema).alias("e"), "timestamp")
        .select("e.*", F.col("timestamp").alias("kafka_timestamp"))
        .withColumn("event_date", F.to_date("event_time"))
        .writeStream.format("delta").option("checkpointLocation", f"{work}/{topic}/checkpoint")
        .partitionBy("event_date").trigger(availableNow=True).start(f"{work}/{topic}/target")
        for topic in topics]
    for query in queries:
        query.awaitTermination()
    done = time.monotonic()
    print(f"timings: spark {up - started:.1f}s, stream {done - up:.1f}s, "
          f"total {done - started:.1f}s", flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
