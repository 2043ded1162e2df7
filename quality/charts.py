"""Plotly figures for the quality dashboard, built from already-aggregated plain data.

Kept free of Spark so the figures can be built (and tested) from any source of numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import plotly.graph_objects as go

PASS_COLOR = "#2e7d32"
FAIL_COLOR = "#c62828"


@dataclass(frozen=True)
class RunTotals:
    """What one pipeline run did, summed over its (non-replayed) batches."""

    run_id: str
    started_at: datetime
    batches: int
    records_in: int
    inserted: int
    duplicates_in_batch: int
    duplicates_by_merge: int
    quarantined: int
    duration_s: float

    @property
    def label(self) -> str:
        """The x-axis label: start time and a short run id."""
        return f"{self.started_at:%Y-%m-%d %H:%M}<br>{self.run_id[-12:]}"


@dataclass(frozen=True)
class BatchPoint:
    """One (non-replayed) batch on the time axis: its throughput, quarantine share and lag.

    ``lag_records`` and the freshness ages are None for batches recorded before they existed
    or backfilled from their commit.
    """

    at: datetime
    records_in: int
    quarantined: int
    duration_s: float
    lag_records: int | None = None
    freshness_event_s: float | None = None
    freshness_kafka_s: float | None = None

    @property
    def records_per_s(self) -> float:
        """Records read per second of the batch's own wall time."""
        return self.records_in / self.duration_s if self.duration_s > 0 else 0.0

    @property
    def quarantine_pct(self) -> float:
        """The share of the batch's records quarantined, in percent."""
        return 100.0 * self.quarantined / self.records_in if self.records_in else 0.0


@dataclass(frozen=True)
class VerdictTotals:
    """How one validation went: its time, table version and pass/fail counts."""

    run_id: str
    validated_at: datetime
    table_version: int | None
    passed: int
    failed: int

    @property
    def label(self) -> str:
        """The x-axis label: validation time and a short run id."""
        return f"{self.validated_at:%Y-%m-%d %H:%M}<br>{self.run_id[-12:]}"


def _layout(fig: go.Figure, title: str, y_title: str) -> go.Figure:
    fig.update_layout(
        title={"text": title, "x": 0.01}, barmode="stack", height=340, template="plotly_white",
        margin={"l": 60, "r": 20, "t": 70, "b": 60}, yaxis_title=y_title,
        legend={"orientation": "h", "x": 1, "xanchor": "right", "y": 1.02, "yanchor": "bottom"},
    )
    fig.update_xaxes(type="category", tickangle=0)
    return fig


def records_figure(runs: Sequence[RunTotals]) -> go.Figure:
    """Per run: records read (line) and rows inserted into the target (bars)."""
    x = [r.label for r in runs]
    fig = go.Figure()
    fig.add_bar(name="inserted", x=x, y=[r.inserted for r in runs], marker_color="#1565c0")
    fig.add_scatter(name="records in", x=x, y=[r.records_in for r in runs],
                    mode="lines+markers", line={"color": "#212121"})
    return _layout(fig, "Records in and inserted per run", "records")


def dropped_figure(runs: Sequence[RunTotals]) -> go.Figure:
    """Per run: records not inserted, stacked by reason (duplicates in batch, duplicates
    already in the target, quarantined). On its own scale: these are usually small."""
    x = [r.label for r in runs]
    fig = go.Figure()
    fig.add_bar(name="duplicates dropped in batch", x=x,
                y=[r.duplicates_in_batch for r in runs], marker_color="#90caf9")
    fig.add_bar(name="duplicates dropped by merge", x=x,
                y=[r.duplicates_by_merge for r in runs], marker_color="#ffb74d")
    fig.add_bar(name="quarantined", x=x, y=[r.quarantined for r in runs],
                marker_color=FAIL_COLOR)
    return _layout(fig, "Records dropped per run", "records")


def verdicts_figure(verdicts: Sequence[VerdictTotals]) -> go.Figure:
    """Per validation: expectations passed and failed, stacked."""
    x = [v.label for v in verdicts]
    fig = go.Figure()
    fig.add_bar(name="passed", x=x, y=[v.passed for v in verdicts], marker_color=PASS_COLOR)
    fig.add_bar(name="failed", x=x, y=[v.failed for v in verdicts], marker_color=FAIL_COLOR)
    return _layout(fig, "Validation verdicts (expectations per validation)", "expectations")


def duration_figure(runs: Sequence[RunTotals]) -> go.Figure:
    """Per run: wall time spent in micro-batches and throughput."""
    x = [r.label for r in runs]
    fig = go.Figure()
    fig.add_bar(name="batch seconds", x=x, y=[round(r.duration_s, 2) for r in runs],
                marker_color="#6a1b9a")
    fig = _layout(fig, "Time in micro-batches per run", "seconds")
    fig.update_layout(barmode="group")
    return fig


def _over_time(fig: go.Figure, title: str, y_title: str, y2_title: str) -> go.Figure:
    fig = _layout(fig, title, y_title)
    fig.update_xaxes(type="date", tickangle=0)
    fig.update_layout(yaxis2={"title": y2_title, "overlaying": "y", "side": "right",
                              "rangemode": "tozero"}, yaxis={"rangemode": "tozero"})
    return fig


def lag_figure(points: Sequence[BatchPoint]) -> go.Figure:
    """Per batch, over time: Kafka lag in records (left) and freshness in seconds (right)."""
    x = [p.at for p in points]
    fig = go.Figure()
    fig.add_scatter(name="lag (records)", x=x, y=[p.lag_records for p in points],
                    mode="lines+markers", line={"color": "#1565c0"})
    fig.add_scatter(name="now - newest Kafka timestamp (s)", x=x,
                    y=[p.freshness_kafka_s for p in points], mode="lines+markers",
                    line={"color": "#ef6c00", "dash": "dot"}, yaxis="y2")
    fig.add_scatter(name="now - newest event_time (s)", x=x,
                    y=[p.freshness_event_s for p in points], mode="lines+markers",
                    line={"color": "#6a1b9a", "dash": "dot"}, yaxis="y2")
    return _over_time(fig, "Lag and freshness per batch", "records behind", "seconds")


def throughput_figure(points: Sequence[BatchPoint]) -> go.Figure:
    """Per batch, over time: records/s (left) and the quarantined share in percent (right)."""
    x = [p.at for p in points]
    fig = go.Figure()
    fig.add_scatter(name="records/s", x=x, y=[round(p.records_per_s, 1) for p in points],
                    mode="lines+markers", line={"color": "#212121"})
    fig.add_scatter(name="quarantined (%)", x=x, y=[round(p.quarantine_pct, 3) for p in points],
                    mode="lines+markers", line={"color": FAIL_COLOR}, yaxis="y2")
    return _over_time(fig, "Throughput and quarantine rate per batch", "records/s",
                      "% quarantined")
