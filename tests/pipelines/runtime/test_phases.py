"""The per-phase clock behind ``deltasink run``'s ``timings:`` line."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pipelines.runtime import phases
from pipelines.runtime.phases import Phases, parse_line


def test_a_phase_that_runs_twice_adds_up_and_the_line_parses_back(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Exact sums from a stepped clock (this module's own), not a sleep and a threshold."""
    ticks = iter([101.0, 103.5,  # stream: 2.5 s
                  110.0, 111.25,  # stream again: 1.25 s
                  111.25, 111.5,  # validate: 0.25 s
                  120.0])  # line(): total 20 s, of which 16 s in no named phase
    monkeypatch.setattr(phases, "time", SimpleNamespace(monotonic=lambda: next(ticks)))
    clock = Phases(started=100.0)
    for _ in range(2):
        with clock.phase("stream"):
            pass
    with clock.phase("validate"):
        pass
    assert clock.seconds == {"stream": 3.75, "validate": 0.25}
    line = clock.line()
    assert line == "timings: stream 3.8s, validate 0.2s, other 16.0s, total 20.0s"
    assert parse_line(line) == {"stream": 3.8, "validate": 0.2, "other": 16.0, "total": 20.0}


def test_a_phase_that_raises_is_still_counted() -> None:
    clock = Phases()
    with pytest.raises(RuntimeError), clock.phase("preflight"):
        raise RuntimeError("refused")
    assert "preflight" in clock.seconds


def test_a_line_that_is_not_a_timings_line_is_refused() -> None:
    with pytest.raises(ValueError, match="not a timings: line"):
        parse_line("run abc done: 2 batches")
