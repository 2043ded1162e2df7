"""The run-metrics commit marks: read by name, they can only ever say "all recorded"."""

from __future__ import annotations

import uuid
from datetime import datetime
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import produce_events
from pipelines.ledger.deltalog import LogCommit
from pipelines.run import run_pipeline
from quality.backfill import WINDOW, backfill_run_metrics
from quality.metrics_log import all_recorded, keeps_rows, stamp, stamp_rows, stamped
from tests.support.configs import make_config
from tests.support.jobs import spark_jobs


def commit(operation: str, metadata: str | None = None, params: dict[str, str | None] | None = None,
           metrics: dict[str, str] | None = None) -> LogCommit:
    return LogCommit(7, datetime(2026, 11, 24), operation, params or {}, metadata, metrics or {})


def test_a_stamp_names_its_pipelines_keys_and_nothing_else() -> None:
    mark = stamp("orders", [{"query_id": "q", "batch_id": 2}, {"query_id": "q", "batch_id": 1},
                            {"query_id": "q", "batch_id": 1}])

    assert stamped(commit("MERGE", mark), "orders") == {("q", 1), ("q", 2)}
    assert stamped(commit("MERGE", mark), "clicks") == set()
    assert stamped(commit("MERGE", None), "orders") == set()
    assert stamped(commit("MERGE", '{"deltasink": {"pipeline": "orders"}}'), "orders") == set()
    assert stamped(commit("MERGE", "not json"), "orders") == set()


def test_a_group_stamp_names_each_pipelines_own_keys() -> None:
    rows = [{"pipeline": "orders", "query_id": "q", "batch_id": 3},
            {"pipeline": "clicks", "query_id": "r", "batch_id": 0},
            {"pipeline": "orders", "query_id": "q", "batch_id": 4}]
    mark = stamp_rows(rows)
    assert mark is not None

    assert stamped(commit("MERGE", mark), "orders") == {("q", 3), ("q", 4)}
    assert stamped(commit("MERGE", mark), "clicks") == {("r", 0)}
    assert stamped(commit("MERGE", mark), "views") == set()
    assert stamp_rows(rows[:1]) == stamp("orders", rows[:1])  # one pipeline: the plain mark
    assert stamp_rows([]) is None


@pytest.mark.parametrize(("operation", "params", "metrics", "keeps"), [
    ("MERGE", {}, {"numTargetRowsDeleted": "0"}, True),
    ("MERGE", {}, {}, True),
    ("WRITE", {"mode": "Append"}, {}, True),
    ("CREATE TABLE", {}, {}, True),
    ("OPTIMIZE", {}, {}, True),
    ("MERGE", {}, {"numTargetRowsDeleted": "3"}, False),
    ("WRITE", {"mode": "Overwrite"}, {}, False),
    ("RESTORE", {"version": "2"}, {}, False),
    ("DELETE", {}, {}, False),
    ("TRUNCATE", {}, {}, False),
    ("CREATE OR REPLACE TABLE", {}, {}, False),
])
def test_only_commits_that_cannot_remove_rows_are_passed_over(
        operation: str, params: dict[str, str | None], metrics: dict[str, str],
        keeps: bool) -> None:
    assert keeps_rows(commit(operation, params=params, metrics=metrics)) is keeps


@pytest.mark.extended
@pytest.mark.slow
def test_recorded_batches_are_known_from_a_few_file_reads_and_a_deleted_row_is_backfilled(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path) -> None:
    topic = f"marks-{uuid.uuid4().hex[:8]}"
    cfg = make_config(lake, broker.bootstrap_servers, topic,
                      source={"max_records_per_batch": 200})
    produce_events(broker.bootstrap_servers, topic, 500, seed=5)
    result = run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)
    assert len(result.batches) >= 3

    with spark_jobs(spark) as counted:
        assert all_recorded(spark, cfg, WINDOW)
        assert backfill_run_metrics(spark, cfg) == []
    # The commit files are read through Spark's binaryFile source (the same over Spark
    # Connect): two reads of the newest version and one of the commits, per table, twice (both
    # calls), each a one-task job; no table snapshot. Measured: 8.
    assert counted.jobs <= 8, counted.jobs

    metrics = cfg.quality.metrics_ref
    spark.sql(f"DELETE FROM {metrics.describe()} WHERE pipeline = '{cfg.name}' AND batch_id = 1")
    assert not all_recorded(spark, cfg, WINDOW)  # a DELETE may have removed a row: ask Spark

    done = backfill_run_metrics(spark, cfg)

    assert [b.batch_id for b in done] == [1]
    # Batch 1 is marked again, but the DELETE stays a doubt for the others: Spark is asked.
    assert not all_recorded(spark, cfg, WINDOW)
    assert backfill_run_metrics(spark, cfg) == []
    keys = [(r["query_id"], r["batch_id"]) for r in
            metrics.read(spark).where(f"pipeline = '{cfg.name}'").collect()]
    assert sorted(keys) == sorted((b.query_id, b.batch_id) for b in result.batches)


@pytest.mark.extended
@pytest.mark.slow
def test_a_row_written_without_a_mark_is_not_taken_as_recorded(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path) -> None:
    topic = f"marks-{uuid.uuid4().hex[:8]}"
    cfg = make_config(lake, broker.bootstrap_servers, topic)
    produce_events(broker.bootstrap_servers, topic, 100, seed=6)
    run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)
    metrics = cfg.quality.metrics_ref
    spark.sql(f"RESTORE TABLE {metrics.describe()} TO VERSION AS OF 0")  # as an operator might

    assert not all_recorded(spark, cfg, WINDOW)
    assert [b.batch_id for b in backfill_run_metrics(spark, cfg)] == [0]
