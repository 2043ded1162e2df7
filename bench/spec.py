"""What one benchmark run measures: the sizes and the cells of the matrix."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

#: The five configurations, in report order.
CONFIGS = ("floor", "append", "watermark", "naive_merge", "deltasink")


@dataclass(frozen=True)
class Cell:
    """One measurement: a configuration against one target size, batch size and duplicate rate.

    ``dedup_window`` (days) sets deltasink's ``target.dedup_window``; None keeps its default.
    ``upsert`` runs deltasink with ``target.mode: upsert`` (sequence on ``event_time``; its
    window is 0: the key is matched across the whole table).
    """

    config: str
    target_rows: int
    batch: int
    dup_rate: float
    dedup_window: int | None = None
    upsert: bool = False

    @property
    def label(self) -> str:
        """A short unique name, used for table paths and checkpoints."""
        window = "" if self.dedup_window is None else f"_w{self.dedup_window}"
        return (f"{self.config}_t{self.target_rows}_b{self.batch}_d{int(self.dup_rate * 100)}"
                f"{window}{'_upsert' if self.upsert else ''}")

    @property
    def name(self) -> str:
        """The configuration as reported (deltasink with an explicit window or upsert says so)."""
        if self.upsert:
            return f"{self.config} (upsert)"
        if self.dedup_window is None:
            return self.config
        return f"{self.config} (dedup_window {self.dedup_window}d)"


@dataclass(frozen=True)
class BenchSpec:
    """A benchmark preset.

    Attributes:
        name: ``quick`` or ``default``.
        events: distinct valid events produced per duplicate rate (copies come on top).
        warmup_events: events of the warm-up topic, run through append and deltasink first
            (unmeasured) so that no configuration pays the cold JVM's JIT and codegen.
        partitions: Kafka partitions of each topic.
        target_days: existing target rows are spread over this many days up to today.
        passes: 1, or 2 to measure every cell twice, the second pass in reverse order, so that
            drift over the run (JIT warm-up, machine load) does not favour the later cells.
        cells: the measurements, run in order on the same produced data.
    """

    name: str
    events: int
    partitions: int
    warmup_events: int
    target_days: int
    cells: tuple[Cell, ...] = field(default_factory=tuple)
    passes: int = 1

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready description."""
        return asdict(self)


def _matrix(small: int, large: int, batch: int, big_batch: int) -> tuple[Cell, ...]:
    """The documented subset: all five configs at one point, then the scaling questions."""
    cells = [Cell(c, small, batch, 0.2) for c in CONFIGS]
    cells += [Cell(c, t, batch, 0.2) for t in (0, large) for c in ("naive_merge", "deltasink")]
    cells.append(Cell("append", large, batch, 0.2))
    cells += [Cell(c, small, batch, 0.0) for c in ("append", "deltasink")]
    cells += [Cell(c, small, big_batch, 0.2) for c in ("append", "deltasink")]
    # The cost of target.dedup_window: off vs 3 days (last, so goal look-ups find the plain cells).
    cells += [Cell("deltasink", small, batch, 0.2, dedup_window=w) for w in (0, 3)]
    # target.mode: upsert next to insert-only (the plain deltasink cells at the same sizes).
    cells += [Cell("deltasink", t, batch, 0.2, upsert=True) for t in (small, large)]
    return tuple(cells)


QUICK = BenchSpec("quick", events=4_000, partitions=2, warmup_events=1_000, target_days=90,
                  cells=_matrix(20_000, 60_000, 2_000, 20_000))

DEFAULT = BenchSpec("default", events=300_000, partitions=3, warmup_events=20_000, target_days=90,
                    cells=_matrix(1_000_000, 10_000_000, 50_000, 500_000), passes=2)
