"""The per-phase clock behind ``deltasink run``'s ``timings:`` line."""

from __future__ import annotations

import time

import pytest

from pipelines.runtime.phases import Phases, parse_line


def test_a_phase_that_runs_twice_adds_up_and_the_line_parses_back() -> None:
    clock = Phases()
    for _ in range(2):
        with clock.phase("stream"):
            time.sleep(0.06)
    with clock.phase("validate"):
        pass
    line = clock.line()
    parsed = parse_line(line)
    assert list(parsed)[:2] == ["stream", "validate"]  # in the order they first ran
    assert parsed["stream"] >= 0.1
    assert parsed["total"] >= parsed["stream"]


def test_a_phase_that_raises_is_still_counted() -> None:
    clock = Phases()
    with pytest.raises(RuntimeError), clock.phase("preflight"):
        raise RuntimeError("refused")
    assert "preflight" in clock.seconds


def test_a_line_that_is_not_a_timings_line_is_refused() -> None:
    with pytest.raises(ValueError, match="not a timings: line"):
        parse_line("run abc done: 2 batches")
