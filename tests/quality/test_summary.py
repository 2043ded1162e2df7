"""The summary verdict: GX's check of a one-row summary fails wherever the suite over the rows
fails, and only there, so a pass can be judged without GX reading the rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import great_expectations as gx
import pytest
from great_expectations.expectations.core.expect_column_values_to_be_between import (
    ExpectColumnValuesToBeBetween,
)
from great_expectations.expectations.core.expect_column_values_to_match_regex import (
    ExpectColumnValuesToMatchRegex,
)
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructField, StructType

from pipelines.config.model import PipelineConfig
from quality.gx_runner import run_suite
from quality.suites import target_suite
from quality.summary import COMPOUND_UNIQUE, ROWS, summarize, summary_plan
from schemas import get_schema
from tests.quality.conftest import DAY1, DAY2, target_row
from tests.support.jobs import spark_jobs


def replace_nullable(field: StructField) -> StructField:
    """``field``, nullable."""
    return StructField(field.name, field.dataType, True)


FUTURE = datetime.now(UTC) + timedelta(days=30)


def _rows(spark: SparkSession, fault: str) -> DataFrame:
    """Ten clean target rows over two dates, then one planted ``fault``."""
    # Nullable columns, as in a table written without NOT NULL (Delta enforces the target's).
    schema = StructType([replace_nullable(f) for f in get_schema("events_v1").target_schema()])
    data: list[Any] = [target_row(f"e-{i}", DAY1 if i % 2 else DAY2, offset=i) for i in range(10)]
    if fault == "duplicate key, same date":
        data.append(target_row("e-3", DAY1, offset=99))
    if fault == "duplicate key, another date":
        data.append(target_row("e-3", DAY2, offset=99))
    if fault == "null required field":
        data[4] = (*data[4][:1], None, *data[4][2:])
    if fault == "null key":
        data[5] = (None, *data[5][1:])
    if fault == "event time in the future":
        data[6] = (*data[6][:2], FUTURE, *data[6][3:])
    df = spark.createDataFrame(data, schema)
    return df.drop("payload") if fault == "missing column" else df


FAULTS = ["none", "duplicate key, same date", "duplicate key, another date",
          "null required field", "null key", "event time in the future", "missing column"]


#: ``make test`` checks a pass and the fault the product exists for; the rest are ``extended``.
CORE_FAULTS = {"none", "duplicate key, same date"}


@pytest.mark.parametrize("fault", [
    f if f in CORE_FAULTS else pytest.param(f, marks=pytest.mark.extended) for f in FAULTS])
def test_the_summary_fails_where_the_suite_over_the_rows_fails_and_only_there(
    spark: SparkSession, config: PipelineConfig, tmp_path: Path, fault: str
) -> None:
    suite = target_suite(config)
    plan = summary_plan(suite)
    assert plan is not None
    rows = _rows(spark, fault)

    counts = summarize(rows, plan)
    # A folder without Data Docs makes run_suite judge the rows themselves (it must draw them).
    outcomes, _ = run_suite(rows, target_suite(config), key="event_id", docs_dir=tmp_path,
                            run_name=f"r-{fault}", run_time=datetime.now(UTC))

    by_rows = {(o.expectation, o.column): o.success for o in outcomes}
    by_summary = {(c.kind, c.column): counts[c.label] == 0 for c in plan}
    assert all(by_summary.values()) == all(by_rows.values()) == (fault == "none")
    assert all(by_rows[check] for check, passed in by_summary.items() if passed)  # no false pass
    # Each count is exact, but the key with its date: read from the key's own checks, it fails
    # with them, even where the pair stays unique (the rows step then reports the pair).
    counted = {check: passed for check, passed in by_summary.items() if check[0] != COMPOUND_UNIQUE}
    assert counted == {check: by_rows[check] for check in counted}
    assert counts[ROWS] == rows.count()


def test_a_passing_run_is_judged_by_gx_on_the_summary_and_reported_as_before(
    spark: SparkSession, config: PipelineConfig, tmp_path: Path
) -> None:
    rows = _rows(spark, "none")
    first, _ = run_suite(rows, target_suite(config), key="event_id", docs_dir=tmp_path,
                         run_name="r-1", run_time=datetime.now(UTC))  # draws Data Docs: rows
    drawn = sorted(tmp_path.rglob("*.html"))

    with spark_jobs(spark) as counted:
        second, _ = run_suite(rows, target_suite(config), key="event_id", docs_dir=tmp_path,
                              run_name="r-2", run_time=datetime.now(UTC))  # the summary only

    assert sorted((o.expectation, o.column or "", o.success, o.observed_value) for o in second) \
        == sorted((o.expectation, o.column or "", o.success, o.observed_value) for o in first)
    assert all(o.success for o in second)
    assert counted.jobs <= 4, counted.jobs  # one aggregate; GX over the rows runs 14
    assert sorted(tmp_path.rglob("*.html")) == drawn  # the summary's result is not drawn


def test_a_planted_fault_after_a_pass_is_reported_from_the_rows_with_its_key(
    spark: SparkSession, config: PipelineConfig, tmp_path: Path
) -> None:
    run_suite(_rows(spark, "none"), target_suite(config), key="event_id", docs_dir=tmp_path,
              run_name="r-1", run_time=datetime.now(UTC))

    outcomes, _ = run_suite(_rows(spark, "duplicate key, another date"), target_suite(config),
                            key="event_id", docs_dir=tmp_path, run_name="r-2",
                            run_time=datetime.now(UTC))

    unique = next(o for o in outcomes if o.expectation == "expect_column_values_to_be_unique")
    assert not unique.success and unique.unexpected_count == 2 and unique.sample_keys == ["e-3"]


def test_a_suite_with_an_expectation_it_cannot_count_is_not_summarized() -> None:
    regex = gx.ExpectationSuite(name="s", expectations=[
        ExpectColumnValuesToMatchRegex(column="event_id", regex="^e-")])
    strict = gx.ExpectationSuite(name="s", expectations=[
        ExpectColumnValuesToBeBetween(column="n", max_value=3, strict_max=True)])
    bounded = gx.ExpectationSuite(name="s", expectations=[
        ExpectColumnValuesToBeBetween(column="n", min_value=1, max_value=3)])

    assert summary_plan(regex) is None
    assert summary_plan(strict) is None
    plan = summary_plan(bounded)
    assert plan is not None and plan[0].kwargs == {"min_value": 1, "max_value": 3}


@pytest.mark.extended
def test_a_summary_that_cannot_be_computed_leaves_the_verdict_to_the_rows(
    spark: SparkSession, config: PipelineConfig, tmp_path: Path
) -> None:
    run_suite(_rows(spark, "none"), target_suite(config), key="event_id", docs_dir=tmp_path,
              run_name="r-1", run_time=datetime.now(UTC))  # Data Docs show a pass
    # An event time that is no time: the summary's bound cannot be compared with it.
    rows = _rows(spark, "none").withColumn("event_time", F.struct(F.lit(1).alias("x")))

    outcomes, _ = run_suite(rows, target_suite(config), key="event_id", docs_dir=tmp_path,
                            run_name="r-2", run_time=datetime.now(UTC))

    between = next(o for o in outcomes if o.expectation == "expect_column_values_to_be_between")
    assert not between.success  # judged by GX over the rows
