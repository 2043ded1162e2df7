"""Latest-wins upserts: keep-latest, the settings' checks, and convergence to a Python model."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.config.model import PipelineConfig
from pipelines.errors import ConfigError
from pipelines.sink.batch import BatchSink
from pipelines.sink.metrics import BatchMetrics
from pipelines.sink.modes.upsert import check_upsert, flag_deletes, keep_latest, sequence_columns
from pipelines.sink.tables import ensure_sink_tables
from schemas import get_schema
from tests.support.configs import make_config
from tests.support.upsert_model import (
    UPSERT,
    Version,
    kafka_rows,
    make_versions,
    mismatches,
    table_state,
)

BOOTSTRAP = "127.0.0.1:9"  # never dialled: these tests feed the sink DataFrames directly


def upsert_config(lake: Path, **target: object) -> PipelineConfig:
    return make_config(lake, BOOTSTRAP, "orders", target={**UPSERT, **target})


def sink_for(spark: SparkSession, cfg: PipelineConfig, seen: list[BatchMetrics]) -> BatchSink:
    schema = get_schema(cfg.schema_name)
    ensure_sink_tables(spark, cfg, schema)
    return BatchSink(cfg, schema, "run-upsert", lambda _s: "query-upsert",
                     lambda _s, b: {"orders": {0: 1000 * (b + 1)}}, on_batch=seen.append)


def test_keep_latest_keeps_the_highest_sequence_per_key(spark: SparkSession) -> None:
    rows = spark.createDataFrame(
        [("a", 1, 0, 10, "t"), ("a", 3, 0, 11, "t"), ("a", 2, 0, 12, "t"), ("b", 5, 1, 1, "t")],
        "event_id string, seq int, kafka_partition long, kafka_offset long, kafka_topic string")
    got = {r["event_id"]: r["seq"]
           for r in keep_latest(rows, ("event_id",), sequence_columns("seq")).collect()}
    assert got == {"a": 3, "b": 5}


def test_keep_latest_by_kafka_takes_the_highest_offset_and_breaks_ties_by_coordinates(
        spark: SparkSession) -> None:
    rows = spark.createDataFrame(
        [("a", 7, 0, 10, "t"), ("a", 1, 0, 12, "t"), ("b", 1, 0, 5, "t"), ("b", 2, 0, 5, "u")],
        "event_id string, seq int, kafka_partition long, kafka_offset long, kafka_topic string")
    got = {r["event_id"]: r["seq"]
           for r in keep_latest(rows, ("event_id",), sequence_columns("kafka")).collect()}
    assert got == {"a": 1, "b": 2}  # offset 12 beats 10; equal coordinates: topic 'u' > 't'
    same_seq = keep_latest(rows, ("event_id",), sequence_columns("seq"))
    assert {r["event_id"]: r["kafka_offset"] for r in same_seq.collect()} == {"a": 10, "b": 5}


def test_flag_deletes_marks_the_rows_delete_when_matches_and_null_as_not_deleted(
        spark: SparkSession) -> None:
    rows = spark.createDataFrame([("a", "d"), ("b", "u"), ("c", None)], "id string, op string")
    got = {r["id"]: r["_deleted"] for r in flag_deletes(rows, "op = 'd'").collect()}
    assert got == {"a": True, "b": False, "c": False}
    assert {r["_deleted"] for r in flag_deletes(rows, None).collect()} == {False}


@pytest.mark.parametrize(("target", "message"), [
    ({"sequence_by": "event_time"}, "only apply with target.mode: upsert"),
    ({"mode": "upsert", "dedup_window": "1d"}, "leave dedup_window out"),
])
def test_contradictory_mode_settings_are_refused(lake: Path, target: dict[str, object],
                                                 message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        make_config(lake, BOOTSTRAP, "orders", target=target)


@pytest.mark.parametrize(("target", "message"), [
    ({"sequence_by": "updated_at"}, "is not a column of schema"),
    ({"sequence_by": "payload"}, "is optional in schema"),
    ({"delete_when": "op = = 'd'"}, "is not a valid Spark SQL expression"),
    ({"delete_when": "nope = 'd'"}, "is not a valid Spark SQL expression"),
    ({"delete_when": "event_type"}, "not a boolean"),
])
def test_a_bad_sequence_by_or_delete_when_is_one_config_error(
        spark: SparkSession, lake: Path, target: dict[str, object], message: str) -> None:
    cfg = upsert_config(lake, **target)
    with pytest.raises(ConfigError, match=message) as err:
        check_upsert(spark, cfg.target, get_schema(cfg.schema_name))
    assert "\n" not in str(err.value)


def test_shuffled_batches_replays_and_late_versions_converge_to_the_model(
        spark: SparkSession, lake: Path) -> None:
    rng = random.Random(13)
    cfg = upsert_config(lake)
    seen: list[BatchMetrics] = []
    sink = sink_for(spark, cfg, seen)
    versions = make_versions(12, range(1, 6), rng)
    batches = [versions[i:i + 20] for i in range(0, len(versions), 20)]
    offset = 0
    frames = []
    for batch_id, chunk in enumerate(batches):
        frames.append(kafka_rows(spark, chunk, offset, partitions=3))
        offset += len(chunk)
        sink(frames[-1], batch_id)
    assert mismatches(spark, cfg, versions) == []

    sink(frames[2], 2)  # the same batch again (a restart): skipped by the txn
    assert seen[-1].replayed
    late = len(batches)
    sink(frames[0], late)  # old versions again, under a new batch id: none is newer
    assert not seen[-1].replayed and seen[-1].inserted == seen[-1].updated == 0
    sink(kafka_rows(spark, sorted(versions, key=lambda v: v.seq)[:20], offset), late + 1)
    assert mismatches(spark, cfg, versions) == []
    assert all(len(rows) == 1 for rows in table_state(spark, cfg).values())
    first = [m for m in seen if not m.replayed]
    assert sum(m.inserted for m in first) == 12
    assert all(m.records_in == m.duplicates_in_batch + m.duplicates_by_merge + m.inserted
               + m.updated for m in first)


@pytest.mark.extended
def test_a_delete_then_an_older_version_arriving_late_does_not_resurrect_the_key(
        spark: SparkSession, lake: Path) -> None:
    cfg = upsert_config(lake)
    seen: list[BatchMetrics] = []
    sink = sink_for(spark, cfg, seen)
    sink(kafka_rows(spark, [Version("a", 1), Version("b", 1)], 0), 0)
    sink(kafka_rows(spark, [Version("a", 5, deleted=True)], 2), 1)
    assert seen[-1].updated == 1 and seen[-1].deletes == 1
    sink(kafka_rows(spark, [Version("a", 3), Version("b", 2, deleted=True),
                            Version("b", 4)], 3), 2)
    assert table_state(spark, cfg) == {"a": [(5, True)], "b": [(4, False)]}
    sink(kafka_rows(spark, [Version("a", 6)], 6), 3)  # a newer version brings it back
    assert table_state(spark, cfg)["a"] == [(6, False)]


@pytest.mark.extended
def test_a_version_moving_to_another_event_date_replaces_the_row_there(
        spark: SparkSession, lake: Path) -> None:
    cfg = upsert_config(lake)
    sink = sink_for(spark, cfg, [])
    for batch_id, seq in enumerate((1, 9, 20)):  # 7h apart per seq: days apart
        sink(kafka_rows(spark, [Version("a", seq)], batch_id), batch_id)
    rows = cfg.target.ref.read(spark).collect()
    assert len(rows) == 1 and rows[0]["event_date"].isoformat() == "2026-03-07"
