"""The quality bookkeeping tables: one run's rows per run, and nothing more on a replay."""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from pipelines.config.model import PipelineConfig
from quality import results
from quality.metrics_append import append_run_metrics, prepare_metrics_table
from quality.model import ExpectationOutcome, ValidationReport
from quality.results import (
    METRICS_PARTITION,
    METRICS_SCHEMA,
    write_run_metrics,
    write_validation_results,
)
from quality.results_read import newest_inserted, read_run_metrics, read_validation_results
from tests.quality.conftest import batch


def report(run_id: str, success: bool = True) -> ValidationReport:
    outcomes = [
        ExpectationOutcome("expect_column_values_to_be_unique", "event_id", success,
                           "0 unexpected of 10 rows", 0 if success else 2,
                           [] if success else ["k"]),
        ExpectationOutcome("expect_column_values_to_not_be_null", "event_id", True, "ok"),
        ExpectationOutcome("expect_compound_columns_to_be_unique", "event_id,event_date", True,
                           "ok"),
        ExpectationOutcome("expect_quarantine_ratio_below_threshold", None, True, "0/10"),
    ]
    return ValidationReport(run_id=run_id, pipeline="orders_bronze", table_version=3,
                            success=success, results=outcomes, validated_at=datetime.now(UTC))


def count(spark: SparkSession, config: PipelineConfig, table: str) -> int:
    ref = config.quality.results_ref if table == "results" else config.quality.metrics_ref
    return int(ref.read(spark).count())


def test_results_grow_by_one_run_per_run_and_rerecording_adds_nothing(
    spark: SparkSession, config: PipelineConfig
) -> None:
    first = report("run-1", success=False)

    write_validation_results(spark, config, first)
    assert count(spark, config, "results") == 4
    write_validation_results(spark, config, first)  # re-recorded (e.g. a retried validation)
    assert count(spark, config, "results") == 4
    write_validation_results(spark, config, report("run-2"))
    assert count(spark, config, "results") == 8

    rows = read_validation_results(spark, config)
    unique = [r for r in rows if r["run_id"] == "run-1"
              and r["expectation"] == "expect_column_values_to_be_unique"]
    assert len(unique) == 1
    assert (unique[0]["success"], unique[0]["unexpected_count"], unique[0]["sample_keys"],
            unique[0]["table_version"], unique[0]["column"]) == (False, 2, "k", 3, "event_id")
    table_level = [r for r in rows if r["column"] is None]
    assert len(table_level) == 2  # one per run: the null column still keys the row


def test_metrics_one_row_per_batch_and_replays_add_nothing(
    spark: SparkSession, config: PipelineConfig
) -> None:
    run1 = [batch("run-1", 0), batch("run-1", 1)]
    write_run_metrics(spark, config, run1)
    assert count(spark, config, "metrics") == 2

    write_run_metrics(spark, config, run1)  # the same batches recorded again
    # batch 1 replayed by the next run (already committed), then a new batch 2
    replay = batch("run-2", 1, records_in=999, replayed=True)
    write_run_metrics(spark, config, [replay, batch("run-2", 2)])
    assert count(spark, config, "metrics") == 3

    rows = read_run_metrics(spark, config)
    assert [(r["run_id"], r["batch_id"]) for r in rows] == [
        ("run-1", 0), ("run-1", 1), ("run-2", 2)]
    assert all(r["records_in"] == 100 and not r["replayed"] for r in rows)
    assert rows[0]["event_dates"] == "" and "merge=1.100" in rows[0]["stage_seconds"]


def test_same_batch_id_of_another_query_is_a_new_row(
    spark: SparkSession, config: PipelineConfig
) -> None:
    write_run_metrics(spark, config, [batch("run-1", 0, query_id="q-1")])
    write_run_metrics(spark, config, [batch("run-9", 0, query_id="q-2")])  # new checkpoint

    assert count(spark, config, "metrics") == 2


def test_rows_appended_twice_are_one_row_each_and_another_query_is_new_rows(
    spark: SparkSession, config: PipelineConfig
) -> None:
    prepare_metrics_table(spark, config)
    append_run_metrics(spark, config, [batch("run-1", 0), batch("run-1", 1)])
    append_run_metrics(spark, config, [batch("run-1", 1, records_in=999)])  # skipped: txn
    append_run_metrics(spark, config, [batch("run-1", 0, records_in=999),
                                       batch("run-1", 1, records_in=999)])  # the same flush
    append_run_metrics(spark, config, [batch("run-1", 2), batch("run-1", 3)])  # the next one
    append_run_metrics(spark, config, [batch("run-9", 1, query_id="q-2")])  # its own app id

    rows = read_run_metrics(spark, config)
    assert sorted((r["query_id"], r["batch_id"], r["records_in"]) for r in rows) == [
        ("q-1", 0, 100), ("q-1", 1, 100), ("q-1", 2, 100), ("q-1", 3, 100), ("q-2", 1, 100)]


