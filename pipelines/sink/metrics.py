"""What one micro-batch did, as a plain record the quality layer can store and chart."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import date, datetime
from typing import Any

#: Recorded only after the commit (from the commit itself), so never in ``commit_counts``.
AFTER_COMMIT = ("pipeline", "batch_id", "run_id", "inserted", "updated", "deleted",
                "duplicates_by_merge", "duration_s", "replayed", "target_version")


@dataclass(frozen=True)
class BatchMetrics:
    """Counts and timings of one micro-batch.

    ``records_in = quarantined + duplicates_in_batch + duplicates_by_merge + inserted`` holds for
    every batch that was not a replay. A replayed batch (``replayed=True``) changed nothing.
    ``duplicates_other_date`` is the part of ``duplicates_by_merge`` whose key was already in the
    target only under another ``event_date`` (caught by ``target.dedup_window``; 0 without it,
    and None when some may have been but ``quality.count_other_date_copies`` is off).

    Freshness (``pipelines/sink/freshness.py``), observed on the rows offered to the MERGE:
    ``newest_event_time`` / ``newest_kafka_timestamp`` are the newest of those rows, and
    ``freshness_event_s`` / ``freshness_kafka_s`` the batch's end minus them;
    ``latency_p50_s`` / ``latency_p99_s`` are percentiles of ``ingested_at - kafka_timestamp``.
    ``lag_records`` is what Kafka held past the batch's end offsets when Spark planned it
    (``latestOffset - endOffset`` in the query's progress, summed over partitions); the
    progress exists only once the batch is over, so it is filled in afterwards
    (``pipelines/ledger/lag.py``). All are None for a batch without rows and for backfilled rows.

    Upsert mode (``target.mode: upsert``): ``updated`` rows were replaced by a newer version
    (the MERGE's ``numTargetRowsUpdated``), and ``records_in = quarantined +
    duplicates_in_batch + duplicates_by_merge + inserted + updated``, where
    ``duplicates_in_batch`` are older versions superseded in the batch and
    ``duplicates_by_merge`` versions not newer than the target's. ``deletes`` is how many of the
    batch's latest versions were deletes (tombstones offered; each counts as inserted or
    updated when it wins, as a duplicate when an even newer version is in the target). A
    backfilled row (``from_commit``) counts updates as ``duplicates_by_merge``.

    A change stream (``source.format: debezium``): ``skipped`` records were neither landed nor
    quarantined (the tombstone each delete is followed by), and count in ``records_in``;
    ``deleted`` is the rows the target's MERGE removed (a replica's deleted and truncated keys,
    a history's versions a late change replaced). In SCD2 mode ``inserted`` counts the versions
    opened and ``updated`` those closed or changed in place, so the sum above does not hold.

    ``rerun`` is the retry's line when the batch was re-run after an executor died with its
    blocks (``pipelines/sink/retry.py``); the commit carries it to the client's progress
    output. It is not a column of the run metrics.
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
    duplicates_other_date: int | None = 0
    newest_event_time: datetime | None = None
    newest_kafka_timestamp: datetime | None = None
    freshness_event_s: float | None = None
    freshness_kafka_s: float | None = None
    latency_p50_s: float | None = None
    latency_p99_s: float | None = None
    lag_records: int | None = None
    updated: int = 0
    deletes: int = 0
    rerun: str | None = None
    skipped: int = 0
    deleted: int = 0

    def as_row(self) -> dict[str, Any]:
        """A flat dict for a Delta row (event dates and stage timings become strings/JSON;
        ``rerun`` is for the progress line only, not a column)."""
        row = asdict(self)
        del row["rerun"]
        row["event_dates"] = ",".join(d.isoformat() for d in self.event_dates)
        row["stage_seconds"] = ",".join(f"{k}={v:.3f}" for k, v in self.stage_seconds.items())
        return row

    @classmethod
    def from_commit(cls, pipeline: str, batch_id: int, run_id: str, counts: Mapping[str, Any],
                    *, version: int, inserted: int, committed_at: float,
                    updated: int = 0, merge_seconds: float | None = None) -> BatchMetrics:
        """Rebuild a committed batch's metrics from its target commit (used by the backfill).

        Args:
            pipeline: the commit's pipeline.
            batch_id: its txnVersion.
            run_id: the run that wrote it.
            counts: the ``batch`` part of its userMetadata (see ``commit_counts``); keys that
                are not fields are ignored, missing optional fields take their defaults.
            version: the commit's table version.
            inserted: ``operationMetrics.numTargetRowsInserted`` of the commit.
            updated: ``operationMetrics.numTargetRowsUpdated`` (upsert mode).
            committed_at: the commit's timestamp, in epoch seconds.
            merge_seconds: ``operationMetrics.executionTimeMs`` / 1000: Delta's own time for the
                MERGE and its commit, reported as the ``merge_commit`` stage (the userMetadata
                is written before the MERGE, so it cannot hold it).
        """
        names = {f.name for f in fields(cls)}
        known = {k: v for k, v in counts.items() if k in names and k not in AFTER_COMMIT}
        started = datetime.fromisoformat(str(counts["started_at"]))
        known["started_at"] = started
        known["event_dates"] = tuple(date.fromisoformat(d) for d in counts.get("event_dates", ()))
        known["stage_seconds"] = {str(k): float(v)
                                  for k, v in dict(counts.get("stage_seconds", {})).items()}
        if merge_seconds is not None:
            known["stage_seconds"].setdefault("merge_commit", merge_seconds)
        ended = datetime.fromtimestamp(committed_at, started.tzinfo)
        for name, age in (("newest_event_time", "freshness_event_s"),
                          ("newest_kafka_timestamp", "freshness_kafka_s")):
            if known.get(name) is not None:
                known[name] = datetime.fromisoformat(str(known[name]))
                known[age] = max(0.0, (ended - known[name]).total_seconds())
        return cls(pipeline=pipeline, run_id=run_id, batch_id=batch_id, inserted=inserted,
                   updated=updated, duplicates_by_merge=int(counts["unique"]) - inserted - updated,
                   duration_s=max(0.0, committed_at - started.timestamp()), replayed=False,
                   target_version=version, **known)

    def progress_line(self) -> str:
        """The one line printed per batch."""
        tag = " (replay: already committed, skipped)" if self.replayed else ""
        upsert = (f"updated={self.updated} deletes={self.deletes} "
                  if self.updated or self.deletes else "")
        upsert += f"deleted={self.deleted} " if self.deleted else ""
        upsert += f"skipped={self.skipped} " if self.skipped else ""
        return (f"batch {self.batch_id}: in={self.records_in} quarantined={self.quarantined} "
                f"dup_in_batch={self.duplicates_in_batch} dup_by_merge={self.duplicates_by_merge} "
                f"inserted={self.inserted} {upsert}{self.duration_s:.2f}s{tag}")


def commit_counts(*, query_id: str, records_in: int, quarantined: int,
                  duplicates_in_batch: int, unique: int, started_at: datetime,
                  event_dates: Iterable[date], stage_seconds: Mapping[str, float],
                  **extra: int | str | float) -> dict[str, Any]:
    """The batch's counts known before its target commit, as JSON for the commit's metadata.

    ``unique`` is the rows offered to the MERGE (valid, deduplicated in the batch); with the
    commit's inserted count it gives ``duplicates_by_merge``. ``extra`` carries further
    ``BatchMetrics`` fields (plain numbers or strings) under their field names.
    """
    return {"query_id": query_id, "records_in": records_in, "quarantined": quarantined,
            "duplicates_in_batch": duplicates_in_batch, "unique": unique,
            "started_at": started_at.isoformat(),
            "event_dates": [d.isoformat() for d in event_dates],
            "stage_seconds": {k: round(v, 3) for k, v in stage_seconds.items()}, **extra}


@dataclass(frozen=True)
class Folded:
    """The totals of the batches a long run no longer holds one by one
    (``pipelines/sink/run_log.py``). A replayed batch counts as a batch, not in the counts."""

    batches: int = 0
    records_in: int = 0
    quarantined: int = 0
    inserted: int = 0
    event_dates: frozenset[date] = frozenset()

    def plus(self, batch: BatchMetrics) -> Folded:
        """These totals with ``batch`` folded in."""
        dates = self.event_dates | frozenset(batch.event_dates)
        if batch.replayed:
            return replace(self, batches=self.batches + 1, event_dates=dates)
        return Folded(self.batches + 1, self.records_in + batch.records_in,
                      self.quarantined + batch.quarantined, self.inserted + batch.inserted,
                      dates)


@dataclass(frozen=True)
class RunResult:
    """What one ``deltasink run`` did: its batches, and the partitions it touched.

    ``batches`` are the run's batches in commit order, or, for a run longer than
    ``run_log.KEPT_BATCHES`` batches, the newest of them, with the older ones' totals in
    ``folded``. The counts and ``event_dates`` cover the whole run either way.
    """

    pipeline: str
    run_id: str
    batches: tuple[BatchMetrics, ...]
    folded: Folded = Folded()

    @property
    def batch_count(self) -> int:
        """Batches this run committed or skipped as replays, the folded ones included."""
        return self.folded.batches + len(self.batches)

    @property
    def records_in(self) -> int:
        """Records read in this run (replays excluded)."""
        return self.folded.records_in + sum(b.records_in for b in self.batches if not b.replayed)

    @property
    def quarantined(self) -> int:
        """Records quarantined in this run (replays excluded)."""
        return self.folded.quarantined + sum(
            b.quarantined for b in self.batches if not b.replayed)

    @property
    def inserted(self) -> int:
        """Rows inserted into the target in this run."""
        return self.folded.inserted + sum(b.inserted for b in self.batches if not b.replayed)

    @property
    def event_dates(self) -> tuple[date, ...]:
        """The target partitions (event dates) this run wrote to, sorted."""
        return tuple(sorted(self.folded.event_dates.union(
            d for b in self.batches for d in b.event_dates)))
