"""The batch is computed once: materialized before the MERGE, freed after, parsed once per row."""

from __future__ import annotations

import uuid
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType

from pipelines.broker import EmbeddedBroker
from pipelines.produce import produce_events
from pipelines.sink.dedup import dedup_on_key
from pipelines.sink.materialize import materialize, release
from pipelines.sink.merge import insert_only_merge, literal_filter
from pipelines.sink.parse import classify, valid_events
from pipelines.tables import TableRef
from schemas import get_schema


def _persistent_rdds(spark: SparkSession) -> set[int]:
    return {int(k) for k in spark.sparkContext._jsc.getPersistentRDDs()}  # type: ignore[union-attr]


def test_the_merge_does_not_read_kafka_again(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path) -> None:
    # Inside foreachBatch, a *persisted* batch was re-read from Kafka and re-parsed by the
    # MERGE (seen in the Spark event log); a materialized one must be computed exactly once.
    topic = f"once-{uuid.uuid4().hex[:8]}"
    sent = produce_events(broker.bootstrap_servers, topic, 300, partitions=2)
    calls = spark.sparkContext.accumulator(0)

    def tag(value: bytes) -> bytes:
        calls.add(1)
        return value

    tagged = F.udf(tag, BinaryType())
    schema = get_schema("events_v1")
    ref = TableRef(path=str(lake / "once"))
    ref.create_if_missing(spark, schema.target_schema(), ("event_date",))
    inserted: list[int] = []

    def sink(batch: DataFrame, _batch_id: int) -> None:
        # The sink's own steps, in its order, with the raw value counted as it is read.
        raw = batch.withColumn("value", tagged("value"))
        classified = materialize(classify(raw, schema, 1_000_000))
        deduped = materialize(dedup_on_key(valid_events(classified, schema), "event_id"))
        dates = [r[0] for r in deduped.select("event_date").distinct().collect()]
        try:
            inserted.append(insert_only_merge(
                ref.delta(batch.sparkSession), deduped, ("event_date", "event_id"),
                literal_filter("t", {"event_date": dates})).inserted)
        finally:
            release(classified)
            release(deduped)

    query = (spark.readStream.format("kafka")
             .option("kafka.bootstrap.servers", broker.bootstrap_servers)
             .option("subscribe", topic).option("startingOffsets", "earliest").load()
             .writeStream.foreachBatch(sink).trigger(availableNow=True)
             .option("checkpointLocation", str(lake / "ckpt")).start())
    query.awaitTermination()
    assert sum(inserted) == sent.sent
    assert calls.value == sent.sent  # computed by materialize only; the MERGE read the blocks


def test_release_drops_the_blocks(spark: SparkSession) -> None:
    before = _persistent_rdds(spark)
    df = materialize(spark.range(100).withColumn("x", F.col("id") * 2))
    held = _persistent_rdds(spark) - before
    assert held, "materialize should hold the computed blocks"
    assert df.count() == 100
    release(df)
    assert not (_persistent_rdds(spark) & held)


def test_release_ignores_dataframes_that_were_not_materialized(spark: SparkSession) -> None:
    release(None)
    release(spark.range(3))  # no error: not a local checkpoint


def _kafka_rows(spark: SparkSession) -> DataFrame:
    body = F.format_string('{"event_id":"e-%d","event_type":"t","event_time":'
                           '"2026-11-20T10:00:00Z","payload":{}}', F.col("id"))
    return spark.range(10).select(
        F.lit(None).cast("binary").alias("key"), F.encode(body, "utf-8").alias("value"),
        F.lit("t").alias("topic"), F.lit(0).alias("partition"), F.col("id").alias("offset"),
        F.current_timestamp().alias("timestamp"), F.lit(0).alias("timestampType"))


def test_valid_events_parse_each_record_once(spark: SparkSession) -> None:
    schema = get_schema("events_v1")
    events = valid_events(classify(_kafka_rows(spark), schema, 1_000_000), schema)
    plan = events._jdf.queryExecution().optimizedPlan().toString()  # type: ignore[operator]
    assert plan.count("parseJson") == 1, plan
    assert events.count() == 10
