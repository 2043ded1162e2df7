"""Drive one streaming query to completion (available-now) and collect its timings."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql.streaming.readwriter import DataStreamWriter

from pipelines.sink.metrics import BatchMetrics


def run_available_now(writer: DataStreamWriter, checkpoint: str,
                      path: str | None = None) -> list[dict[str, Any]]:
    """Start ``writer`` with an available-now trigger, wait, and return its progress reports.

    Returns:
        One dict per micro-batch that read rows: ``rows``, ``total_s`` (triggerExecution) and
        ``write_s`` (addBatch: the sink's work, which includes the lazy read/parse).
    """
    query = (writer.trigger(availableNow=True).option("checkpointLocation", checkpoint)
             .start(path) if path else
             writer.trigger(availableNow=True).option("checkpointLocation", checkpoint).start())
    query.awaitTermination()
    out = []
    for p in query.recentProgress:
        rows = int(p.numInputRows)
        if rows:
            ms = p.durationMs
            out.append({"rows": rows, "total_s": ms.get("triggerExecution", 0) / 1000,
                        "write_s": ms.get("addBatch", 0) / 1000})
    return out


def batch_rows(metrics: list[BatchMetrics]) -> list[dict[str, Any]]:
    """The per-batch figures of a foreachBatch sink (deltasink's own stage timings)."""
    return [{"rows": m.records_in, "total_s": m.duration_s, **m.stage_seconds}
            for m in metrics if not m.replayed]


Sink = Callable[[DataFrame, int], None]
