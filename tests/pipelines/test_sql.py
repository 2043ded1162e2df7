"""SQL text for Delta statements: every literal parses back to the value it came from."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
from pyspark.sql import SparkSession

from pipelines import sql
from pipelines.sink.merge import within_days
from pipelines.sink.upsert import newer


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
