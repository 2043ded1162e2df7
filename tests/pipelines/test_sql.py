"""SQL text for Delta statements: every literal parses back to the value it came from."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import (
    BooleanType,
    DateType,
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from pipelines import sql
from pipelines.sink.merge import within_days
from pipelines.sink.modes.upsert import newer


@pytest.mark.parametrize("value", [
    None, True, False, 0, -7, 2**40, 1.5, Decimal("12.30"), "plain", "it's", "back\\slash",
    "quote'and\\both", "ünïcødé", "", date(2026, 11, 25), datetime(2026, 11, 25, 3, 4, 5, 678),
    datetime(2026, 11, 25, 3, 4, 5, tzinfo=UTC)])
def test_a_literal_parses_back_to_its_value(spark: SparkSession, value: object) -> None:
    got = spark.sql(f"SELECT {sql.literal(value)} AS v").first()
    assert got is not None
    expected = value.replace(tzinfo=None) if isinstance(value, datetime) else value
    assert got["v"] == expected


def test_an_unknown_type_is_refused_not_guessed() -> None:
    with pytest.raises(TypeError, match="no SQL literal for list"):
        sql.literal([1])


def test_identifiers_and_predicates(spark: SparkSession) -> None:
    assert sql.ident("a`b") == "`a``b`"
    assert sql.isin("t", {"d": []}) == "(false)"
    assert sql.all_of([None, None]) is None
    rows = spark.sql(
        "SELECT * FROM VALUES (1, DATE'2026-01-01', 5), (2, DATE'2026-01-03', 5) AS t(k, d, n) "
        f"WHERE {sql.isin('t', {'d': [date(2026, 1, 1), date(2026, 1, 2)]})}").collect()
    assert [r["k"] for r in rows] == [1]
    rows = spark.sql("SELECT * FROM VALUES (1), (2), (3), (4) AS t(k) "
                     f"WHERE {sql.between('t', 'k', 2, 3)}").collect()
    assert sorted(r["k"] for r in rows) == [2, 3]  # both ends included


def test_the_window_and_sequence_predicates_mean_what_the_merge_needs(
        spark: SparkSession) -> None:
    pairs = spark.sql(
        "SELECT * FROM VALUES (DATE'2026-01-01', 1, 1, DATE'2026-01-02', 1, 2), "
        "(DATE'2026-01-01', 1, 1, DATE'2026-01-05', 0, 9), "
        "(DATE'2026-01-01', NULL, NULL, DATE'2026-01-01', 1, 0) "
        "AS x(td, ta, tb, sd, sa, sb)")
    pairs.selectExpr("named_struct('event_date', td, 'a', ta, 'b', tb) AS t",
                     "named_struct('event_date', sd, 'a', sa, 'b', sb) AS s"
                     ).createOrReplaceTempView("pairs")
    got = spark.sql(f"SELECT {within_days('event_date', 1)} AS near, "
                    f"{newer(('a', 'b'))} AS newer FROM pairs").collect()
    assert [(r["near"], r["newer"]) for r in got] == [(True, True), (False, False), (True, True)]


VALUES_SCHEMA = StructType([
    StructField("s", StringType(), False), StructField("n", LongType()),
    StructField("x", DoubleType()), StructField("b", BooleanType()),
    StructField("t", TimestampType()), StructField("d", DateType()),
])


def test_values_gives_the_rows_createdataframe_gives_without_a_python_rdd(
        spark: SparkSession, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [
        {"s": "it's \\ here", "n": 2**40, "x": 1.5, "b": True,
         "t": datetime(2026, 11, 26, 9, 0, 0, 123456, tzinfo=UTC), "d": date(2026, 11, 26)},
        {"s": "", "n": None, "x": float("nan"), "b": None, "t": None, "d": None,
         "ignored": "a key that is not a column"},
        {"s": "missing keys are null"},
    ]
    got = spark.sql(sql.values(rows, VALUES_SCHEMA))
    assert [(f.name, f.dataType) for f in got.schema] == [
        (f.name, f.dataType) for f in VALUES_SCHEMA]
    expected = spark.createDataFrame(
        [{k: r.get(k) for k in VALUES_SCHEMA.fieldNames()} for r in rows], VALUES_SCHEMA)
    assert repr(got.collect()) == repr(expected.collect())  # NaN != NaN, its repr is equal
    got.explain()
    plan = capsys.readouterr().out
    assert "LocalTableScan" in plan and "ExistingRDD" not in plan, plan


def test_values_with_no_rows_has_the_columns_and_nothing_else(spark: SparkSession) -> None:
    empty = spark.sql(sql.values([], VALUES_SCHEMA))
    assert empty.schema.fieldNames() == VALUES_SCHEMA.fieldNames()
    assert empty.collect() == []