def test_missing_tables_read_as_empty_and_empty_writes_create_them(
    spark: SparkSession, config: PipelineConfig
) -> None:
    assert read_run_metrics(spark, config) == []
    assert read_validation_results(spark, config) == []

    write_run_metrics(spark, config, [batch("run-1", 0, replayed=True)])

    assert config.quality.metrics_ref.exists(spark)
    assert count(spark, config, "metrics") == 0


def test_the_metrics_table_is_partitioned_by_pipeline(
    spark: SparkSession, config: PipelineConfig
) -> None:
    write_run_metrics(spark, config, [batch("run-1", 0)])

    detail = config.quality.metrics_ref.detail(spark)
    assert detail is not None and list(detail["partitionColumns"]) == ["pipeline"]


def write_concurrently(spark: SparkSession, config: PipelineConfig, pipelines: list[str],
                       batches: int) -> list[BaseException]:
    """Each pipeline writes one metrics row per batch from its own thread, all at once."""
    errors: list[BaseException] = []
    start = threading.Barrier(len(pipelines))

    def writer(pipeline: str) -> None:
        start.wait()
        for i in range(batches):
            try:
                write_run_metrics(spark, config, [replace(batch("run-1", i), pipeline=pipeline)])
            except BaseException as exc:  # collected: the test asserts there were none
                errors.append(exc)

    threads = [threading.Thread(target=writer, args=(p,)) for p in pipelines]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


@pytest.mark.extended
def test_two_pipelines_writing_metrics_concurrently_never_conflict(
    spark: SparkSession, config: PipelineConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_run_metrics(spark, config, [])  # the table exists (creation races are retried)
    monkeypatch.setattr(results, "_RETRIES", 0)  # any conflict now fails the write

    errors = write_concurrently(spark, config, ["orders_a", "orders_b"], 6)

    assert errors == []
    rows = config.quality.metrics_ref.read(spark).collect()
    keys = sorted((r["pipeline"], r["batch_id"]) for r in rows)
    assert keys == sorted((p, i) for p in ("orders_a", "orders_b") for i in range(6))


@pytest.mark.extended
def test_pipelines_racing_to_create_the_metrics_table_lose_no_row(
    spark: SparkSession, config: PipelineConfig
) -> None:
    errors = write_concurrently(spark, config, ["orders_a", "orders_b", "orders_c"], 3)

    assert errors == []
    rows = config.quality.metrics_ref.read(spark).collect()
    assert sorted((r["pipeline"], r["batch_id"]) for r in rows) == sorted(
        (p, i) for p in ("orders_a", "orders_b", "orders_c") for i in range(3))


def test_an_older_metrics_table_gains_the_lag_columns_before_rows_are_appended(
    spark: SparkSession, config: PipelineConfig
) -> None:
    new = {"newest_event_time", "newest_kafka_timestamp", "freshness_event_s",
           "freshness_kafka_s", "latency_p50_s", "latency_p99_s", "lag_records"}
    older = StructType([f for f in METRICS_SCHEMA.fields if f.name not in new])
    ref = config.quality.metrics_ref
    ref.create_if_missing(spark, older, METRICS_PARTITION)
    old_row = {k: v for k, v in batch("run-0", 0).as_row().items() if k not in new}
    spark.createDataFrame([{**old_row, "recorded_at": datetime.now(UTC)}], older) \
        .write.format("delta").mode("append").save(str(config.quality.metrics_path))

    prepare_metrics_table(spark, config)  # ALTER first: the append adds no column itself
    fresh = replace(batch("run-1", 1), latency_p50_s=0.2, latency_p99_s=0.9, lag_records=7,
                    newest_kafka_timestamp=datetime(2026, 11, 21, 8, 0, tzinfo=UTC))
    append_run_metrics(spark, config, [fresh])

    rows = {r["batch_id"]: r for r in read_run_metrics(spark, config)}
    assert new <= set(rows[0].asDict())
    assert (rows[0]["lag_records"], rows[0]["latency_p99_s"]) == (None, None)  # never known
    assert (rows[1]["lag_records"], rows[1]["latency_p50_s"], rows[1]["latency_p99_s"]) == (
        7, 0.2, 0.9)
    assert newest_inserted(spark, config) == (None, datetime(2026, 11, 21, 8, 0, tzinfo=UTC))


def test_a_bookkeeping_merge_is_narrowed_only_by_values_that_every_match_has() -> None:
    rows = [{"run_id": "r1", "expectation": f"e{i}", "column": None if i == 0 else "c",
             "batch": i} for i in range(40)]
    narrow = results.narrowing(rows, ("run_id", "expectation", "column", "batch"), ())
    # the run id: one value; a null among the columns, or more than 32 batches: not narrowed
    assert set(narrow) == {"run_id"} and set(narrow["run_id"]) == {"r1"}
    few = results.narrowing([{**r, "pipeline": "p"} for r in rows[1:5]],
                            ("run_id", "expectation", "column"), ("pipeline",))
    assert {k: sorted(set(v)) for k, v in few.items()} == {
        "pipeline": ["p"], "run_id": ["r1"], "expectation": ["e1", "e2", "e3", "e4"],
        "column": ["c"]}
