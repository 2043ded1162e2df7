"""How fresh a micro-batch's rows are, observed on a Spark job the batch runs anyway.

The batch materializes its parsed, deduplicated rows in one job (``pipelines.sink.prepare``).
:func:`metrics` are observed on that job (``DataFrame.observe``), so
the newest ``event_time``, the newest Kafka timestamp and the p50/p99 of
``ingested_at - kafka_timestamp`` come back with it: no extra job, no second read of the rows.
The rows observed are the ones offered to the target MERGE (valid, deduplicated in the batch);
a row the MERGE then drops as a duplicate of a target row is counted too, a negligible skew.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F

#: percentile_approx's accuracy: relative error 1/10000 of the batch's row count.
_ACCURACY = 10_000


@dataclass(frozen=True)
class Freshness:
    """What one batch observed about its rows' times (all None for a batch without rows)."""

    newest_event_time: datetime | None = None
    newest_kafka_timestamp: datetime | None = None
    latency_p50_s: float | None = None
    latency_p99_s: float | None = None

    def as_counts(self) -> dict[str, str | float]:
        """The known fields as JSON values for the commit's counts (times as ISO text), so a
        batch's metrics rebuilt from its commit keep its freshness."""
        out: dict[str, str | float] = {}
        for name in ("newest_event_time", "newest_kafka_timestamp"):
            when = getattr(self, name)
            if when is not None:
                out[name] = when.isoformat()
        for name in ("latency_p50_s", "latency_p99_s"):
            if getattr(self, name) is not None:
                out[name] = float(getattr(self, name))
        return out


def metrics(time_field: str, only: Column | None = None) -> list[Column]:
    """The freshness aggregates, to observe on the batch's one job (``pipelines/sink/prepare``).

    Args:
        time_field: the schema's event-time column.
        only: the rows to observe, when the rows hold others too (a batch's bad records).
    """
    def of(column: str) -> Column:
        return F.col(column) if only is None else F.when(only, F.col(column))

    latency = (F.unix_micros(of("ingested_at")) - F.unix_micros(of("kafka_timestamp"))) / 1e6
    # One sketch for both quantiles (Spark merges the identical aggregates); picked apart here
    # because an observed array reaches Python as a bare Java object.
    quantiles = F.percentile_approx(latency, [0.5, 0.99], _ACCURACY)
    return [F.max(F.unix_micros(of(time_field))).alias("event_us"),
            F.max(F.unix_micros(of("kafka_timestamp"))).alias("kafka_us"),
            quantiles.getItem(0).alias("p50"), quantiles.getItem(1).alias("p99")]


def read(got: Mapping[str, Any]) -> Freshness:
    """The batch's :class:`Freshness` from the values of :func:`metrics`."""
    return Freshness(newest_event_time=_at(got.get("event_us")),
                     newest_kafka_timestamp=_at(got.get("kafka_us")),
                     latency_p50_s=_seconds(got.get("p50")), latency_p99_s=_seconds(got.get("p99")))


def _seconds(value: object) -> float | None:
    return None if value is None else float(value)  # type: ignore[arg-type]


def _at(micros: int | None) -> datetime | None:
    return None if micros is None else datetime.fromtimestamp(micros / 1e6, UTC)


def age_seconds(now: datetime, then: datetime | None) -> float | None:
    """Seconds from ``then`` to ``now`` (None when nothing was observed)."""
    return None if then is None else (now - then).total_seconds()
