"""Kafka lag: per batch from the query's progress, and now from Kafka for status and validate.

**Per batch.** A batch's lag is the records Kafka held past the batch's end offsets when Spark
planned it: ``latestOffset - endOffset`` of the source in the query's progress (the Kafka source
reports its latest offsets there, so this needs no Kafka call of ours). The progress of batch N
is built only after its ``foreachBatch`` returned, so the lag cannot be known inside the batch.
So the batch's metrics row waits: :func:`harvester` reads the query's recent progress from the
driver thread that waits for the query (once a minute, and once when the query ends) and hands
the lags to ``MetricsRecorder.flush``, which keeps them with the waiting rows and writes those,
every ``quality.metrics_every``, in one append: nothing is added to the batch itself, and a
failure only warns. Why not a ``StreamingQueryListener``: its callbacks run on Spark's listener
bus, asynchronously, and may still be pending when an available-now query returns; its recent
progress is already complete. A row whose lag is never known (its progress was missing when the
query ended, or the row was backfilled from its commit after the process died) keeps a null lag.

**Now.** A stopped pipeline has no progress: :func:`current_lag` compares the offsets of the
target's newest sink commit with the partitions' end offsets in Kafka (a watermark request per
partition; Kafka transaction markers count as records, so read_committed topics over-count by a
few).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import SparkSession

from pipelines.config.model import PipelineConfig
from pipelines.errors import BrokerError, OwnClientUnavailable
from pipelines.kafka import topics
from pipelines.ledger import state
from pipelines.runtime.progress import batch_key, input_rows, recent_progress


def progress_lags(progresses: Iterable[Mapping[str, Any]]) -> dict[tuple[str, int], int]:
    """``(query id, batch id) -> lag`` of every batch that read rows, from its progress.

    Args:
        progresses: the query's progress as Spark's JSON (:func:`recent_progress`).
    """
    out: dict[tuple[str, int], int] = {}
    for progress in progresses:
        if not input_rows(progress):  # an idle trigger: no batch, no metrics row
            continue
        lag = 0
        for source in progress.get("sources") or []:
            latest = _offsets(source.get("latestOffset"))
            end = _offsets(source.get("endOffset"))
            lag += sum(max(0, latest[tp] - end.get(tp, latest[tp])) for tp in latest)
        out[batch_key(progress)] = lag
    return out


def _offsets(value: object) -> dict[tuple[str, int], int]:
    """A Kafka source's offsets (a nested dict in the progress's JSON; a JSON string where a
    source reports them as text): ``(topic, partition) -> offset``."""
    try:
        parsed = json.loads(value) if isinstance(value, str) and value else value or {}
    except ValueError:
        return {}
    if not isinstance(parsed, dict):
        return {}
    return {(t, int(p)): int(o) for t, ps in parsed.items() if isinstance(ps, dict)
            for p, o in ps.items()}


Flush = Callable[..., object]


def harvester(flush: Flush, say: Callable[[str], None]) -> Callable[..., None]:
    """A function ``harvest(query, final=False)`` that hands the lags in a streaming query's
    recent progress to ``flush(lags, final=final)`` (``MetricsRecorder.flush``).

    Reading the progress may fail; the rows are flushed all the same, without their lag. A
    failure warns once (through ``say``) and never raises: bookkeeping must never fail a run.
    """
    warned: list[bool] = []

    def harvest(query: Any, final: bool = False) -> None:
        lags: dict[tuple[str, int], int] = {}
        try:
            lags = progress_lags(recent_progress(query))
        except Exception as exc:  # bookkeeping must never fail the run
            if not warned:
                say(f"warning: could not read the lag from the query's progress ({exc})")
                warned.append(True)
        flush(lags, final=final)

    return harvest


@dataclass(frozen=True)
class Lag:
    """How many records Kafka holds that the target has not, now.

    Attributes:
        records: the total, None when Kafka could not be asked.
        partitions: ``(topic, partition) -> records`` behind.
        error: why Kafka could not be asked.
        own_client: False when deltasink's own client cannot log in as the stream does
            (``error`` names the login); the stream's last lag is then the best figure.
    """

    records: int | None
    partitions: dict[tuple[str, int], int] = field(default_factory=dict)
    error: str | None = None
    own_client: bool = True

    def describe(self) -> str:
        """One line: the total, then the partitions that lag (at most five)."""
        if self.records is None:
            return f"unknown ({self.error})"
        behind = sorted(((n, tp) for tp, n in self.partitions.items() if n), reverse=True)
        parts = ", ".join(f"{t}[{p}] {n}" for n, (t, p) in behind[:5])
        more = f", +{len(behind) - 5} more" if len(behind) > 5 else ""
        return f"{self.records} records" + (f" ({parts}{more})" if parts else "")


def current_lag(spark: SparkSession, config: PipelineConfig, timeout: float = 10.0) -> Lag:
    """Kafka's end offsets minus the offsets of the target's newest commit, per partition.

    A partition the target has not recorded yet counts from its earliest offset
    (``starting_offsets: earliest``) or not at all (``latest``). Never raises for Kafka: an
    unreachable broker gives ``records=None`` and the reason.
    """
    target = config.target.ref
    recorded = (state.recorded_offsets(spark, target, config.name)
                if target.exists(spark) else None) or {}
    try:
        marks = topics.watermarks(spark, config.source,
                                  topics.list_partitions(spark, config.source, timeout),
                                  timeout)
    except BrokerError as exc:
        return Lag(None, error=str(exc))
    except OwnClientUnavailable as exc:
        return Lag(None, error=f"own client unavailable for {exc}", own_client=False)
    behind: dict[tuple[str, int], int] = {}
    for (topic, partition), (low, high) in marks.items():
        start = low if config.source.starting_offsets == "earliest" else high
        done = recorded.get(topic, {}).get(partition, start)
        behind[(topic, partition)] = max(0, high - max(done, low))
    return Lag(sum(behind.values()), behind)
