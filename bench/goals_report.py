"""Issue 60 §1's goals, each judged from both sides of its figure, as ``bench.goals`` measured
them; the Markdown report.

An entry (one row of the report) holds raw samples, one per pass or batch: ``deltasink`` and
``other`` (the plain append's, or the raw consume's), and its ``kind`` says how they make the
figure. Every figure is a median of its samples, so one slow pass moves it no more than the
passes' spread says; the raw samples stay in ``goals.json``.

- ``cold``: wall seconds of each cold process; the figure is deltasink / plain;
- ``batch``: seconds per warm batch; the figure is deltasink's (the ratio is shown beside it);
- ``latency``: the run's p99 latency, one sample; no other side;
- ``share``: events per second; the figure is deltasink / the raw consume.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

#: What the Connect rows must reach against classic (issue 60 §1: "within 1.1x of classic").
CONNECT_BOUND = 1.1


@dataclass(frozen=True)
class Goal:
    """One cell of the issue's table: what it measures, its bound, and its figure before."""

    what: str
    bound: float
    unit: str = "x"  #: ``x`` a ratio to the other side, `` s`` seconds, ``""`` a share
    at_most: bool = True
    today: str = ""
    min_samples: int = 1

    def text(self) -> str:
        """The goal as the report states it."""
        return f"{'≤' if self.at_most else '≥'} {self.bound:g}{self.unit}"


GOALS: dict[int, Goal] = {
    1: Goal("cold scheduled run, 2M-event backlog onto an existing table (time-ordered, random "
            "ids)", 1.3, today="1.39x"),
    2: Goal("5M events, times spread over 3 days, existing table", 1.3,
            today="3.15x, sequential ids"),
    3: Goal("cold scheduled run, 300k events on fresh tables", 1.3, today="1.79x"),
    4: Goal("cold scheduled run, 50k events on existing tables", 1.5, today="1.95x"),
    5: Goal("a batch of ≤ 5,000 events, warm, classic", 1.0, " s", today="~4 s",
            min_samples=8),
    6: Goal("continuous, `--interval 5s`, 1,000 events/s for 2 minutes: p99", 7.0, " s",
            today="p99 7.5-13 s"),
    7: Goal("continuous, `--interval 1s`, 1,000 events/s for 2 minutes: p99", 3.0, " s",
            today="not met"),
    8: Goal("end to end, 1M events over 60 days, share of the raw confluent-kafka consume rate",
            0.10, "", at_most=False, today="0.035"),
}


@dataclass(frozen=True)
class Verdict:
    """One report row: both sides as text, the figure, and whether the goal is met."""

    figure: float | None
    deltasink: str
    other: str
    value: str
    verdict: str


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def judge(entry: dict[str, Any], min_samples: int | None = None) -> Verdict:
    """The verdict on one entry against its cell's goal (``min_samples``: the goal's own
    unless given; fewer samples are not judged)."""
    goal = GOALS[int(entry["cell"])]
    if entry.get("error"):
        return Verdict(None, "-", "-", "-", f"error: {entry['error']}")
    kind = entry["kind"]
    ds, other = _median(entry.get("deltasink", [])), _median(entry.get("other", []))
    if ds is None or (kind in ("cold", "share") and not other):
        return Verdict(None, "-", "-", "-", "not measured")
    n = len(entry["deltasink"])
    if kind == "cold":
        figure, text = ds / float(other or 1), f"{ds / float(other or 1):.2f}x"
        sides = f"{ds:.1f} s", f"{other:.1f} s (plain append)"
    elif kind == "share":
        figure, text = ds / float(other or 1), f"{ds / float(other or 1):.3f}"
        sides = f"{ds:,.0f} events/s", f"{other:,.0f} events/s (raw consume)"
    elif kind == "batch":
        figure = ds
        text = f"{ds:.2f} s" + (f" ({ds / other:.2f}x plain)" if other else "")
        sides = (f"{ds:.2f} s (median of {n})",
                 f"{other:.2f} s (plain `addBatch`, median of {len(entry['other'])})"
                 if other else "-")
    else:
        figure, text = ds, f"{ds:.2f} s"
        sides = f"p99 {ds:.2f} s (p50 {entry.get('p50', 0):.2f} s)", "- (a bound, not a ratio)"
    need = goal.min_samples if min_samples is None else min_samples
    if entry.get("invalid"):
        verdict = f"**invalid**: {entry['invalid']}"
    elif n < need:
        verdict = f"not judged: {n} samples (< {need})"
    else:
        verdict = "met" if (figure <= goal.bound if goal.at_most else figure >= goal.bound) \
            else "**missed**"
    return Verdict(figure, sides[0], sides[1], text, verdict)


