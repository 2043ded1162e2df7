"""The goals, judged on one run's figures, and the markdown/JSON written to ``bench/results``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

GIB = 1024**3
Result = dict[str, Any]


def _find(results: list[Result], config: str, **dims: Any) -> Result | None:
    for r in results:
        if r["config"] == config and all(r[k] == v for k, v in dims.items()):
            return r
    return None


def _ratio(a: Result | None, b: Result | None, key: str) -> float | None:
    if a is None or b is None or not b.get(key):
        return None
    return round(float(a[key]) / float(b[key]), 3)


def goals(results: list[Result], small: int, large: int, batch: int) -> list[Result]:
    """Each goal with its measured value and whether it is met (None: not measured)."""
    at = {"batch": batch, "dup_rate": 0.2}
    out: list[Result] = []
    for rows in (small, large):  # issue 12: 0.90x with 50k-record batches
        r = _ratio(_find(results, "deltasink", target_rows=rows, **at),
                   _find(results, "append", target_rows=rows, **at), "events_per_s")
        out.append({"goal": f"deltasink >= 0.90x plain append events/s at {rows:,} rows, "
                            f"{batch:,}-record batches", "value": r,
                    "met": None if r is None else r >= 0.90})
    big = {"batch": 500_000, "dup_rate": 0.2}
    r = _ratio(_find(results, "deltasink", target_rows=small, **big),
               _find(results, "append", target_rows=small, **big), "events_per_s")
    out.append({"goal": f"deltasink >= 0.95x plain append events/s at {small:,} rows, "
                        "500,000-record batches", "value": r,
                "met": None if r is None else r >= 0.95})
    cell = _find(results, "deltasink", target_rows=small, **at)
    jobs = cell.get("jobs_per_batch") if cell else None
    out.append({"goal": "Spark jobs per batch <= 4 (deltasink, no bad records)",
                "value": jobs, "met": None if jobs is None else jobs <= 4})
    r = _ratio(_find(results, "deltasink", target_rows=small, **at),
               _find(results, "watermark", target_rows=small, **at), "events_per_s")
    out.append({"goal": f"deltasink >= 1.0x dropDuplicatesWithinWatermark at {small:,} rows",
                "value": r, "met": None if r is None else r >= 1.0})
    for config, holds in (("deltasink", True), ("naive_merge", False)):
        r = _ratio(_find(results, config, target_rows=large, **at),
                   _find(results, config, target_rows=0, **at), "merge_commit_median_s")
        goal = (f"{config}: merge_commit median per batch at {large:,} rows / at empty "
                + ("<= 1.3" if holds else "> 1.3 (the naive MERGE does not hold the bound)"))
        out.append({"goal": goal, "value": r,
                    "met": None if r is None else (r <= 1.3) == holds})
    peak = max((r["peak_rss_bytes"] for r in results if r.get("peak_rss_bytes")), default=0)
    biggest = max((r["records"] for r in results if r["config"] == "deltasink"), default=0)
    out.append({"goal": f"driver RSS < 3 GiB (session peak; backlog here: {biggest:,} "
                        "records, not 5M)", "value": round(peak / GIB, 2),
                "met": peak < 3 * GIB if peak else None})
    best = _find(results, "deltasink", target_rows=0, **at)
    eps = best["events_per_s"] if best else None
    out.append({"goal": f">= 100k events/s end to end (deltasink, empty target, "
                        f"{best['records'] if best else 0:,} records)",
                "value": eps, "met": None if eps is None else eps >= 100_000})
    return out


_COLUMNS = (("config", "config"), ("target_rows", "target rows"), ("batch", "batch"),
            ("dup_rate", "dups"), ("records", "records"), ("batches", "batches"),
            ("events_per_s", "events/s"), ("events_per_s_passes", "events/s per pass"),
            ("batch_median_s", "batch med s"),
            ("batch_p95_s", "batch p95 s"), ("read_parse_median_s", "read+parse med"),
            ("dedup_median_s", "dedup med"), ("merge_commit_median_s", "merge+commit med"),
            ("merge_commit_p95_s", "merge+commit p95"), ("write_s_median_s", "addBatch med"),
            ("peak_rss_gib", "peak RSS GiB"), ("files_written", "files"),
            ("jobs_per_batch", "jobs/batch"), ("load", "load 1m"))


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, list):
        return " / ".join(_cell(v) for v in value)
    return str(value)


def markdown(meta: Result, results: list[Result], judged: list[Result]) -> str:
    """The report: context, the results table, and the goals."""
    lines = [f"# deltasink benchmark: `{meta['preset']}` preset", "",
             f"Run {meta['started']} on {meta['host']}; load average at start "
             f"{meta['load_start']}, at end {meta['load_end']}. Spark start-up "
             f"{meta['spark_startup_s']}s; total {meta['total_s']}s. "
             f"{meta['events']:,} distinct events per topic (+ duplicate copies). "
             f"Cells done: {meta['cells_done']}; passes: {meta['spec'].get('passes', 1)} "
             f"({meta.get('passes_done', '')}; with 2, the second runs the cells in reverse "
             "order and each row is computed over both).", "",
             "| " + " | ".join(h for _, h in _COLUMNS) + " |",
             "|" + "---|" * len(_COLUMNS)]
    for r in results:
        lines.append("| " + " | ".join(_cell(r.get(k)) for k, _ in _COLUMNS) + " |")
    lines += ["", "## Goals (ratios from this run)", "",
              "| goal | measured | met |", "|---|---|---|"]
    for g in judged:
        met = {True: "yes", False: "**no**", None: "not measured"}[g["met"]]
        lines.append(f"| {g['goal']} | {_cell(g['value'])} | {met} |")
    return "\n".join(lines) + "\n"


def write(out_dir: Path, meta: Result, results: list[Result], judged: list[Result]) -> Path:
    """Write ``latest.md`` and ``latest.json`` into ``out_dir``; return the markdown path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "latest.json").write_text(json.dumps(
        {"meta": meta, "results": results, "goals": judged}, indent=2, default=str) + "\n")
    md = out_dir / "latest.md"
    md.write_text(markdown(meta, results, judged))
    return md
