"""A group's bookkeeping: every pipeline's verdicts in one commit, its metrics rows in another,
each row once; a write that fails is an error (verdicts) or a warning (metrics), never lost."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from pyspark.sql import SparkSession

from pipelines.config.model import PipelineConfig
from quality.group_book import GroupBook
from quality.model import ExpectationOutcome, ValidationReport
from tests.quality.conftest import batch
from tests.support.configs import make_config


def report(pipeline: str, run_id: str, success: bool) -> ValidationReport:
    outcome = ExpectationOutcome("expect_column_values_to_be_unique", "event_id", success,
                                 "0 unexpected" if success else "2 unexpected", 0 if success else 2)
    return ValidationReport(run_id, pipeline, 3, success, [outcome], datetime.now(UTC))


def configs(lake: Path) -> tuple[PipelineConfig, PipelineConfig]:
    """Two pipelines sharing the lake's bookkeeping tables."""
    return (make_config(lake, "127.0.0.1:9", "orders", name="orders_bronze"),
            make_config(lake, "127.0.0.1:9", "clicks", name="clicks"))


def commits(spark: SparkSession, path: str | None) -> list[str]:
    return [r["operation"] for r in
            spark.sql(f"DESCRIBE HISTORY delta.`{path}`").orderBy("version").collect()]


def test_a_group_records_every_pipelines_rows_in_one_commit_per_table_and_each_row_once(
        spark: SparkSession, lake: Path) -> None:
    orders, clicks = configs(lake)
    book, said = GroupBook(), []
    book.verdicts_of(orders)(report("orders_bronze", "run-a", True))
    book.verdicts_of(clicks)(report("clicks", "run-b", False))  # a failure is recorded too
    book.metrics_of(orders)([batch("run-a", 0), batch("run-a", 1)])
    book.metrics_of(clicks)([replace(batch("run-b", 0), pipeline="clicks", query_id="q-2")])

    assert book.write(spark, said.append) == {}
    assert said == [
        f"group: the verdicts of 2 pipelines recorded in {orders.quality.results_ref.describe()}"
        ", one commit",
        f"group: the run metrics of 2 pipelines recorded in "
        f"{orders.quality.metrics_ref.describe()}, one commit"]
    assert commits(spark, orders.quality.results_ref.path) == ["CREATE TABLE", "MERGE"]
    assert commits(spark, orders.quality.metrics_ref.path) == ["CREATE TABLE", "MERGE"]
    verdicts = orders.quality.results_ref.read(spark).select("pipeline", "success").collect()
    assert sorted(map(tuple, verdicts)) == [("clicks", False), ("orders_bronze", True)]

    # The same rows again (a retried write): nothing twice, and an empty book writes nothing.
    book.metrics_of(orders)([batch("run-a", 1)])
    assert book.write(spark, said.append) == {}
    assert book.write(spark, said.append) == {}
    keys = orders.quality.metrics_ref.read(spark).select("pipeline", "batch_id").collect()
    assert sorted(map(tuple, keys)) == [("clicks", 0), ("orders_bronze", 0), ("orders_bronze", 1)]


def test_a_verdict_that_cannot_be_recorded_fails_its_pipelines_and_metrics_only_warn(
        spark: SparkSession, lake: Path) -> None:
    blocker = lake / "not-a-folder"
    blocker.write_text("a file where the tables' folder should be\n")
    unwritable = {"results_path": str(blocker / "results"),
                  "metrics_path": str(blocker / "run_metrics")}
    orders = make_config(lake, "127.0.0.1:9", "orders", quality=unwritable)
    book, said = GroupBook(), []
    book.verdicts_of(orders)(report("orders_bronze", "run-a", True))
    book.metrics_of(orders)([batch("run-a", 0)])

    failed = book.write(spark, said.append)

    assert list(failed) == ["orders_bronze"]
    assert str(failed["orders_bronze"]).startswith(
        "its validation passed, but the verdict could not be recorded in delta.`")
    assert "run deltasink validate" in str(failed["orders_bronze"])
    assert len(said) == 1 and said[0].startswith(
        "warning: could not record the run metrics of orders_bronze in delta.`"), said
    assert "next start backfills" in said[0] and "\n" not in said[0]
