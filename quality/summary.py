"""A target suite's verdict from one aggregate: GX judges a one-row summary, not the rows.

A passing validation used to run the whole suite over the rows: GX cached them and ran about a
dozen Spark jobs (its metric bundles, and a shuffle per uniqueness check). Each expectation of the
target suite is a count, though: rows whose key is shared, rows with a null, values past a bound.
So one Spark aggregate computes every such count over the selected rows (only the columns the
checks read), and GX judges that summary row, in pandas, with one
``expect_column_values_to_be_between(0, 0)`` per expectation of the suite.

What each summary count means, for the expectation it stands for:

* ``expect_column_to_exist``: 1 when the column is missing from the rows (no Spark job);
* ``expect_column_values_to_be_unique``: non-null values minus distinct non-null values, which is
  0 exactly when GX's row-level check passes;
* ``expect_compound_columns_to_be_unique``: rows minus distinct tuples, nulls included (0 means
  no two rows share a tuple, so the row-level check passes whatever it ignores). A tuple holding
  a column that the suite also checks unique and not null is unique whenever those two pass, so
  it is read from them instead of being counted again;
* ``expect_column_values_to_not_be_null``: the nulls;
* ``expect_column_values_to_be_between``: the non-null values outside the bounds.

A summary never passes where the row-level suite fails. When it fails, the caller runs the
row-level suite for the report (its unexpected values and sample keys); a suite with any other
kind of expectation is not summarized at all (:func:`summary_plan` answers None).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DateType, NumericType, TimestampNTZType, TimestampType

from quality.model import ExpectationOutcome

EXIST = "expect_column_to_exist"
UNIQUE = "expect_column_values_to_be_unique"
COMPOUND_UNIQUE = "expect_compound_columns_to_be_unique"
NOT_NULL = "expect_column_values_to_not_be_null"
BETWEEN = "expect_column_values_to_be_between"
#: The summary's row count (not an expectation).
ROWS = "rows"


@dataclass(frozen=True)
class Check:
    """One expectation of the suite, as the summary sees it.

    Attributes:
        kind: the expectation type (one of the five above).
        columns: the column, or the compound key's columns.
        kwargs: the expectation's other arguments (the bounds of ``between``).
    """

    kind: str
    columns: tuple[str, ...]
    kwargs: dict[str, Any]

    @property
    def label(self) -> str:
        """The summary column that holds this check's unexpected count."""
        return f"{self.kind}({','.join(self.columns)})"

    @property
    def column(self) -> str:
        """The column as an outcome names it (compound keys joined by commas)."""
        return ",".join(self.columns)


def summary_plan(suite: Any) -> list[Check] | None:
    """The suite's expectations as summary checks; None if one of them cannot be summarized."""
    plan = []
    for expectation in suite.expectations:
        kind = str(expectation.expectation_type)
        kwargs = dict(expectation.configuration.kwargs)
        if kind == COMPOUND_UNIQUE:
            columns = tuple(kwargs.pop("column_list"))
        elif kind in (EXIST, UNIQUE, NOT_NULL, BETWEEN):
            columns = (kwargs.pop("column"),)
        else:
            return None
        if kind == BETWEEN and any(kwargs.get(k) for k in ("strict_min", "strict_max",
                                                          "parse_strings_as_datetimes")):
            return None
        plan.append(Check(kind, columns, kwargs))
    return plan


def _literal(value: Any) -> Column:
    """A bound as a Spark literal; a naive datetime is UTC, as the suite writes it."""
    if isinstance(value, datetime) and value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return F.lit(value)


def _count(condition: Column) -> Column:
    return F.coalesce(F.sum(F.when(condition, 1).otherwise(0)), F.lit(0)).cast("long")


def _unexpected(check: Check) -> Column:
    """The aggregate of ``check``'s unexpected count (columns known to exist)."""
    first = F.col(check.columns[0])
    if check.kind == UNIQUE:
        return F.count(first) - F.countDistinct(first)
    if check.kind == COMPOUND_UNIQUE:
        return F.count(F.lit(1)) - F.countDistinct(F.struct(*map(F.col, check.columns)))
    if check.kind == NOT_NULL:
        return _count(first.isNull())
    low, high = check.kwargs.get("min_value"), check.kwargs.get("max_value")
    outside = F.lit(False)
    if low is not None:
        outside = outside | (first < _literal(low))
    if high is not None:
        outside = outside | (first > _literal(high))
    return _count(outside)


def _implied(check: Check, plan: Sequence[Check]) -> str | None:
    """A checked-unique, checked-not-null column of a compound key, which makes it unique."""
    unique = {c.columns[0] for c in plan if c.kind == UNIQUE}
    not_null = {c.columns[0] for c in plan if c.kind == NOT_NULL}
    return next((c for c in check.columns if c in unique and c in not_null), None)


def comparable(rows: DataFrame, plan: Sequence[Check]) -> bool:
    """Whether every bound of the plan compares with its column's type (a time with a time or
    date column, a number with a numeric one); GX's own check reports any other pair."""
    types = {f.name: f.dataType for f in rows.schema.fields}
    for check in plan:
        kind = types.get(check.columns[0])
        if check.kind != BETWEEN or kind is None:
            continue
        for bound in (check.kwargs.get("min_value"), check.kwargs.get("max_value")):
            if isinstance(bound, datetime | date) and \
                    not isinstance(kind, TimestampType | TimestampNTZType | DateType):
                return False
            if isinstance(bound, int | float) and not isinstance(kind, NumericType):
                return False
    return True


def summarize(rows: DataFrame, plan: Sequence[Check]) -> dict[str, int]:
    """Every check's unexpected count over ``rows``, and the row count: one aggregate.

    A check of a missing column counts 1 (its column-exists check fails too), and is not
    aggregated, so the summary never fails to run on a table that lacks a column. Call it only
    when the plan is :func:`comparable` with the rows.
    """
    present = set(rows.columns)
    counts: dict[str, int] = {}
    implied: dict[str, str] = {}  # a compound key's label -> its unique, not-null column
    aggregates = [F.count(F.lit(1)).alias(ROWS)]
    for check in plan:
        missing = any(c not in present for c in check.columns)
        column = _implied(check, plan) if check.kind == COMPOUND_UNIQUE else None
        if check.kind == EXIST or missing:
            counts[check.label] = int(missing)
        elif column is not None:
            implied[check.label] = column
        else:
            aggregates.append(_unexpected(check).alias(check.label))
    row = rows.agg(*aggregates).collect()[0].asDict()
    counts.update({k: int(v or 0) for k, v in row.items()})
    for label, column in implied.items():
        counts[label] = max(counts[f"{UNIQUE}({column})"], counts[f"{NOT_NULL}({column})"])
    return counts


def summary_outcomes(plan: Sequence[Check], counts: dict[str, int],
                     verdicts: dict[str, bool]) -> list[ExpectationOutcome]:
    """The outcomes of the suite's expectations, in its order, from the summary and GX's
    verdict on each of its columns (worded as the row-level suite words a pass)."""
    rows = counts[ROWS]
    return [ExpectationOutcome(
        expectation=check.kind, column=check.column, success=verdicts[check.label],
        observed_value="" if check.kind == EXIST
        else f"{counts[check.label]} unexpected of {rows} rows",
        unexpected_count=counts[check.label]) for check in plan]
