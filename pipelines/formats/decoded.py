"""The decoding seam: a record value's bytes become one variant column, or a reason they cannot.

A :class:`Decoder` (JSON, :mod:`pipelines.formats.json`; Avro, :mod:`pipelines.formats.avro`)
adds :data:`VARIANT` to Spark's Kafka rows and says, in order, which failures give which
quarantine reason. Everything after it (the schema's field checks, the Debezium envelope) reads
the variant, whatever the bytes were, so a new format is a new decoder, not a new branch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

#: The column that holds each record's decoded value (dropped by ``classify``).
VARIANT = "_variant"
#: A failure condition and the quarantine reason it gives (text, or a column of text).
Check = tuple[Column, Column | str]
#: The prefix of a reason that skips a record: neither landed nor quarantined, only counted
#: (a change stream's tombstone, ``pipelines/formats/debezium/changes.py``).
SKIP = "skip:"


@dataclass(frozen=True)
class Decoded:
    """A decoder's output.

    Attributes:
        rows: the input rows with :data:`VARIANT` (null where the value did not decode).
        checks: (failure, reason) pairs, first failure wins, checked before any field.
    """

    rows: DataFrame
    checks: list[Check]


class Decoder(Protocol):
    """Turns the ``value`` column of Spark's Kafka rows into :data:`VARIANT`."""

    def decode(self, raw: DataFrame, present: Column) -> Decoded:
        """Decode ``raw``'s values where ``present`` (not null, not oversized) holds."""
        ...


def once_per_row(expr: Column) -> Column:
    """``expr``, computed once per row however many expressions read it.

    Without this, a later filter on ``_reason`` (``valid_events``) is pushed below the parse by
    the optimizer, which substitutes the JSON parse into every check that reads it: measured at
    5x the CPU of a single parse. A (free) nondeterministic guard forbids both that pushdown and
    the inlining of the parse into the projection above.
    """
    return F.when(F.spark_partition_id() >= F.lit(0), expr)


def skipped(reason: Column) -> Column:
    """Whether a ``_reason`` skips its record (see :data:`SKIP`); false for a null reason."""
    return F.coalesce(F.startswith(reason, F.lit(SKIP)), F.lit(False))


def let(value: Column, body: Callable[[Column], Column]) -> Column:
    """``body(value)``, with ``value`` computed once however often ``body`` reads it.

    Spark copies an expression into each place that uses it, and evaluates every copy: a
    decimal's byte fold, read by its value and by three checks, ran four times and made plans
    of 70,000 characters a column. A lambda's variable is evaluated once.
    """
    return F.transform(F.array(value), body).getItem(0)
