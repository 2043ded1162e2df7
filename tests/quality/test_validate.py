"""validate_table against real Delta tables: clean data, planted duplicates, future events,
the quarantine share, snapshot versions, Data Docs and misuse."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.config.model import PipelineConfig
from pipelines.errors import QualityError
from quality.model import ValidationReport
from quality.other_dates import OTHER_DATES_EXPECTATION
from quality.suites import QUARANTINE_EXPECTATION, quarantine_outcome
from quality.validate import validate_table
from schemas import get_schema
from tests.quality.conftest import DAY1, DAY2, TargetWriter, batch, run_of, target_row
from tests.support.configs import make_config

UNIQUE = "expect_column_values_to_be_unique"
DAY3, DAY4 = DAY2 + timedelta(days=1), DAY2 + timedelta(days=2)


def test_clean_table_passes_at_the_recorded_version(
    spark: SparkSession, config: PipelineConfig, write_target: TargetWriter
) -> None:
    write_target([(f"e-{i}", DAY1 if i % 2 else DAY2) for i in range(20)])
    latest = config.target.ref.history(spark, 1).collect()[0]["version"]

    report = validate_table(spark, config, dates=[DAY1, DAY2])

    assert report.success, report.summary_lines()
    assert report.table_version == latest
    names = {r.expectation for r in report.results}
    assert {UNIQUE, "expect_column_values_to_not_be_null", "expect_column_to_exist",
            "expect_column_values_to_be_between",
            "expect_compound_columns_to_be_unique"} <= names
    assert all(r.success for r in report.results)
    assert report.summary_lines()[0].startswith("quality PASSED")


@pytest.fixture(scope="module")
def planted(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory
            ) -> tuple[PipelineConfig, ValidationReport]:
    """One validation of a table with a duplicate planted straight into Delta (shared: GX runs
    take seconds)."""
    lake = tmp_path_factory.mktemp("planted")
    config = make_config(lake, "127.0.0.1:9", "orders")
    schema = get_schema("events_v1").target_schema()
    config.target.ref.create_if_missing(spark, schema, config.target.partition_by)
    for rows in ([target_row(f"e-{i}", DAY1, offset=i) for i in range(10)],
                 [target_row("e-3", DAY1, offset=99)]):  # the planted duplicate
        spark.createDataFrame(rows, schema).write.format("delta").mode("append").save(
            config.target.path)
    return config, validate_table(spark, config, dates=[DAY1])


def test_planted_duplicate_fails_and_summary_names_check_and_key(
    planted: tuple[PipelineConfig, ValidationReport],
) -> None:
    _, report = planted

    assert not report.success
    unique = next(r for r in report.results if r.expectation == UNIQUE)
    assert not unique.success and unique.column == "event_id"
    assert unique.unexpected_count == 2 and unique.sample_keys == ["e-3"]
    failing = "\n".join(report.summary_lines()[1:])
    assert f"FAILED {UNIQUE} on event_id" in failing
    assert "e-3" in failing and "2 unexpected" in failing
    assert report.summary_lines()[0].startswith("quality FAILED")


@pytest.mark.extended
def test_a_duplicate_across_partitions_is_found_from_either_date_and_by_full(
    spark: SparkSession, config: PipelineConfig, write_target: TargetWriter
) -> None:
    write_target([("a", DAY1), ("b", DAY1), ("c", DAY2)])
    write_target([("a", DAY2)])  # same key in another partition
    write_target([("z", DAY3), ("z", DAY4)])  # a pair on two dates nobody selects

    both = validate_table(spark, config, dates=[DAY1, DAY2])
    one = validate_table(spark, config, dates=[DAY1])
    other = validate_table(spark, config, dates=[DAY2])
    full = validate_table(spark, config, full=True)

    assert not both.success, "uniqueness must span all selected partitions"
    for report, elsewhere in ((one, DAY2), (other, DAY1)):  # the pair's other date is not read
        unique = next(r for r in report.results if r.expectation == UNIQUE)
        across = next(r for r in report.results if r.expectation == OTHER_DATES_EXPECTATION)
        assert unique.success and not report.success  # only the key column of the rest is read
        assert (across.unexpected_count, across.sample_keys) == (1, ["a"])
        assert str(elsewhere) in across.observed_value
    assert not full.success
    assert set(next(r for r in full.results if r.expectation == UNIQUE).sample_keys) == {"a", "z"}
    assert OTHER_DATES_EXPECTATION not in {r.expectation for r in full.results}  # no need


@pytest.mark.extended
def test_event_time_too_far_in_future_fails(
    spark: SparkSession, config: PipelineConfig
) -> None:
    schema = get_schema("events_v1").target_schema()
    config.target.ref.create_if_missing(spark, schema, config.target.partition_by)
    now = datetime.now(UTC)
    skew = timedelta(seconds=config.quality.max_future_skew)
    rows = [target_row("soon", DAY1, event_time=now + skew / 2),
            target_row("too-late", DAY1, event_time=now + skew + timedelta(minutes=10))]
    spark.createDataFrame(rows, schema).write.format("delta").mode("append").save(
        config.target.path)

    report = validate_table(spark, config, dates=[DAY1])

    future = next(r for r in report.results if r.column == "event_time"
                  and r.expectation == "expect_column_values_to_be_between")
    assert not report.success and not future.success
    assert future.unexpected_count == 1 and future.sample_keys == ["too-late"]


@pytest.mark.parametrize(("quarantined", "passes"), [(0, True), (10, True), (11, False)])
def test_quarantine_ratio_boundary(quarantined: int, passes: bool) -> None:
    outcome = quarantine_outcome(1000, quarantined, 0.01)

    assert outcome.expectation == QUARANTINE_EXPECTATION
    assert outcome.success is passes
    assert outcome.unexpected_count == (0 if passes else quarantined)


def test_quarantine_ratio_of_empty_run_passes() -> None:
    assert quarantine_outcome(0, 0, 0.0).success


@pytest.mark.parametrize(("quarantined", "passes"), [(5, True), (11, False)])
def test_quarantine_ratio_above_threshold_fails_the_run(
    spark: SparkSession, config: PipelineConfig, quarantined: int, passes: bool
) -> None:
    assert config.quality.max_quarantine_ratio == 0.01
    run = run_of("r-q", batch("r-q", 0, records_in=600, quarantined=quarantined),
                 batch("r-q", 1, records_in=400),
                 batch("r-q", 2, records_in=1000, quarantined=500, replayed=True))

    report = validate_table(spark, config, run=run)  # no dates: the target is not read

    assert report.table_version is None
    assert [r.expectation for r in report.results] == [QUARANTINE_EXPECTATION]
    assert report.success is passes
    assert f"{quarantined}/1000" in report.results[0].observed_value  # replay not counted
    assert (QUARANTINE_EXPECTATION in "\n".join(report.summary_lines())) is not passes


def test_run_dates_select_partitions_and_add_quarantine_check(
    spark: SparkSession, config: PipelineConfig, write_target: TargetWriter
) -> None:
    write_target([("x", DAY1), ("y", DAY2), ("y", DAY2)])
    run = run_of("r-1", batch("r-1", 0, dates=(DAY1,)))

    report = validate_table(spark, config, run=run)  # only DAY1, from run.event_dates

    assert report.success, report.summary_lines()
    assert report.run_id == "r-1"
    assert any(r.expectation == UNIQUE for r in report.results)
    assert report.results[-1].expectation == QUARANTINE_EXPECTATION


def test_nothing_selected_validates_nothing(spark: SparkSession, config: PipelineConfig) -> None:
    report = validate_table(spark, config)  # the target does not even exist: it is not read

    assert report.success and report.results == [] and report.table_version is None
    assert not config.quality.results_ref.exists(spark)


def test_missing_target_is_a_clear_quality_error(
    spark: SparkSession, config: PipelineConfig
) -> None:
    with pytest.raises(QualityError, match="target table does not exist"):
        validate_table(spark, config, full=True)


def test_data_docs_are_built_and_mention_the_checks(
    planted: tuple[PipelineConfig, ValidationReport],
) -> None:
    config, report = planted

    docs = Path(config.quality.docs_dir)
    index = docs / "index.html"
    assert index.is_file()
    assert report.docs_index == index.resolve().as_uri()
    pages = {p: p.read_text(encoding="utf-8") for p in docs.rglob("*.html")}
    validation_pages = [t for p, t in pages.items() if "validations" in p.parts]
    assert len(validation_pages) == 1, sorted(str(p) for p in pages)
    text = validation_pages[0]
    for mention in ("event_id", "unique", "event_time", "e-3", "orders_bronze.target"):
        assert mention in text, mention
    assert "orders_bronze.target" in index.read_text(encoding="utf-8")