def connect_rows(entries: list[dict[str, Any]]) -> list[str]:
    """Each Connect row's figure against the same cell's classic row: ≤ 1.1x, or missed."""
    classic = {e["row"]: e for e in entries if e.get("mode") != "connect"}
    lines = []
    for e in entries:
        base = classic.get(str(e["row"]).removesuffix("-connect"))
        if e.get("mode") != "connect" or base is None:
            continue
        a, b = _median(e.get("deltasink", [])), _median(base.get("deltasink", []))
        if not a or not b:
            lines.append(f"| {e['row']} | - | - | - | ≤ {CONNECT_BOUND:g}x | not measured |")
            continue
        ratio = b / a if e["kind"] == "share" else a / b  # a share is a rate: higher is better
        met = "met" if ratio <= CONNECT_BOUND else "**missed**"
        lines.append(f"| {e['row']} | {a:,.2f} | {b:,.2f} | {ratio:.2f}x | "
                     f"≤ {CONNECT_BOUND:g}x | {met} |")
    return lines


def render(entries: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    """The report: one row per entry in cell order, then Connect against classic, then each
    cell's data, passes and load."""
    ordered = sorted(entries, key=lambda e: (int(e["cell"]), str(e["row"])))
    lines = ["# deltasink benchmark: issue 60's goals, measured in one run", ""]
    if meta.get("quick"):
        lines += ["**A `--quick` smoke test at tiny sizes: the verdicts below do not judge the "
                  "goals.**", ""]
    lines += [f"Run {meta['started']} on {meta['host']}, build {meta['build']}; "
              f"{meta.get('total_s', '?')} s in all. Load average at start "
              f"{meta['load_start']}, at end {meta.get('load_end', '?')}. Passes: "
              f"{meta['passes']} for the big cells (1, 2, 8), {meta['small_passes']} for cells "
              "3 and 4; each figure is the median of its samples.", "",
              "| cell | deltasink | the other side | ratio or value | goal (today) | met? |",
              "|---|---|---|---|---|---|"]
    for e in ordered:
        goal, v = GOALS[int(e["cell"])], judge(e)
        lines.append(f"| {e['row']}: {e['label']} | {v.deltasink} | {v.other} | {v.value} | "
                     f"{goal.text()} ({goal.today}) | {v.verdict} |")
    if any(e.get("mode") == "connect" for e in ordered):
        lines += ["", "Spark Connect against classic (the same cell's deltasink figure; the "
                  "Connect server was started once, before its first cell, and stays up as a "
                  "serverless session is: its JVM start-up is in no cell):", "",
                  "| row | connect | classic | connect / classic | goal | met? |",
                  "|---|---|---|---|---|---|", *connect_rows(ordered)]
    lines += ["", "| row | samples (passes or batches) | seconds the cell took | load at start "
              "| load at end |", "|---|---|---|---|---|"]
    for e in ordered:
        lines.append(f"| {e['row']} | {len(e.get('deltasink', []))} | {e.get('seconds', '?')} | "
                     f"{e.get('load_start', '?')} | {e.get('load_end', '?')} |")
    lines += ["", *meta.get("notes", [])]
    return "\n".join(lines) + "\n"
