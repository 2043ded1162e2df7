"""Turn one configuration's per-batch rows into the published figures."""

from __future__ import annotations

import math
import statistics
from typing import Any

#: Stage columns: deltasink's ``BatchMetrics.stage_seconds`` keys, plus ``write_s`` for the
#: streaming Delta sinks (their ``addBatch``, which includes the lazy read and parse).
STAGES = ("read_parse", "quarantine", "dedup", "merge_commit", "write_s")


def p95(values: list[float]) -> float:
    """The 95th percentile (nearest rank); the value itself for a single sample."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def summarize(batches: list[dict[str, Any]], records: int, wall_s: float) -> dict[str, Any]:
    """Events/s end to end, and per-batch median/p95 of the total and of each stage.

    Args:
        batches: one dict per micro-batch (``rows``, ``total_s``, stage seconds).
        records: the records the configuration read (valid, duplicates and poison alike).
        wall_s: seconds from starting the query to its end (query start-up included).

    Returns:
        A flat dict of figures, rounded for the report.
    """
    out: dict[str, Any] = {"records": records, "batches": len(batches),
                           "wall_s": round(wall_s, 2),
                           "events_per_s": round(records / wall_s) if wall_s > 0 else 0}
    totals = [float(b["total_s"]) for b in batches]
    if totals:
        out["batch_median_s"] = round(statistics.median(totals), 3)
        out["batch_p95_s"] = round(p95(totals), 3)
    for stage in STAGES:
        values = [float(b[stage]) for b in batches if stage in b]
        if values:
            out[f"{stage}_median_s"] = round(statistics.median(values), 3)
            out[f"{stage}_p95_s"] = round(p95(values), 3)
    return out


def combine(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """One cell's figures over two passes (run in opposite order, so drift hits both sides).

    Events/s and the per-batch medians are recomputed over both passes' batches together; the
    two passes' own events/s are kept in ``events_per_s_passes``; ``files_written`` stays the
    first pass's (both write the same data).
    """
    batches = first["per_batch"] + second["per_batch"]
    out = {**first, **summarize(batches, first["records"] + second["records"],
                                first["wall_s"] + second["wall_s"])}
    jobs = first["spark_jobs"] + second["spark_jobs"]
    out.update({
        "per_batch": batches, "spark_jobs": jobs,
        "jobs_per_batch": round(jobs / len(batches), 1) if batches else None,
        "events_per_s_passes": [first["events_per_s"], second["events_per_s"]],
        "peak_rss_bytes": max(first["peak_rss_bytes"], second["peak_rss_bytes"]),
        "peak_rss_gib": max(first["peak_rss_gib"], second["peak_rss_gib"]),
        "load": f"{first['load']}/{second['load']}",
    })
    return out
