"""The HTML dashboard: its content, and that it renders in headless Chromium without errors."""

from __future__ import annotations

import functools
import re
import subprocess
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.config.model import PipelineConfig
from quality.report import default_report_path, write_report
from quality.results import write_run_metrics, write_validation_results
from tests.quality.conftest import batch
from tests.quality.test_results import report

CHROMIUM = Path("/usr/bin/chromium")
# The page logs nothing on purpose, so any console line (this Chromium logs console.error as
# INFO:CONSOLE) or uncaught exception is a defect.
CONSOLE_ERROR = re.compile(r"Uncaught|CONSOLE")


def _require_chromium(func):  # type: ignore[no-untyped-def]
    """Fail, never skip, without Chromium: `make test` installs it (.ci/ensure-chromium.sh)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
        assert CHROMIUM.exists(), "headless Chromium missing: run .ci/ensure-chromium.sh"
        return func(*args, **kwargs)

    return wrapper


needs_chromium = _require_chromium


def chromium(page: Path, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run headless Chromium on ``page`` with ``args`` (e.g. ``--dump-dom``)."""
    command = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
               "--no-first-run", "--disable-background-networking", "--disable-component-update",
               "--disable-sync", f"--user-data-dir={tmp / 'profile'}", "--enable-logging=stderr",
               "--v=0", "--window-size=1200,1600", "--virtual-time-budget=5000", *args,
               page.as_uri()]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def console_errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if CONSOLE_ERROR.search(line)]


@pytest.fixture
def recorded(spark: SparkSession, config: PipelineConfig) -> PipelineConfig:
    """Two runs' batches and verdicts (the second run failed validation)."""
    start = datetime(2026, 11, 21, 9, 0, tzinfo=UTC)
    write_run_metrics(spark, config, [
        batch("run-1", 0, records_in=1000, quarantined=4, started=start),
        batch("run-1", 1, records_in=500, started=start + timedelta(seconds=30)),
        replace(batch("run-2", 2, records_in=800, quarantined=40,
                      started=start + timedelta(hours=1)),
                lag_records=250, freshness_kafka_s=3.5, freshness_event_s=4.0),
        batch("run-2", 1, records_in=500, replayed=True, started=start + timedelta(hours=1)),
    ])
    write_validation_results(spark, config, report("run-1"))
    write_validation_results(spark, config, report("run-2", success=False))
    return config


def test_report_shows_runs_verdicts_and_docs_link(
    spark: SparkSession, recorded: PipelineConfig
) -> None:
    page = write_report(spark, recorded)

    assert page == default_report_path(recorded)
    assert page.parent == Path(recorded.quality.docs_dir).parent
    text = page.read_text(encoding="utf-8")
    for title in ("Records in and inserted per run", "Records dropped per run",
                  "Validation verdicts", "duplicates dropped by merge",
                  "quarantined", "inserted", "records in", "Lag and freshness per batch",
                  "lag (records)", "now - newest Kafka timestamp (s)",
                  "Throughput and quarantine rate per batch", "quarantined (%)"):
        assert title in text, title
    assert 'href="docs/index.html"' in text
    assert "Latest validation failed" in text and "expect_column_values_to_be_unique" in text
    assert "2 runs" in text and "2 validations" in text
    assert "No runs yet" not in text
    assert "<script src=" not in text  # plotly.js is inline: no CDN, no network needed
    assert text.count("Plotly.newPlot") == 6


def test_report_without_tables_says_no_runs_yet(
    spark: SparkSession, config: PipelineConfig, tmp_path: Path
) -> None:
    page = write_report(spark, config, out=tmp_path / "sub" / "dash.html")

    assert page == (tmp_path / "sub" / "dash.html").resolve()
    text = page.read_text(encoding="utf-8")
    assert "No runs yet" in text and "plotly" not in text.lower()


@needs_chromium
def test_report_renders_in_headless_chromium(
    spark: SparkSession, recorded: PipelineConfig, tmp_path: Path
) -> None:
    page = write_report(spark, recorded)
    shot = tmp_path / "dashboard.png"

    dom = chromium(page, tmp_path, "--dump-dom")
    screenshot = chromium(page, tmp_path, f"--screenshot={shot}")

    assert dom.returncode == 0, dom.stderr[-2000:]
    assert dom.stdout.count('class="plot-container plotly"') == 6, "six charts rendered"
    assert "js-plotly-plot" in dom.stdout and 'class="main-svg"' in dom.stdout
    assert "bars" in dom.stdout  # bar traces drawn into the SVG
    assert console_errors(dom.stderr + screenshot.stderr) == []
    assert screenshot.returncode == 0, screenshot.stderr[-2000:]
    assert shot.is_file() and shot.stat().st_size > 20_000


@needs_chromium
def test_empty_report_renders_in_headless_chromium(
    spark: SparkSession, config: PipelineConfig, tmp_path: Path
) -> None:
    page = write_report(spark, config)

    dom = chromium(page, tmp_path, "--dump-dom")

    assert dom.returncode == 0, dom.stderr[-2000:]
    assert "No runs yet" in dom.stdout
    assert console_errors(dom.stderr) == []
