"""The hot-day bench's figures and report: each cell's warm median and its ratio to the empty
table, and ``bench/results/hot_day.{md,json}`` (``python -m bench.hot_day`` runs the cells)."""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any

from bench import env

#: What every cell's batches are (the producer's and the seeded layout's constants).
DUP_RATE = 0.1
PARTITIONS = 3
ROWS_PER_FILE = 500_000


def _warm_median(batches: list[dict[str, Any]], key: str) -> float | None:
    values = [float(b[key]) for b in (batches[1:] or batches) if key in b]
    return round(statistics.median(values), 3) if values else None


def summarize(window: str, rows: int, batches: list[dict[str, Any]],
              results: list[dict[str, Any]], round_: int = 0) -> dict[str, Any]:
    """One cell's figures; the ratio is to the same window's and round's empty-table cell in
    ``results``."""
    warm = _warm_median(batches, "merge_commit")
    empty = warm if rows == 0 else next((r["merge_commit_warm_median_s"] for r in results
                                         if r["window"] == window and r["target_rows"] == 0
                                         and r.get("round", 0) == round_), None)
    return {"window": window, "target_rows": rows, "round": round_, "load": env.load(),
            "batches": len(batches),
            "merge_commit_s": [round(float(b.get("merge_commit", 0.0)), 3) for b in batches],
            "merge_commit_warm_median_s": warm,
            "ratio_vs_empty": round(warm / empty, 2) if warm is not None and empty else None,
            "total_warm_median_s": _warm_median(batches, "total_s"), "per_batch": batches}


def render(meta: dict[str, Any], results: list[dict[str, Any]]) -> str:
    """The markdown report."""
    bases = ", ".join(f"{b['rows']:,} rows in {b['files']} files ({b['build_s']}s to build)"
                      for b in meta["layout"] if b["rows"]) or "none"
    lines = ["# deltasink benchmark: the target MERGE on a hot day", "",
             f"deltasink's `merge_commit` stage (target MERGE + commit) for batches of "
             f"{meta['batch']:,} records ({meta['events']:,} events + {DUP_RATE:.0%} exact "
             f"copies, {PARTITIONS} partitions) whose events fall in 12:00-12:20 UTC of "
             f"{meta['hot_day']}, a day that holds N rows spread over 24 h in time-ordered files "
             f"(~{ROWS_PER_FILE:,} rows each), next to the same batches into an empty table. "
             "Warm: median over the batches after the first; one SparkSession, warmed up first. "
             + (f"Every target is liquid-clustered by {', '.join(meta['cluster_by'])} "
                "(`target.cluster_by`), not partitioned."
                if meta.get("cluster_by") else "Every target is partitioned by `event_date`."),
             "", f"Run {meta['started']} on {meta['host']}; load average at start "
             f"{meta['load_start']}, at end {meta['load_end']}; {meta['total_s']}s in all. "
             f"Seeded bases: {bases}.", "",
             "| window | target rows in the hot day | warm merge+commit median s "
             "| ratio vs empty | total per batch median s |", "|---|---|---|---|---|"]
    lines += [f"| {r['window']} | {r['target_rows']:,} | {r['merge_commit_warm_median_s']} | "
              + ("-" if r["ratio_vs_empty"] is None else f"{r['ratio_vs_empty']:.2f}x")
              + f" | {r['total_warm_median_s']} |" for r in results]
    if meta.get("rounds", 1) > 1:
        lines += ["", "Paired: each cell's ratio to the same window's empty-table cell of the "
                  "same round, run minutes before it (1-minute load at the end of each cell in "
                  "brackets).", "",
                  "| window | target rows | ratio per round | median ratio |", "|---|---|---|---|"]
        for window, rows in dict.fromkeys((r["window"], r["target_rows"]) for r in results):
            cells = [r for r in results if (r["window"], r["target_rows"]) == (window, rows)
                     and r["ratio_vs_empty"] is not None]
            if rows and cells:
                each = ", ".join(f"{r['ratio_vs_empty']:.2f}x ({r['load'].split('/')[0]})"
                                 for r in cells)
                mid = statistics.median(r["ratio_vs_empty"] for r in cells)
                lines.append(f"| {window} | {rows:,} | {each} | {mid:.2f}x |")
    return "\n".join(lines) + "\n"


def write(out: Path, name: str, meta: dict[str, Any], results: list[dict[str, Any]],
           t0: float) -> Path:
    meta = {**meta, "load_end": env.load(), "total_s": round(time.monotonic() - t0)}
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps({"meta": meta, "results": results}, indent=2,
                                                 default=str))
    (md := out / f"{name}.md").write_text(render(meta, results))
    return md
