"""bench.latency: a continuous batch's parts, read from the commit the sink writes."""

from __future__ import annotations

from datetime import UTC, datetime

from bench.latency import stage_figures
from bench.probes import batch_timing
from pipelines.ledger.record import commit_metadata
from pipelines.sink.metrics import commit_counts


def _commit_info(started: float, committed: float, read_parse: float, merge_ms: int,
                 ) -> dict[str, object]:
    """A target commit's ``commitInfo`` as the sink writes it (its real userMetadata)."""
    counts = commit_counts(query_id="q", records_in=10, quarantined=0, duplicates_in_batch=0,
                           unique=10, started_at=datetime.fromtimestamp(started, UTC),
                           event_dates=[], stage_seconds={"read_parse": read_parse})
    return {"operation": "MERGE", "timestamp": int(committed * 1000),
            "operationMetrics": {"executionTimeMs": str(merge_ms)},
            "userMetadata": commit_metadata("p", "deltasink:p:q", 1, "r", {"t": {0: 10}},
                                            counts)}


def test_a_batch_commit_gives_its_start_commit_and_stage_seconds() -> None:
    timing = batch_timing(_commit_info(100.0, 104.5, 1.25, 2_000))
    assert timing == {"start": 100.0, "committed": 104.5, "read_parse": 1.25, "merge": 2.0}


def test_a_commit_of_another_writer_or_a_compaction_gives_no_timing() -> None:
    compaction = {**_commit_info(100.0, 104.5, 1.25, 2_000), "operation": "OPTIMIZE"}
    assert batch_timing(compaction) == {}  # it carries the batch's userMetadata, copied
    assert batch_timing({"operation": "WRITE", "timestamp": 1}) == {}
    assert batch_timing({"userMetadata": "not json"}) == {}


def test_the_parts_split_each_batch_and_the_idle_time_between_batches() -> None:
    commits = [batch_timing(_commit_info(100.0, 104.0, 1.0, 2_000)),
               batch_timing(_commit_info(104.5, 110.5, 2.0, 3_000))]
    parts = stage_figures(commits)
    assert parts["batch"] == {"median": 5.0, "max": 6.0}
    assert parts["merge"] == {"median": 2.5, "max": 3.0}
    assert parts["other"] == {"median": 1.0, "max": 1.0}  # 4-1-2 and 6-2-3
    assert parts["idle"] == {"median": 0.5, "max": 0.5}  # one gap: 104.0 -> 104.5
