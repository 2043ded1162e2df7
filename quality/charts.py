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
