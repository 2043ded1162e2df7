"""A run's batches, held in bounded memory however long the run streams.

A scheduled run ends after a few batches; a continuous one (``--trigger continuous``) may stream
for weeks, one batch every few seconds. Holding every batch's :class:`BatchMetrics` for the
run's whole life grew the driver by every batch (half a million batches in a month at a 5 s
interval). :class:`RunLog` keeps the newest :data:`KEPT_BATCHES` one by one and folds older
ones into running totals (:class:`Folded`), so :class:`RunResult`'s counts and event dates stay
exact while the list stays short. The run-metrics table holds every batch's row regardless.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from pipelines.sink.metrics import BatchMetrics, Folded, RunResult

#: Batches a run holds one by one; older ones are folded into the run's totals.
KEPT_BATCHES = 1000


@dataclass
class RunLog:
    """The batches one run committed, in commit order, in bounded memory.

    Attributes:
        keep: how many of the newest batches are held one by one.
    """

    keep: int = KEPT_BATCHES

    def __post_init__(self) -> None:
        if self.keep < 1:
            raise ValueError(f"keep must be at least 1, not {self.keep}")
        self._recent: deque[BatchMetrics] = deque()
        self._folded = Folded()

    def add(self, metrics: BatchMetrics) -> None:
        """Record a committed (or replayed) batch; fold the oldest one beyond :attr:`keep`."""
        self._recent.append(metrics)
        if len(self._recent) > self.keep:
            self._folded = self._folded.plus(self._recent.popleft())

    def result(self, pipeline: str, run_id: str) -> RunResult:
        """The run's result: the held batches and the totals of the folded ones."""
        return RunResult(pipeline, run_id, tuple(self._recent), self._folded)
