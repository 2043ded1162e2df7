"""bench.soak_goals: the soak's verdicts hold for flat figures and fail on growth."""

from __future__ import annotations

from typing import Any

from bench.soak_goals import judge

ONCE = {"sent": 100, "rows": 100, "distinct": 100, "missing": 0, "extra": 0}


def _samples(**grow: float) -> list[dict[str, Any]]:
    """Nine samples, three minutes apart, of a run where nothing grows but ``grow``'s figures
    (each rises by that much per sample)."""
    rows = []
    for n in range(9):
        row: dict[str, Any] = {
            "minute": 3.0 * (n + 1), "heap_after_gc_mib": 200, "rss_python_mib": 300,
            "batch_median_s": 1.0, "target_live_files": 10 + n % 5,
            "target_log_entries": 40 * (n + 1), "target_commits": 10 * (n + 1),
            "spark_checkpoint_files": 200, "lease_commits": 9 * (n + 1),
            "metrics_commits": 1 + n // 2, "verdicts_commits": n // 5,
            "latency_p99_s": 2.0}
        for key, step in grow.items():
            row[key] = row[key] + step * n
        rows.append(row)
    return rows


def _failed(samples: list[dict[str, Any]], once: dict[str, int] = ONCE) -> list[str]:
    return [g.figure for g in judge(samples, once, exit_code=0) if not g.met]


def test_a_flat_soak_meets_every_goal() -> None:
    assert _failed(_samples()) == []


def test_each_growth_fails_its_own_goal_only() -> None:
    assert _failed(_samples(heap_after_gc_mib=50)) == ["JVM heap after a full GC"]
    assert _failed(_samples(target_live_files=10)) == ["target live data files"]
    assert _failed(_samples(spark_checkpoint_files=5)) == [
        "Spark checkpoint: offsets and commits files"]
    assert _failed(_samples(latency_p99_s=1.0)) == ["latency p99, end against start"]
    assert _failed(_samples(metrics_commits=3)) == ["run-metrics commits"]


def test_a_lost_or_doubled_event_fails_exactly_once() -> None:
    assert _failed(_samples(), {**ONCE, "missing": 1, "distinct": 99}) == ["every event once"]
    assert _failed(_samples(), {**ONCE, "rows": 101}) == ["every event once"]


def test_a_run_that_did_not_exit_on_ctrl_c_fails_the_stop_goal_only() -> None:
    killed = judge(_samples(), ONCE, exit_code=-9)
    assert [g.figure for g in killed if not g.met] == ["a Ctrl-C stops the run"]
    assert "exit code -9" in next(g.measured for g in killed if not g.met)
