"""Insert-only MERGE with partition literals, so a batch reads only the partitions it touches."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import Any

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F


@dataclass(frozen=True)
class MergeOutcome:
    """What one MERGE did. ``committed`` is False when Delta skipped it as a replayed txn."""

    committed: bool
    inserted: int


def literal_filter(alias: str, values: Mapping[str, Iterable[Any]]) -> Column | None:
    """``alias.col IN (v1, v2, ...)`` for each column, with typed literals (never SQL text).

    Args:
        alias: the table alias in the MERGE (``t``).
        values: column → the distinct values present in the batch.

    Returns:
        The conjunction, or None when ``values`` is empty.
    """
    preds = [F.col(f"{alias}.{col}").isin(sorted(set(vals))) for col, vals in values.items()]
    return reduce(lambda a, b: a & b, preds) if preds else None


def range_filter(alias: str, column: str, low: Any, high: Any) -> Column:
    """``low <= alias.column <= high``: lets Delta skip files by their min/max statistics."""
    col = F.col(f"{alias}.{column}")
    return (col >= F.lit(low)) & (col <= F.lit(high))


def insert_only_merge(
    target: DeltaTable,
    source: DataFrame,
    on: Sequence[str],
    target_filter: Column | None = None,
) -> MergeOutcome:
    """Insert the source rows whose ``on`` columns match no target row.

    Args:
        target: the Delta table.
        source: rows to insert; must hold at most one row per ``on`` tuple.
        on: the key columns (partition columns first, so they prune).
        target_filter: an extra predicate on the target (alias ``t``), e.g. partition literals.

    Returns:
        Whether a commit happened, and how many rows it inserted.
    """
    cond = reduce(lambda a, b: a & b, [F.col(f"t.{c}") == F.col(f"s.{c}") for c in on])
    if target_filter is not None:
        cond = cond & target_filter
    result = (target.alias("t").merge(source.alias("s"), cond)
              .whenNotMatchedInsertAll().execute())
    rows = result.collect() if result is not None else []
    if not rows:
        return MergeOutcome(committed=False, inserted=0)
    return MergeOutcome(committed=True, inserted=int(rows[0]["num_inserted_rows"]))
