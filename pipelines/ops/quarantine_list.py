"""``deltasink quarantine list``: what the quarantine holds, per reason, redriven or not.

Reads the latest version of the quarantine table (nothing is written), with the same
``--reason`` / ``--since`` filters as ``deltasink quarantine redrive``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipelines.config.model import PipelineConfig
from pipelines.ops.redrive import parse_since, quarantine_filter


@dataclass(frozen=True)
class ReasonCount:
    """Quarantine rows with one reason: how many wait, and how many were redriven."""

    reason: str
    pending: int
    redriven: int


def count_reasons(spark: SparkSession, config: PipelineConfig, *, reason: str | None = None,
                  since: str | None = None) -> list[ReasonCount]:
    """Quarantine rows per reason, most pending first.

    Args:
        spark: the session.
        config: the pipeline config.
        reason: only this reason, or this kind of reason (``missing``).
        since: only rows quarantined at or after this time (ISO 8601, UTC unless zoned).

    Raises:
        ConfigError: a bad ``since``.
    """
    ref = config.target.quarantine_ref
    when = parse_since(since)
    if not ref.exists(spark):
        return []
    rows = ref.read(spark).where(quarantine_filter(reason, when))
    done = F.col("redriven_at").isNotNull() if "redriven_at" in rows.columns else F.lit(False)
    counted = rows.groupBy("reason").agg(
        F.sum((~done).cast("long")).alias("pending"), F.sum(done.cast("long")).alias("redriven"))
    out = [ReasonCount(str(r["reason"]), int(r["pending"]), int(r["redriven"]))
           for r in counted.collect()]
    return sorted(out, key=lambda c: (-c.pending, -c.redriven, c.reason))


def format_counts(config: PipelineConfig, counts: list[ReasonCount]) -> list[str]:
    """A header, one line per reason and a total."""
    pending = sum(c.pending for c in counts)
    redriven = sum(c.redriven for c in counts)
    width = max([len("reason"), *(len(c.reason) for c in counts)])
    lines = [f"quarantine {config.target.quarantine_ref.describe()}: {pending + redriven} rows, "
             f"{pending} pending, {redriven} redriven",
             f"{'reason':<{width}}  {'pending':>8}  {'redriven':>8}"]
    lines += [f"{c.reason:<{width}}  {c.pending:>8}  {c.redriven:>8}" for c in counts]
    return lines


def list_quarantine(spark: SparkSession, config: PipelineConfig, *, reason: str | None = None,
                    since: str | None = None,
                    say: Callable[[str], None] = print) -> list[ReasonCount]:
    """Print the quarantine's rows per reason (pending and redriven) and return the counts."""
    counts = count_reasons(spark, config, reason=reason, since=since)
    for line in format_counts(config, counts):
        say(line)
    return counts
