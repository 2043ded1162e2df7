"""The soak's goals (issue 46 §2), judged from its samples: each figure flat, or within the
bound a named setting sets; latency at the end no worse than at the start; every event once.

Each rule is written into the report beside what was measured, so a reader can check the
verdict. "Flat" compares the last third of the samples with the first third, so the warm-up's
first minutes weigh no more than the rest.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bench.steady import STOP_WAIT

#: Delta's ``spark.databricks.delta.autoCompact.minNumFiles`` default: a date partition is
#: compacted once it holds this many small files.
MIN_FILES = 50
#: ``spark.sql.streaming.minBatchesToRetain`` as deltasink sets it (``LOCAL_CONF``).
RETAIN = 100
#: How much worse "no worse" may be: the noise between two samples on two cores.
SLACK = 1.25


@dataclass(frozen=True)
class Goal:
    """One figure's verdict: the rule, what was measured, and whether it held."""

    figure: str
    rule: str
    measured: str
    met: bool


def _values(samples: Sequence[dict[str, Any]], key: str) -> list[float]:
    return [float(s[key]) for s in samples if s.get(key) is not None]


def _thirds(values: list[float]) -> tuple[list[float], list[float]]:
    third = max(1, len(values) // 3)
    return values[:third], values[-third:]


def _flat(figure: str, values: list[float], unit: str, plus: float = 0.0) -> Goal:
    first, last = _thirds(values)
    a, b = statistics.median(first or [0.0]), statistics.median(last or [0.0])
    return Goal(figure, f"flat: the last third's median ≤ {SLACK:g} x the first third's"
                + (f" + {plus:g} {unit}" if plus else ""),
                f"{a:.1f} → {b:.1f} {unit}", bool(values) and b <= SLACK * a + plus)


def judge(samples: Sequence[dict[str, Any]], once: dict[str, int], *,
          renew_every: float = 20.0, metrics_every: float = 300.0,
          cadence: float = 900.0, exit_code: int | None) -> list[Goal]:
    """The verdict on every figure of the soak.

    Args:
        samples: the soak's rows, in order (``bench.soak.sample``).
        once: the exactly-once check from the target's files (``steady.exactly_once``).
        renew_every: the lease's renewal period, seconds.
        metrics_every: ``quality.metrics_every``, seconds.
        cadence: ``quality.validate_every``, seconds.
        exit_code: how the run ended when the soak stopped it with Ctrl-C (SIGINT to the
            process, ``steady.deltasink_process``): a negative code is the SIGKILL it got when
            it had not exited within the wait.
    """
    minutes = max((float(s["minute"]) for s in samples), default=0.0)
    last = samples[-1] if samples else {}
    goals = [_flat("JVM heap after a full GC", _values(samples, "heap_after_gc_mib"), "MiB",
                   plus=64),
             _flat("python RSS", _values(samples, "rss_python_mib"), "MiB", plus=32),
             _flat("batch duration (median)", _values(samples, "batch_median_s"), "s",
                   plus=0.5)]
    files = _values(samples, "target_live_files")
    goals.append(Goal("target live data files",
                      f"bounded by auto-compaction: ≤ {MIN_FILES + 1} (minNumFiles + the "
                      "compacted file, one date partition)",
                      f"max {max(files, default=0):.0f}",
                      bool(files) and max(files) <= MIN_FILES + 1))
    entries, commits = last.get("target_log_entries", 0), last.get("target_commits", 0)
    goals.append(Goal("target _delta_log entries",
                      "bounded by delta.logRetentionDuration (30 days); until then at most 5 "
                      "files per commit on local disk (JSON, Delta's checksum, Hadoop's .crc "
                      "of each, a checkpoint every 10 commits)",
                      f"{entries} for {commits} commits", entries <= 5 * commits + 4))
    spark_files = _values(samples, "spark_checkpoint_files")
    goals.append(Goal("Spark checkpoint: offsets and commits files",
                      f"bounded by minBatchesToRetain: ≤ 2 x ({RETAIN} + 5)",
                      f"max {max(spark_files):.0f}" if spark_files else "not measured",
                      bool(spark_files) and max(spark_files) <= 2 * (RETAIN + 5)))
    for figure, key, period, what in (
            ("lease commits", "lease_commits", renew_every, "one renewal per period"),
            ("run-metrics commits", "metrics_commits", metrics_every, "quality.metrics_every"),
            ("verdicts commits", "verdicts_commits", cadence, "quality.validate_every")):
        allowed = minutes * 60 / period + 3  # + the first write, a start's backlog, the last
        goals.append(Goal(figure, f"a rate set by {what} ({period:g} s): ≤ {allowed:.0f} "
                          f"in {minutes:g} min", str(last.get(key, 0)),
                          float(last.get(key, 0)) <= allowed))
    p99 = _values(samples, "latency_p99_s")
    start, end = (p99[0], p99[-1]) if p99 else (0.0, 0.0)
    goals.append(Goal("latency p99, end against start",
                      f"no worse: ≤ {SLACK:g} x the first measured interval's, or + 1 s",
                      f"{start:.2f} → {end:.2f} s",
                      bool(p99) and end <= max(SLACK * start, start + 1.0)))
    clean = (once.get("missing", 1) == 0 and once.get("extra", 1) == 0
             and once.get("rows", -1) == once.get("distinct", -2) == once.get("sent", -3))
    goals.append(Goal("every event once", "the target's files hold each sent event once, "
                      "nothing else", f"{once.get('distinct', 0):,} of {once.get('sent', 0):,}",
                      clean))
    goals.append(Goal("a Ctrl-C stops the run", f"exit 0 within {STOP_WAIT:.0f} s of SIGINT "
                      "(`deltasink run --help`: a stopped continuous run exits 0)",
                      f"exit code {exit_code}", exit_code == 0))
    return goals


def render_goals(goals: Sequence[Goal]) -> list[str]:
    """The goals as a markdown table."""
    lines = ["| figure | goal | measured | met |", "|---|---|---|---|"]
    lines += [f"| {g.figure} | {g.rule} | {g.measured} | {'yes' if g.met else '**no**'} |"
              for g in goals]
    return lines
