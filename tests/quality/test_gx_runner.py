"""The cost and the honesty of a validation: Spark jobs counted (never timed), Data Docs redrawn
only when a verdict changes, and a planted duplicate still failing with its sample key."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.config.model import PipelineConfig
from quality.model import ValidationReport
from quality.validate import validate_table
from tests.quality.conftest import DAY1, DAY2, TargetWriter, batch, run_of
from tests.support.jobs import spark_jobs

UNIQUE = "expect_column_values_to_be_unique"

#: The Spark jobs of one passing validation of a run, once the results table exists and Data
#: Docs show a pass: the target's version (1: versions 0 to 15 and the powers of two looked up
#: by name, through Spark's binaryFile source so that it works over Spark Connect), the summary
#: aggregate GX judges (4), the insert-only MERGE of the verdicts into the results table (6),
#: and the key checked against the other dates (3, quality/other_dates.py: the semi-join's
#: stages, even with no other date).
#: It was 23 when GX ran the suite over the rows (14 jobs: its two metric bundles, and a shuffle
#: plus a result job per uniqueness check), and 33 before that, when GX also fetched sample
#: values. Measured: 13 before the other-dates check, 16 with it.
MAX_JOBS_PER_PASSING_VALIDATION = 16


def _validate(spark: SparkSession, config: PipelineConfig, run_id: str) -> ValidationReport:
    return validate_table(spark, config, run=run_of(run_id, batch(run_id, 0, dates=(DAY1, DAY2))))


def _validation_pages(config: PipelineConfig) -> set[str]:
    docs = Path(config.quality.docs_dir)
    return {str(p.relative_to(docs)) for p in docs.rglob("*.html") if "validations" in p.parts}


def test_a_passing_validation_of_a_run_stays_within_its_spark_job_count(
    spark: SparkSession, config: PipelineConfig, write_target: TargetWriter
) -> None:
    write_target([(f"e-{i}", DAY1 if i % 2 else DAY2) for i in range(40)])
    assert _validate(spark, config, "r-warm").success  # creates the results table

    with spark_jobs(spark) as counted:
        report = _validate(spark, config, "r-counted")

    assert report.success, report.summary_lines()
    assert counted.jobs <= MAX_JOBS_PER_PASSING_VALIDATION, counted.jobs
    unique = next(r for r in report.results if r.expectation == UNIQUE)
    assert unique.observed_value == "0 unexpected of 40 rows"  # the verdict step counted rows


def test_a_duplicate_planted_after_passes_still_fails_with_its_key(
    spark: SparkSession, config: PipelineConfig, write_target: TargetWriter
) -> None:
    write_target([(f"e-{i}", DAY1) for i in range(10)])
    assert _validate(spark, config, "r-1").success
    write_target([("e-4", DAY1)])  # planted straight into Delta

    report = _validate(spark, config, "r-2")

    assert not report.success
    unique = next(r for r in report.results if r.expectation == UNIQUE)
    assert not unique.success and unique.unexpected_count == 2 and unique.sample_keys == ["e-4"]
    assert all(r.success for r in report.results if r.unexpected_count == 0)


@pytest.mark.extended
def test_data_docs_are_redrawn_only_when_the_verdict_changes_or_fails(
    spark: SparkSession, config: PipelineConfig, write_target: TargetWriter
) -> None:
    write_target([(f"e-{i}", DAY1) for i in range(10)])

    first = _validate(spark, config, "r-pass-1")
    drawn = _validation_pages(config)
    second = _validate(spark, config, "r-pass-2")  # same verdict: the site is left as it is
    unchanged = _validation_pages(config)
    write_target([("e-7", DAY1)])
    failed = _validate(spark, config, "r-fail")  # the verdict changes: redrawn, with the key
    after_failure = _validation_pages(config)

    assert first.success and second.success and not failed.success
    assert len(drawn) == 1 and "r-pass-1" in next(iter(drawn))
    assert unchanged == drawn
    new = after_failure - drawn
    assert len(new) == 1 and "r-fail" in next(iter(new))
    page = (Path(config.quality.docs_dir) / next(iter(new))).read_text(encoding="utf-8")
    assert "e-7" in page and "event_id" in page
    assert second.docs_index == first.docs_index is not None
