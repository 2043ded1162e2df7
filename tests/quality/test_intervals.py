"""An SCD2 history's intervals: per key, each version ends before (or as) the next begins."""

from __future__ import annotations

from pyspark.sql import SparkSession

from quality.intervals import INTERVALS_EXPECTATION, interval_outcome

SCHEMA = "id int, __START_AT long, __END_AT long"


def test_versions_that_follow_each_other_pass(spark: SparkSession) -> None:
    rows = spark.createDataFrame([(1, 10, 20), (1, 20, 30), (1, 40, None), (2, 5, None)],
                                 SCHEMA)  # a gap (a delete at 30, back at 40) is no overlap
    got = interval_outcome(rows, ["id"], "__START_AT", "__END_AT")
    assert got.expectation == INTERVALS_EXPECTATION and got.success


def test_an_overlap_an_open_version_before_another_and_a_backwards_one_fail(
        spark: SparkSession) -> None:
    rows = spark.createDataFrame([(1, 10, 25), (1, 20, None),  # overlaps the next
                                  (2, 10, None), (2, 30, None),  # two open versions
                                  (3, 50, 40)], SCHEMA)  # ends before it starts
    got = interval_outcome(rows, ["id"], "__START_AT", "__END_AT")
    assert not got.success and got.unexpected_count == 3
    assert got.sample_keys == ["1", "2", "3"]
