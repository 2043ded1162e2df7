"""What one micro-batch did, as a plain record the quality layer can store and chart."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import date, datetime
from typing import Any


@dataclass(frozen=True)
class BatchMetrics:
    """Counts and timings of one micro-batch.

    ``records_in = quarantined + duplicates_in_batch + duplicates_by_merge + inserted`` holds for
    every batch that was not a replay. A replayed batch (``replayed=True``) changed nothing.
    ``duplicates_other_date`` is the part of ``duplicates_by_merge`` whose key was already in the
    target only under another ``event_date`` (caught by ``target.dedup_window``; 0 without it).
    """

    pipeline: str
    run_id: str
    query_id: str
    batch_id: int
    records_in: int
    quarantined: int
    duplicates_in_batch: int
    duplicates_by_merge: int
    inserted: int
    duration_s: float
    started_at: datetime
    replayed: bool = False
    target_version: int | None = None
    event_dates: tuple[date, ...] = ()
    stage_seconds: dict[str, float] = field(default_factory=dict)
    duplicates_other_date: int = 0

    def as_row(self) -> dict[str, Any]:
        """A flat dict for a Delta row (event dates and stage timings become strings/JSON)."""
        row = asdict(self)
        row["event_dates"] = ",".join(d.isoformat() for d in self.event_dates)
        row["stage_seconds"] = ",".join(f"{k}={v:.3f}" for k, v in self.stage_seconds.items())
        return row

    def progress_line(self) -> str:
        """The one line printed per batch."""
        tag = " (replay: already committed, skipped)" if self.replayed else ""
        return (f"batch {self.batch_id}: in={self.records_in} quarantined={self.quarantined} "
                f"dup_in_batch={self.duplicates_in_batch} dup_by_merge={self.duplicates_by_merge} "
                f"inserted={self.inserted} {self.duration_s:.2f}s{tag}")


@dataclass(frozen=True)
class RunResult:
    """What one ``deltasink run`` did: its batches, and the partitions it touched."""

    pipeline: str
    run_id: str
    batches: tuple[BatchMetrics, ...]

    @property
    def records_in(self) -> int:
        """Records read in this run (replays excluded)."""
        return sum(b.records_in for b in self.batches if not b.replayed)

    @property
    def quarantined(self) -> int:
        """Records quarantined in this run (replays excluded)."""
        return sum(b.quarantined for b in self.batches if not b.replayed)

    @property
    def inserted(self) -> int:
        """Rows inserted into the target in this run."""
        return sum(b.inserted for b in self.batches if not b.replayed)

    @property
    def event_dates(self) -> tuple[date, ...]:
        """The target partitions (event dates) this run wrote to, sorted."""
        return tuple(sorted({d for b in self.batches for d in b.event_dates}))
