"""The table's record of where input stopped: RESTORE-aware, replay-blind, read in a window."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.ledger import state
from pipelines.ledger.record import commit_metadata, mark_replay
from pipelines.sink.commit import txn
from pipelines.storage.tables import TableRef


def _commit(spark: SparkSession, ref: TableRef, batch_id: int, offset: int,
            app_id: str = "deltasink:p:q1", replay: bool = False) -> None:
    metadata = commit_metadata("p", app_id, batch_id, "run", {"t": {0: offset}})
    with txn(spark, app_id, batch_id, mark_replay(metadata) if replay else metadata):
        spark.range(batch_id, batch_id + 1).write.format("delta").mode("append").save(ref.path)


def _table(spark: SparkSession, lake: Path) -> TableRef:
    ref = TableRef(path=str(lake / "t"))
    spark.range(0).write.format("delta").save(ref.path)  # version 0
    return ref


def _version(spark: SparkSession, ref: TableRef) -> int:
    return int(TableRef(path=ref.path).history(spark, 1).first()["version"])  # type: ignore[index]


def test_offsets_ignore_commits_a_restore_undid(spark: SparkSession, lake: Path) -> None:
    ref = _table(spark, lake)
    for batch in range(1, 4):  # versions 1..3, offsets 10, 20, 30
        _commit(spark, ref, batch, batch * 10)
    spark.sql(f"RESTORE TABLE delta.`{ref.path}` TO VERSION AS OF 1")  # version 4
    assert state.recorded_offsets(spark, ref, "p") == {"t": {0: 10}}
    commits = state.sink_commits(spark, ref, "p")
    assert [(c.version, c.undone_by) for c in commits] == [(3, 4), (2, 4), (1, None)]
    # Delta keeps the txn version of undone commits: batch 2 of the same app id is skipped.
    _commit(spark, ref, 2, 99)
    assert _version(spark, ref) == 4
    assert state.txn_versions(commits) == {"deltasink:p:q1": 3}


def test_nested_and_timestamp_restores(spark: SparkSession, lake: Path) -> None:
    ref = _table(spark, lake)
    for batch in range(1, 4):  # versions 1..3
        _commit(spark, ref, batch, batch * 10)
    spark.sql(f"RESTORE TABLE delta.`{ref.path}` TO VERSION AS OF 1")  # 4
    _commit(spark, ref, 0, 40, app_id="deltasink:p:q2")  # 5
    when = TableRef(path=ref.path).history(spark).where("version = 2").first()
    assert when is not None
    spark.sql(f"RESTORE TABLE delta.`{ref.path}` TO TIMESTAMP AS OF '{when['timestamp']}'")  # 6
    assert state.recorded_offsets(spark, ref, "p") == {"t": {0: 20}}
    undone = {c.version: c.undone_by for c in state.sink_commits(spark, ref, "p")}
    assert undone == {5: 6, 3: 6, 2: None, 1: None}
    # The walk as the table stood at version 5 (used by rewind's plan).
    assert state.recorded_offsets(spark, ref, "p", as_of=5) == {"t": {0: 40}}


def test_replay_commits_never_move_the_offsets(spark: SparkSession, lake: Path) -> None:
    ref = _table(spark, lake)
    _commit(spark, ref, 1, 10)
    _commit(spark, ref, 0, 5, app_id="deltasink-replay:p:r1", replay=True)
    assert state.recorded_offsets(spark, ref, "p") == {"t": {0: 10}}
    found = state.find_commit(spark, ref, "deltasink-replay:p:r1", 0)
    assert found is not None and found.replay and found.version == 2


def test_the_window_widens_past_restores_and_other_writers(spark: SparkSession,
                                                           lake: Path) -> None:
    ref = _table(spark, lake)
    _commit(spark, ref, 1, 10)  # 1
    _commit(spark, ref, 2, 20)  # 2
    for i in range(5):  # 3..7: another writer
        spark.range(i, i + 1).write.format("delta").mode("append").save(ref.path)
    spark.sql(f"RESTORE TABLE delta.`{ref.path}` TO VERSION AS OF 1")  # 8, V below the window
    for i in range(3):  # 9..11
        spark.range(i, i + 1).write.format("delta").mode("append").save(ref.path)
    found = state.search(spark, ref, lambda c: c.undone_by is None, window=2)
    assert found is not None and found.version == 1
    hit = state.find_commit(spark, ref, "deltasink:p:q1", 2)
    assert hit is not None and hit.version == 2 and hit.undone_by == 8
    assert state.find_commit(spark, ref, "deltasink:p:q1", 7) is None


def test_history_limit_reads_only_the_newest_commits(spark: SparkSession, lake: Path) -> None:
    ref = _table(spark, lake)
    for batch in range(1, 4):
        _commit(spark, ref, batch, batch * 10)
    (Path(ref.path) / "_delta_log" / "00000000000000000001.json").write_text("not json\n")
    rows = TableRef(path=ref.path).history(spark, 2).collect()
    assert [r["version"] for r in rows] == [3, 2]  # version 1's broken file was never parsed
    with pytest.raises(Exception):  # while the full history does parse it
        TableRef(path=ref.path).history(spark).collect()


def test_search_looks_no_further_back_than_its_limit(spark: SparkSession, lake: Path) -> None:
    ref = _table(spark, lake)
    _commit(spark, ref, 1, 10, app_id="deltasink:p:mine")  # version 1
    for batch in range(1, 6):  # versions 2..6, another writer
        _commit(spark, ref, batch, batch, app_id="deltasink:p:other")
    mine = lambda c: c.app_id == "deltasink:p:mine"  # noqa: E731
    assert state.search(spark, ref, mine, window=2, limit=5) is None
    found = state.search(spark, ref, mine, window=2, limit=6)
    assert found is not None and found.version == 1


def test_a_table_not_created_yet_has_no_commits(spark: SparkSession, lake: Path) -> None:
    ref = TableRef(path=str(lake / "not_yet"))
    assert state.sink_commits(spark, ref) == []
    assert state.recorded_offsets(spark, ref, "p") is None


AUTO_COMPACT = "spark.databricks.delta.autoCompact.enabled"


def test_an_auto_compaction_is_not_a_batch_and_leaves_offsets_and_txn_as_they_were(
        spark: SparkSession, lake: Path) -> None:
    """Issue 46: Delta's auto-compaction compacts small files right after a commit.
    Its OPTIMIZE commit copies the batch's userMetadata but holds no txn action: the batches
    are each listed once, the offsets are the newest batch's, and a replay is still skipped."""
    ref = _table(spark, lake)
    enabled = spark.conf.get(AUTO_COMPACT, None)
    spark.conf.set(AUTO_COMPACT, "true")
    spark.conf.set(f"{AUTO_COMPACT[:-len('.enabled')]}.minNumFiles", "3")
    try:
        for batch in range(1, 5):
            _commit(spark, ref, batch, batch * 10)
    finally:
        spark.conf.unset(f"{AUTO_COMPACT[:-len('.enabled')]}.minNumFiles")
        if enabled is None:
            spark.conf.unset(AUTO_COMPACT)
        else:
            spark.conf.set(AUTO_COMPACT, enabled)
    history = TableRef(path=ref.path).history(spark).orderBy("version").collect()
    compactions = [r for r in history if r["operation"] == "OPTIMIZE"]
    assert compactions and all(r["userMetadata"] for r in compactions)  # the copy is there
    commits = state.sink_commits(spark, ref, "p")
    assert sorted(c.batch_id for c in commits) == [1, 2, 3, 4]
    assert all(c.version not in {r["version"] for r in compactions} for c in commits)
    assert state.recorded_offsets(spark, ref, "p") == {"t": {0: 40}}
    before = _version(spark, ref)
    _commit(spark, ref, 4, 99)  # a replay of the newest batch: Delta skips it
    assert _version(spark, ref) == before
    assert spark.read.format("delta").load(ref.path).count() == 4  # no row twice
