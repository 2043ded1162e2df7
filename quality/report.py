"""A static HTML dashboard of a pipeline's runs and validation verdicts.

The page is self-contained (plotly.js is embedded inline, no CDN) so it opens from disk or from
a CI artifact. By default it is written next to the Data Docs folder:
``<quality.docs_dir>/../dashboard.html``, and it links to the Data Docs index.
"""

from __future__ import annotations

import html
import os
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from pyspark.sql import Row, SparkSession

from pipelines.config.model import PipelineConfig
from quality.charts import (
    BatchPoint,
    RunTotals,
    VerdictTotals,
    dropped_figure,
    duration_figure,
    lag_figure,
    records_figure,
    throughput_figure,
    verdicts_figure,
)
from quality.results_read import read_run_metrics, read_validation_results

_STYLE = """
body { font-family: -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif;
       margin: 24px auto; max-width: 1100px; padding: 0 16px; color: #212121; }
h1 { font-size: 1.6em; margin-bottom: 4px; } .sub { color: #616161; margin-top: 0; }
.empty { padding: 32px; background: #f5f5f5; border-radius: 8px; text-align: center; }
.ok { color: #2e7d32; font-weight: 600; } .bad { color: #c62828; font-weight: 600; }
table { border-collapse: collapse; width: 100%; font-size: 0.9em; }
td, th { border-bottom: 1px solid #e0e0e0; padding: 4px 8px; text-align: left; }
"""


def default_report_path(config: PipelineConfig) -> Path:
    """Where :func:`write_report` writes by default: ``<docs_dir>/../dashboard.html``."""
    return Path(config.quality.docs_dir).resolve().parent / "dashboard.html"


def run_totals(rows: Sequence[Row]) -> list[RunTotals]:
    """Sum run-metrics rows (one per batch) per run, oldest run first."""
    by_run: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        if not row["replayed"]:
            by_run[row["run_id"]].append(row)
    runs = [RunTotals(
        run_id=run_id, started_at=min(b["started_at"] for b in batches), batches=len(batches),
        records_in=sum(b["records_in"] for b in batches),
        inserted=sum(b["inserted"] for b in batches),
        duplicates_in_batch=sum(b["duplicates_in_batch"] for b in batches),
        duplicates_by_merge=sum(b["duplicates_by_merge"] for b in batches),
        quarantined=sum(b["quarantined"] for b in batches),
        duration_s=sum(b["duration_s"] for b in batches),
    ) for run_id, batches in by_run.items()]
    return sorted(runs, key=lambda r: r.started_at)


def batch_points(rows: Sequence[Row]) -> list[BatchPoint]:
    """One point per recorded (non-replayed) batch, oldest first (tables from before the lag
    columns give points without lag and freshness)."""
    points = []
    for row in rows:
        if row["replayed"]:
            continue
        got = row.asDict()
        points.append(BatchPoint(
            at=row["started_at"], records_in=row["records_in"], quarantined=row["quarantined"],
            duration_s=row["duration_s"], lag_records=got.get("lag_records"),
            freshness_event_s=got.get("freshness_event_s"),
            freshness_kafka_s=got.get("freshness_kafka_s")))
    return sorted(points, key=lambda p: p.at)


def verdict_totals(rows: Sequence[Row]) -> list[VerdictTotals]:
    """Count passed and failed expectations per validated run, oldest first."""
    by_run: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_run[row["run_id"]].append(row)
    verdicts = [VerdictTotals(
        run_id=run_id, validated_at=max(r["validated_at"] for r in results),
        table_version=results[0]["table_version"],
        passed=sum(1 for r in results if r["success"]),
        failed=sum(1 for r in results if not r["success"]),
    ) for run_id, results in by_run.items()]
    return sorted(verdicts, key=lambda v: v.validated_at)


def _failures_table(rows: Sequence[Row], run_id: str) -> str:
    failed = [r for r in rows if r["run_id"] == run_id and not r["success"]]
    if not failed:
        return '<p class="ok">Latest validation: all expectations passed.</p>'
    cells = "".join(
        f"<tr><td>{html.escape(r['expectation'])}</td><td>{html.escape(r['column'] or '')}</td>"
        f"<td>{r['unexpected_count']}</td><td>{html.escape(r['observed_value'] or '')}</td>"
        f"<td>{html.escape(r['sample_keys'] or '')}</td></tr>" for r in failed)
    return ('<p class="bad">Latest validation failed:</p><table><tr><th>expectation</th>'
            '<th>column</th><th>unexpected</th><th>observed</th><th>sample keys</th></tr>'
            f"{cells}</table>")


def render_html(config: PipelineConfig, metrics: Sequence[Row], results: Sequence[Row],
                docs_link: str) -> str:
    """The dashboard page for already-read metrics and result rows."""
    runs, verdicts = run_totals(metrics), verdict_totals(results)
    points = batch_points(metrics)
    sections: list[str] = []
    plotly_js: bool | str = True  # embed plotly.js once, in the first chart
    if not runs and not verdicts:
        sections.append('<div class="empty"><h2>No runs yet</h2><p>Run the pipeline; its '
                        "batches and validation verdicts will appear here.</p></div>")
    charts = ((records_figure(runs), runs), (dropped_figure(runs), runs),
              (verdicts_figure(verdicts), verdicts), (duration_figure(runs), runs),
              (lag_figure(points), points), (throughput_figure(points), points))
    for fig, present in charts:
        if present:
            sections.append(fig.to_html(full_html=False, include_plotlyjs=plotly_js,
                                        config={"displayModeBar": False, "responsive": True}))
            plotly_js = False
    if verdicts:
        sections.append(_failures_table(results, verdicts[-1].run_id))
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>deltasink quality: {html.escape(config.name)}</title>"
        f"<style>{_STYLE}</style></head><body>"
        f"<h1>deltasink quality dashboard: {html.escape(config.name)}</h1>"
        f'<p class="sub">target {html.escape(config.target.ref.describe())} · '
        f"{len(runs)} runs · {len(verdicts)} validations · generated {generated} · "
        f'<a id="data-docs" href="{html.escape(docs_link)}">Data Docs</a></p>'
        + "".join(sections) + "</body></html>\n"
    )


def write_report(spark: SparkSession, config: PipelineConfig, out: Path | None = None) -> Path:
    """Write the static HTML dashboard for a pipeline.

    Shows, per run, records in / inserted / duplicates dropped (in batch and by merge) /
    quarantined, the validation verdicts over time, per batch over time the Kafka lag,
    freshness, throughput (records/s) and quarantine rate, the latest failures and a link to
    the Data Docs index. Works with missing or empty tables (the page then says there are no
    runs yet).

    Args:
        spark: the session.
        config: the pipeline configuration (quality tables and ``docs_dir``).
        out: the HTML file to write; defaults to :func:`default_report_path`.

    Returns:
        The path of the written page.
    """
    out = (out or default_report_path(config)).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    docs_index = Path(config.quality.docs_dir).resolve() / "index.html"
    docs_link = Path(os.path.relpath(docs_index, out.parent)).as_posix()
    page = render_html(config, read_run_metrics(spark, config),
                       read_validation_results(spark, config), docs_link)
    out.write_text(page, encoding="utf-8")
    return out
