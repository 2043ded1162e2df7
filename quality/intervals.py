"""An SCD2 history's intervals checked against each other: per key, none overlaps the next.

A key's versions, ordered by ``__START_AT``, must each end (``__END_AT``) at or before the next
one starts, and only the last may be open (``__END_AT`` null); each must also end after it
starts. The GX suite checks that no two versions of a key share a start or an open end
(``quality/suites.py``); this check, computed with one window over the key's versions, finds what
those cannot: a version that ends after the next began.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from quality.model import SUMMARY_SAMPLE_KEYS, ExpectationOutcome

#: The expectation name of the check (it is computed, not run by GX).
INTERVALS_EXPECTATION = "expect_history_intervals_not_to_overlap"


def interval_outcome(rows: DataFrame, keys: Sequence[str], start: str, end: str
                     ) -> ExpectationOutcome:
    """Check that no version of a key overlaps the key's next version.

    Args:
        rows: the history being validated.
        keys: the key's columns.
        start: the column where a version starts (``__START_AT``).
        end: the column where it ends (``__END_AT``, null while open).

    Returns:
        An outcome named :data:`INTERVALS_EXPECTATION` on ``start,end``; when it fails,
        ``unexpected_count`` is the versions that overlap the next (or end before they start)
        and ``sample_keys`` a few of their keys.
    """
    order = Window.partitionBy(*keys).orderBy(start)
    following = F.lead(F.col(start)).over(order)
    bad = rows.select(*keys, F.col(start), F.col(end), following.alias("_next")).where(
        (F.col(end).isNotNull() & (F.col(end) <= F.col(start)))
        | (F.col("_next").isNotNull() & (F.col(end).isNull() | (F.col(end) > F.col("_next")))))
    sample = bad.limit(SUMMARY_SAMPLE_KEYS).collect()
    where = f"{start},{end}"
    if not sample:
        return ExpectationOutcome(INTERVALS_EXPECTATION, where, True,
                                  "every key's versions follow each other without overlap")
    count = bad.count()
    found = sorted({",".join(str(r[k]) for k in keys) for r in sample})
    return ExpectationOutcome(
        INTERVALS_EXPECTATION, where, False,
        f"{count} version(s) overlap the key's next version, or end before they start",
        unexpected_count=count, sample_keys=found)
