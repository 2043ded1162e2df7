"""The batch is computed once: materialized before the MERGE, freed after, parsed once per row."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType

from pipelines.config.loader import load_config
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import produce_events
from pipelines.kafka.source import read_stream
from pipelines.ledger import checkpoint
from pipelines.run import run_pipeline
from pipelines.sink.batch import BatchSink
from pipelines.sink.materialize import materialize, release
from pipelines.sink.parse import classify, valid_events
from pipelines.sink.prepare import staging_location
from pipelines.sink.tables import ensure_sink_tables
from pipelines.storage.tables import TableRef
from schemas import get_schema
from tests.support.checker import check
from tests.support.configs import write_config


def _persistent_rdds(spark: SparkSession) -> set[int]:
    return {int(k) for k in spark.sparkContext._jsc.getPersistentRDDs()}  # type: ignore[union-attr]


def test_the_sink_reads_each_record_from_kafka_once(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path) -> None:
    # With persist(), Delta's re-planned MERGE source missed the cache inside foreachBatch and
    # re-read the batch from Kafka (seen in the Spark event log): every record was read twice.
    topic = f"once-{uuid.uuid4().hex[:8]}"
    sent = produce_events(broker.bootstrap_servers, topic, 300, duplicate_rate=0.1,
                          partitions=2)
    calls = spark.sparkContext.accumulator(0)

    def tag(value: bytes) -> bytes:
        calls.add(1)
        return value

    tagged = F.udf(tag, BinaryType())
    cfg = load_config(write_config(lake, broker.bootstrap_servers, topic), environ={})
    schema = get_schema(cfg.schema_name)
    ensure_sink_tables(spark, cfg, schema)
    sink = BatchSink(cfg, schema, "run-once", lambda _s: "query-once",
                     lambda s, b: checkpoint.planned_offsets(s, cfg.checkpoint, b))

    def counted(batch: DataFrame, batch_id: int) -> None:
        sink(batch.withColumn("value", tagged("value")), batch_id)  # the real batch body

    query = (read_stream(spark, cfg, "earliest").writeStream.foreachBatch(counted)
             .trigger(availableNow=True).option("checkpointLocation", cfg.checkpoint).start())
    query.awaitTermination()
    assert cfg.target.ref.read(spark).count() == len(sent.event_ids)
    assert calls.value == sent.sent  # computed once by materialize; the MERGE read the blocks


def test_release_drops_the_blocks(spark: SparkSession) -> None:
    before = _persistent_rdds(spark)
    df = materialize(spark.range(100).withColumn("x", F.col("id") * 2))
    held = _persistent_rdds(spark) - before
    assert held, "materialize should hold the computed blocks"
    assert df.count() == 100
    release(df)
    assert not (_persistent_rdds(spark) & held)


def test_release_leaves_dataframes_that_were_not_materialized_alone(
        spark: SparkSession) -> None:
    release(None)  # no error: nothing to release
    before = _persistent_rdds(spark)
    cached = spark.range(3).cache()  # persisted, but not by materialize (no local checkpoint)
    try:
        assert cached.count() == 3
        held = _persistent_rdds(spark)
        assert held - before, "the cache should hold blocks"
        release(cached)  # no error, and a no-op:
        assert _persistent_rdds(spark) == held  # its blocks are still held
        assert cached.count() == 3
    finally:
        cached.unpersist(blocking=True)


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


def test_classify_parses_each_timestamp_field_once_per_row(spark: SparkSession) -> None:
    """The time field's value, its ``bad_timestamp`` check and ``event_date`` share one parse:
    one match of the zone suffix and one cast per row (``events_v1`` has one timestamp)."""
    schema = get_schema("events_v1")
    classified = classify(_kafka_rows(spark), schema, 1_000_000)
    plan = classified._jdf.queryExecution().optimizedPlan().toString()  # type: ignore[operator]
    assert plan.count("RLIKE(") == 1, plan
    assert classified.where("_reason IS NULL").count() == 10


@pytest.mark.extended
def test_a_session_that_refuses_local_checkpoints_stages_the_batch_and_lands_it_once(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Serverless refuses caching and checkpointing: the batch is staged in a Delta table."""
    topic = f"staged-{uuid.uuid4().hex[:8]}"
    sent = produce_events(broker.bootstrap_servers, topic, 600, duplicate_rate=0.1,
                          poison_rate=0.01, seed=3)
    cfg = load_config(write_config(lake, broker.bootstrap_servers, topic,
                                   source={"max_records_per_batch": 250}), environ={})
    monkeypatch.setenv("DELTASINK_FAULT", "no_local_checkpoint")
    result = run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)
    monkeypatch.delenv("DELTASINK_FAULT")
    writes = TableRef(path=staging_location(cfg)).history(spark).count()
    assert writes == len(result.batches) >= 3  # every batch was staged, once
    staged = spark.read.format("delta").load(staging_location(cfg))
    assert staged.count() == result.batches[-1].records_in - result.batches[-1].duplicates_in_batch
    verdict = check(spark, cfg, sent.event_ids, sum(sent.poison.values()))
    assert verdict.clean, verdict
