"""Commit bookkeeping, conflict retry and the fault hook (pure logic, thin fakes only)."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from pipelines.errors import CommitError
from pipelines.faults import should_crash
from pipelines.ledger.record import BATCH_KEY, app_id_for, commit_metadata, parse_commit_metadata
from pipelines.sink.commit import is_conflict, with_conflict_retry
from pipelines.sink.metrics import BatchMetrics, commit_counts


def test_commit_metadata_round_trips_offsets() -> None:
    text = commit_metadata("p", app_id_for("p", "q-1"), 4, "r1", {"orders": {1: 10, 0: 7}})
    body = parse_commit_metadata(text)
    assert body == {"pipeline": "p", "app_id": "deltasink:p:q-1", "batch_id": 4, "run_id": "r1",
                    "offsets": {"orders": {"0": 7, "1": 10}}}
    assert parse_commit_metadata('{"other": 1}') is None
    assert parse_commit_metadata("not json") is None
    assert parse_commit_metadata(None) is None


def test_commit_counts_round_trip_into_the_batch_metrics_row() -> None:
    started = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
    counts = commit_counts(query_id="q-1", records_in=100, quarantined=4,
                           duplicates_in_batch=6, unique=90, started_at=started,
                           event_dates=[date(2026, 11, 19), date(2026, 11, 20)],
                           stage_seconds={"dedup": 0.25})
    text = commit_metadata("p", app_id_for("p", "q-1"), 4, "r1", {"orders": {0: 7}}, counts)
    body = parse_commit_metadata(text)
    assert body is not None and body["offsets"] == {"orders": {"0": 7}}  # old keys kept

    metrics = BatchMetrics.from_commit("p", body["batch_id"], body["run_id"], body[BATCH_KEY],
                                       version=12, inserted=80,
                                       committed_at=started.timestamp() + 3.5)

    assert metrics == BatchMetrics(
        pipeline="p", run_id="r1", query_id="q-1", batch_id=4, records_in=100, quarantined=4,
        duplicates_in_batch=6, duplicates_by_merge=10, inserted=80, duration_s=3.5,
        started_at=started, replayed=False, target_version=12,
        event_dates=(date(2026, 11, 19), date(2026, 11, 20)), stage_seconds={"dedup": 0.25})
    # Delta's own MERGE time (operationMetrics.executionTimeMs) is the merge_commit stage.
    timed = BatchMetrics.from_commit("p", body["batch_id"], body["run_id"], body[BATCH_KEY],
                                     version=12, inserted=80, merge_seconds=1.25,
                                     committed_at=started.timestamp() + 3.5)
    assert timed.stage_seconds == {"dedup": 0.25, "merge_commit": 1.25}


def test_a_rerun_batch_says_so_through_its_commit_but_adds_no_metrics_column() -> None:
    """The retry's line reaches the client from the commit (a Connect worker's output does
    not), and the run metrics rows keep their columns."""
    started = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
    line = "batch 4: an executor was lost with the batch's blocks (x); re-running the batch"
    counts = commit_counts(query_id="q-1", records_in=10, quarantined=0, duplicates_in_batch=0,
                           unique=10, started_at=started, event_dates=[], stage_seconds={},
                           rerun=line)
    text = commit_metadata("p", app_id_for("p", "q-1"), 4, "r1", {"orders": {0: 7}}, counts)
    body = parse_commit_metadata(text)
    assert body is not None
    metrics = BatchMetrics.from_commit("p", 4, "r1", body[BATCH_KEY], version=3, inserted=10,
                                       committed_at=started.timestamp() + 1)
    assert metrics.rerun == line
    assert "rerun" not in metrics.as_row()
    plain = BatchMetrics.from_commit("p", 4, "r1", {**body[BATCH_KEY], "rerun": None},
                                     version=3, inserted=10,
                                     committed_at=started.timestamp() + 1)
    assert plain.rerun is None

def test_app_id_changes_with_the_query_id() -> None:
    assert app_id_for("p", "q-1") != app_id_for("p", "q-2")


class ConcurrentAppendException(Exception):
    """Stands in for Delta's exception (only its name matters to the classifier)."""


def test_conflicts_are_retried_then_succeed() -> None:
    calls: list[int] = []

    def action() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise ConcurrentAppendException("Files were added to partition [event_date=...]")
        return "done"

    sleeps: list[float] = []
    assert with_conflict_retry(action, retries=5, what="m", sleep=sleeps.append) == "done"
    assert len(calls) == 3 and len(sleeps) == 2


def test_retries_run_out_with_a_clear_error() -> None:
    def action() -> None:
        raise ConcurrentAppendException("conflict")

    with pytest.raises(CommitError, match=r"still conflicting .* after 2 retries"):
        with_conflict_retry(action, retries=2, what="MERGE into t", sleep=lambda _s: None)
    with pytest.raises(CommitError, match=r"retries; the data is committed\.$"):
        with_conflict_retry(action, retries=0, what="recording", sleep=lambda _s: None,
                            aftermath="the data is committed.")


def test_other_errors_are_not_retried() -> None:
    calls: list[int] = []

    def action() -> None:
        calls.append(1)
        raise ValueError("boom")

    with pytest.raises(ValueError):
        with_conflict_retry(action, retries=5, what="m", sleep=lambda _s: None)
    assert len(calls) == 1
    assert is_conflict(RuntimeError("[DELTA_CONCURRENT_APPEND] ..."))
    assert not is_conflict(RuntimeError("disk full"))


def test_fault_spec_matches_points_and_batches() -> None:
    assert should_crash("after_target_commit", 0, "after_target_commit")
    assert should_crash("after_target_commit", 2, "before_target_commit,after_target_commit@2")
    assert not should_crash("after_target_commit", 1, "after_target_commit@2")
    assert not should_crash("after_target_commit", 1, None)
