"""A dedup window on event time (``target.dedup_window`` shorter than, or not a multiple of, a day).

A whole-day window matches a key in whole ``event_date`` partitions (:mod:`pipelines.sink.merge`).
A time window ``W`` matches it only where a copy can be: a target row is a copy of an incoming
row when their keys are equal and their event times are at most ``W`` apart. So the MERGE reads
only the target rows whose event time lies within ``W`` of the batch's own event times:

* the batch observes the time *buckets* its rows fall in (``bucket_seconds(W)`` wide, one
  aggregate in the batch's one job: :mod:`pipelines.sink.prepare`);
* each bucket, widened by ``W`` on both sides, is a span of event time; overlapping spans merge,
  and at most :data:`MAX_SPANS` are kept by joining the closest ones (wider, never narrower);
* the MERGE's target-only predicate is the ``event_date`` partitions the spans cover and the
  spans themselves as ranges on the time column, so Delta skips every file whose min/max
  statistics lie outside them (files written by a time-ordered stream, or compacted with
  ``ZORDER BY`` the time column, each cover a narrow slice of a day);
* the per-row condition ``|t.time - s.time| <= W`` decides the match itself.

Every target row within ``W`` of an incoming row lies inside its bucket's span, so the predicate
skips no row the per-row condition could match: the pruning changes the cost, not the result.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime, timedelta

from pyspark.sql import Column
from pyspark.sql import functions as F

from pipelines import sql

#: The most time ranges one MERGE predicate holds; more are joined across their smallest gaps.
MAX_SPANS = 32
#: The narrowest and widest observed time bucket, in seconds.
MIN_BUCKET_SECONDS, MAX_BUCKET_SECONDS = 60, 3600

Span = tuple[datetime, datetime]
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_FIRST, _LAST = datetime.min.replace(tzinfo=UTC), datetime.max.replace(tzinfo=UTC)


def bucket_seconds(window: timedelta) -> int:
    """The width of the time buckets a batch observes: a quarter of the window, 1 min..1 h.

    A span is its bucket widened by the window, so a bucket of at most ``window / 4`` reads at
    most a quarter-window more than the exact slice, while a batch that spans a day observes at
    most 1,440 buckets.
    """
    return int(min(MAX_BUCKET_SECONDS, max(MIN_BUCKET_SECONDS,
                                           window.total_seconds() // 4)))


def bucket_of(time_column: str, window: timedelta) -> Column:
    """Each row's time bucket: whole ``bucket_seconds(window)`` steps since the epoch."""
    return F.floor(F.unix_seconds(F.col(time_column)) / F.lit(bucket_seconds(window)))


def spans(buckets: Iterable[int], window: timedelta) -> list[Span]:
    """The event-time ranges (UTC) a MERGE must read for rows in ``buckets``.

    Args:
        buckets: the observed buckets (:func:`bucket_of`).
        window: the dedup window.

    Returns:
        Sorted, disjoint ranges, at most :data:`MAX_SPANS`; empty for no bucket.
    """
    width = bucket_seconds(window)
    merged: list[list[datetime]] = []
    for bucket in sorted(set(buckets)):
        low = _moment(bucket * width - window.total_seconds())
        high = _moment((bucket + 1) * width + window.total_seconds())
        if merged and low <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], high)
        else:
            merged.append([low, high])
    while len(merged) > MAX_SPANS:  # join the two neighbours with the smallest gap
        gap = min(range(len(merged) - 1), key=lambda i: merged[i + 1][0] - merged[i][1])
        merged[gap:gap + 2] = [[merged[gap][0], merged[gap + 1][1]]]
    return [(low, high) for low, high in merged]


def _moment(seconds: float) -> datetime:
    """``seconds`` after the epoch (UTC), held within Python's datetimes (years 1..9999): a
    span that would reach past them reaches their end, where no row can be."""
    try:
        return _EPOCH + timedelta(seconds=seconds)
    except OverflowError:
        return _LAST if seconds > 0 else _FIRST


def dates_of(ranges: Sequence[Span]) -> list[date]:
    """Every UTC date a range touches (the ``event_date`` partitions to read), sorted."""
    out: set[date] = set()
    for low, high in ranges:
        day, last = low.astimezone(UTC).date(), high.astimezone(UTC).date()
        while True:
            if 1000 <= day.year <= 9999:  # the dates parse lets in (see read_values)
                out.add(day)
            if day >= last:
                break
            day += timedelta(days=1)
    return sorted(out)


def range_predicate(time_column: str, ranges: Sequence[Span]) -> str:
    """``t.time`` inside one of ``ranges`` (inclusive), as SQL: Delta skips files by it."""
    return sql.any_of(f"({sql.between('t', time_column, low, high)})" for low, high in ranges)


def within(time_column: str, window: timedelta) -> str:
    """``|t.time - s.time| <= window``, to the microsecond: the per-row half of the window."""
    micros = int(window / timedelta(microseconds=1))
    t, s = sql.column("t", time_column), sql.column("s", time_column)
    return f"abs(unix_micros({t}) - unix_micros({s})) <= {micros}L"


def near(target_time: Column, source_time: Column, window: timedelta) -> Column:
    """The DataFrame form of :func:`within` (for the other-date count)."""
    micros = int(window / timedelta(microseconds=1))
    return F.abs(F.unix_micros(target_time) - F.unix_micros(source_time)) <= F.lit(micros)


def days_covering(window: timedelta) -> int:
    """Whole days either side of a date that a window reaching from any time in it can touch."""
    return -(-int(window.total_seconds()) // 86_400)
