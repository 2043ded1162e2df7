"""bench.warm_batch: a batch's records and seconds from its commit; only whole, warm rounds."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from bench.plain_stream import PREFIX, parse
from bench.warm_batch import CommitReader, batch_commit, seconds
from pipelines.ledger.record import commit_metadata
from pipelines.sink.metrics import commit_counts


def _commit(started: float, committed: float, records: int, operation: str = "MERGE") -> str:
    counts = commit_counts(query_id="q", records_in=records, quarantined=0,
                           duplicates_in_batch=0, unique=records,
                           started_at=datetime.fromtimestamp(started, UTC), event_dates=[],
                           stage_seconds={"read_parse": 0.25})
    info = {"operation": operation, "timestamp": int(committed * 1000),
            "operationMetrics": {"executionTimeMs": "500"},
            "userMetadata": commit_metadata("p", "deltasink:p:q", 1, "r", {"t": {0: records}},
                                            counts)}
    return json.dumps({"commitInfo": info}) + "\n" + json.dumps({"add": {"path": "x"}}) + "\n"


def test_a_batch_commit_gives_its_records_and_seconds_and_a_compaction_none() -> None:
    assert batch_commit(_commit(100.0, 101.5, 5000)) == {
        "rows": 5000, "duration_s": 1.5, "read_parse": 0.25, "merge": 0.5}
    assert batch_commit(_commit(100.0, 101.5, 5000, "OPTIMIZE")) is None
    assert batch_commit(json.dumps({"commitInfo": {"operation": "CREATE TABLE"}})) is None


def test_the_reader_picks_up_commits_as_they_appear(tmp_path: Path) -> None:
    log = tmp_path / "_delta_log"
    log.mkdir()
    (log / f"{0:020d}.json").write_text(json.dumps({"commitInfo": {"operation": "CREATE"}}))
    reader = CommitReader(tmp_path)
    assert reader() == []
    (log / f"{1:020d}.json").write_text(_commit(10.0, 12.0, 7))
    assert [(b["version"], b["rows"]) for b in reader()] == [(1, 7)]
    assert len(reader()) == 1  # read once


def test_only_whole_rounds_after_the_warm_up_count() -> None:
    side = {"plan": {"events": 10, "warm": 1},
            "rounds": [[{"rows": 10, "s": 9.0}],  # warm-up
                       [{"rows": 10, "s": 1.0}],
                       [{"rows": 4, "s": 0.5}, {"rows": 6, "s": 0.6}],  # a split round
                       [{"rows": 10, "s": 2.0}]]}
    assert seconds(side, "s") == [1.0, 2.0]


def test_the_plain_streams_lines_are_read_once_per_batch_in_order() -> None:
    text = "\n".join([f"{PREFIX}{json.dumps({'batch': 2, 'rows': 5})}", "some log line",
                      f"{PREFIX}{json.dumps({'batch': 1, 'rows': 3})}",
                      f"{PREFIX}{json.dumps({'batch': 2, 'rows': 5})}"])
    assert [(b["batch"], b["rows"]) for b in parse(text)] == [(1, 3), (2, 5)]
