"""A batch's partition values: the ones it writes, and the ones its target MERGE reads."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from pipelines.config.model import DATE_COLUMN, PipelineConfig
from pipelines.sink.event_window import Span, dates_of, days_covering
from pipelines.sink.merge import expand_dates


def partition_values(deduped: DataFrame, partition_by: tuple[str, ...]
                     ) -> tuple[int, dict[str, list[Any]]]:
    """How many rows ``deduped`` holds, and the distinct values of each partition column."""
    parts = list(partition_by)
    groups = deduped.groupBy(*parts).count().collect() if parts else \
        [deduped.agg(F.count(F.lit(1)).alias("count")).first()]
    unique = sum(int(g["count"]) for g in groups if g is not None)
    return unique, {p: [g[p] for g in groups if g is not None] for p in parts}


def read_values(config: PipelineConfig, column: str, values: list[object],
                spans: Sequence[Span] | None = None) -> list[object]:
    """The partition values the target MERGE reads: the batch's, widened by the dedup window.

    With an event-time window, the dates its ``spans`` touch; without spans (a redrive), every
    date the window can reach from the batch's dates.
    """
    present = [v for v in values if v is not None]
    target = config.target
    if column != DATE_COLUMN or not target.dedup_window:
        return present
    window = target.time_window
    if window is not None and spans is not None:
        return list(dates_of(spans))
    days = target.date_window if window is None else days_covering(window)
    # Event dates are years 1000..9999 (parse quarantines the rest); the window must not
    # widen past them (Spark's date literal cannot even say year 999).
    return [d for d in expand_dates([d for d in present if isinstance(d, date)], days)
            if 1000 <= d.year <= 9999]
