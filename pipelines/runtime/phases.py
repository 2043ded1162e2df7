"""Where a run's seconds go: wall-clock time per start-up, stream and validation phase.

A scheduled run pays its fixed costs (Spark start, preflight, table checks, query start and
stop, validation) on every trigger, 96 times a day for a 15-minute schedule. ``deltasink run``
prints one ``timings:`` line at the end so an operator (and ``bench/scheduled.py``) can see
which phase costs what, without a profiler.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

#: The prefix of the line ``deltasink run`` prints; ``bench/scheduled.py`` parses it.
PREFIX = "timings:"


@dataclass
class Phases:
    """Seconds per named phase, in the order they first ran, since ``started``."""

    started: float = field(default_factory=time.monotonic)
    seconds: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Time the block and add it to ``name`` (a phase may run more than once)."""
        mark = time.monotonic()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.monotonic() - mark

    def total(self) -> float:
        """Seconds since the clock started (includes time in no named phase)."""
        return time.monotonic() - self.started

    def line(self) -> str:
        """``timings: spark 8.1s, preflight 0.4s, ..., other 0.3s, total 42.6s``."""
        total = self.total()
        parts = [f"{name} {secs:.1f}s" for name, secs in self.seconds.items()]
        other = total - sum(self.seconds.values())
        if other >= 0.05:
            parts.append(f"other {other:.1f}s")
        return f"{PREFIX} {', '.join([*parts, f'total {total:.1f}s'])}"


def parse_line(line: str) -> dict[str, float]:
    """The phases of a ``timings:`` line, as seconds (``total`` included).

    Raises:
        ValueError: the line is not a ``timings:`` line.
    """
    if not line.startswith(PREFIX):
        raise ValueError(f"not a {PREFIX} line: {line!r}")
    out: dict[str, float] = {}
    for part in line[len(PREFIX):].split(","):
        name, _, secs = part.strip().rpartition(" ")
        out[name] = float(secs.rstrip("s"))
    return out
