"""bench.goals_report: each goal judged from both sides, in its own direction and unit."""

from __future__ import annotations

from typing import Any

from bench.goals_report import judge, render

META = {"started": "t", "host": "h", "build": "b", "load_start": "1", "passes": 1,
        "small_passes": 3}


def _cold(cell: int, deltasink: list[float], plain: list[float], **extra: Any
          ) -> dict[str, Any]:
    return {"cell": cell, "row": str(cell), "label": "x", "kind": "cold",
            "deltasink": deltasink, "other": plain, **extra}


def test_a_cold_ratio_is_the_median_over_the_median_and_meets_its_bound_at_most() -> None:
    v = judge(_cold(3, [13.0, 20.0, 12.5], [10.0, 10.0, 30.0]))  # medians 13 / 10
    assert v.value == "1.30x" and v.verdict == "met"  # the bound itself is met
    assert judge(_cold(3, [13.1], [10.0])).verdict == "**missed**"
    assert judge(_cold(4, [14.9], [10.0])).verdict == "met"  # cell 4's bound is 1.5x


def test_the_share_must_reach_its_bound_from_below() -> None:
    share = {"cell": 8, "row": "8", "label": "x", "kind": "share"}
    assert judge({**share, "deltasink": [12_000.0], "other": [100_000.0]}).verdict == "met"
    missed = judge({**share, "deltasink": [3_500.0], "other": [100_000.0]})
    assert missed.verdict == "**missed**" and missed.value == "0.035"


def test_a_warm_batch_is_judged_in_seconds_and_only_from_eight_batches() -> None:
    batch = {"cell": 5, "row": "5", "label": "x", "kind": "batch", "other": [0.5] * 8}
    assert judge({**batch, "deltasink": [0.9] * 8}).verdict == "met"
    assert judge({**batch, "deltasink": [1.2] * 8}).verdict == "**missed**"
    few = judge({**batch, "deltasink": [0.5] * 7})
    assert few.verdict.startswith("not judged: 7 samples")
    assert "(1.00x plain)" in few.value


def test_a_latency_that_lost_an_event_is_invalid_and_an_unmeasured_one_not_measured() -> None:
    p99 = {"cell": 7, "row": "7", "label": "x", "kind": "latency", "other": [], "p50": 1.0}
    assert judge({**p99, "deltasink": [2.9]}).verdict == "met"
    assert judge({**p99, "deltasink": [3.1]}).verdict == "**missed**"
    assert judge({**p99, "deltasink": [2.0], "invalid": "not exactly once"}).verdict.startswith(
        "**invalid**")
    assert judge({**p99, "deltasink": []}).verdict == "not measured"


def test_the_report_has_every_row_the_connect_ratio_and_a_quick_warning() -> None:
    entries = [_cold(4, [30.0], [20.0], load_start="2.0", load_end="3.0", seconds=90),
               _cold(4, [33.0], [20.0], row="4-connect", mode="connect"),
               {"cell": 6, "row": "6", "label": "y", "error": "boom"}]
    text = render(entries, {**META, "quick": True})
    assert "smoke test" in text and "| 6: y | - | - | - |" in text and "error: boom" in text
    assert "| 4-connect | 33.00 | 30.00 | 1.10x | ≤ 1.1x | met |" in text
    assert "| 4: x | 30.0 s | 20.0 s (plain append) | 1.50x | ≤ 1.5x (1.95x) | met |" in text
    assert "| 4 | 1 | 90 | 2.0 | 3.0 |" in text
    assert "smoke test" not in render(entries, META)


def test_a_connect_share_is_compared_as_a_rate_higher_is_better() -> None:
    share = {"cell": 8, "kind": "share", "label": "x", "other": [100_000.0]}
    entries = [{**share, "row": "8", "deltasink": [10_000.0]},
               {**share, "row": "8-connect", "mode": "connect", "deltasink": [8_000.0]}]
    assert "| 8-connect | 8,000.00 | 10,000.00 | 1.25x | ≤ 1.1x | **missed** |" in render(
        entries, META)
