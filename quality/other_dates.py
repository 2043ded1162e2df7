"""The dedup key checked against the dates a validation does not read.

A run is validated on the ``event_date`` partitions it wrote. A copy whose event time moved
further than ``target.dedup_window`` lands as a second row on its own date, and the first row may
sit on any other date, written by any earlier run: uniqueness over the run's dates alone would
not see the pair. So every validation of selected dates also asks whether a key of those dates
has a row on another date. It reads only the key columns of the other dates (one semi-join; no
date is read when the run's dates are all the table has), and it fails like a duplicate does:
the count of rows on other dates, and their keys.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from quality.model import SUMMARY_SAMPLE_KEYS, ExpectationOutcome

#: The expectation name of the check (it is computed, not run by GX).
OTHER_DATES_EXPECTATION = "expect_key_unique_across_dates"
#: The column that holds each row's date.
DATE_COLUMN = "event_date"


def other_date_outcome(table: DataFrame, keys: Sequence[str], dates: Sequence[date]
                       ) -> ExpectationOutcome:
    """Check that no key of the rows on ``dates`` has a row on another date.

    Args:
        table: the target snapshot being validated (all its rows).
        keys: the dedup key columns.
        dates: the selected ``event_date`` partitions.

    Returns:
        An outcome named :data:`OTHER_DATES_EXPECTATION` on the key; when it fails,
        ``unexpected_count`` is the rows on other dates that share a key with the selected
        dates, and ``sample_keys`` a few of those keys.
    """
    columns = list(keys)
    inside = F.col(DATE_COLUMN).isin(sorted(set(dates)))
    here = table.where(inside).select(*columns)
    elsewhere = table.where(~inside).select(DATE_COLUMN, *columns)
    copies = elsewhere.join(here, columns, "left_semi")
    sample = copies.limit(SUMMARY_SAMPLE_KEYS).collect()  # the passing case: this one query
    where = ",".join(keys)
    days = f"{len(set(dates))} validated date(s)"
    if not sample:
        return ExpectationOutcome(OTHER_DATES_EXPECTATION, where, True,
                                  f"no key of the {days} has a row on another date")
    count = copies.count()
    found = sorted({",".join(str(r[k]) for k in columns) for r in sample})
    on = sorted({str(r[DATE_COLUMN]) for r in sample})
    return ExpectationOutcome(
        OTHER_DATES_EXPECTATION, where, False,
        f"{count} row(s) on other dates (e.g. {', '.join(on)}) repeat a key of the {days}",
        unexpected_count=count, sample_keys=found)
