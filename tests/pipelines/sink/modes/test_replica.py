"""``target.mode: upsert`` on a change stream: the target is the source table's replica."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.errors import SchemaError
from pipelines.sink.metrics import BatchMetrics
from quality.validate import validate_table
from tests.support.change_events import Change, batches, history, records, replica
from tests.support.change_sinks import change_sink, new_sink, replica_state
from tests.support.debezium_corpus import corpus, kafka_rows
from tests.support.topic_records import TopicRecord


@pytest.mark.extended
def test_the_corpus_lands_as_the_table_it_came_from_then_its_truncate_empties_it(
        spark: SparkSession, lake: Path) -> None:
    seen: list[BatchMetrics] = []
    cfg, sink = change_sink(spark, lake, "upsert", seen, schema={"fields": {"ratio": "numeric"}})
    types = corpus("types.schemas-on")
    sink(kafka_rows(spark, types[:9]), 0)  # snapshot, insert, update, delete, re-insert, ...
    rows = {r["id"]: r.asDict() for r in cfg.target.ref.read(spark).collect()}
    assert sorted(rows) == [1, 2, 3, 5]  # 5: created and updated in one transaction, so far
    assert (rows[1]["name"], str(rows[1]["price"]), rows[2]["name"]) == ("updated", "0.00",
                                                                        "again")
    assert rows[3]["ratio"] == "0.00000000000000000001" and rows[5]["name"] == "changed in it"
    assert seen[-1].skipped == 1 and seen[-1].quarantined == 0  # the delete's tombstone
    sink(kafka_rows(spark, types[9:], 9), 1)  # delete, a key update, columns added, truncate
    assert cfg.target.ref.read(spark).count() == 0
    assert seen[-1].skipped == 2 and seen[-1].quarantined == 0
    assert "added" in cfg.target.ref.read(spark).columns  # a column added mid-stream
    gone = {r["id"] for r in cfg.target.deletes_ref.read(spark).collect()}
    assert gone == {3, 5, None}  # the deleted keys, and the truncate (no key)


def test_resent_changes_and_a_snapshot_taken_again_change_nothing_and_no_late_change_resurrects(
        spark: SparkSession, lake: Path) -> None:
    seen: list[BatchMetrics] = []
    cfg, sink = change_sink(spark, lake, "upsert", seen)
    first = [Change("r", 1, 10, "a", 1), Change("r", 2, 10, "b", 2), Change("r", 3, 10, "c", 3)]
    then = [Change("u", 1, 20, "a2", 1), Change("d", 2, 30), Change("c", 4, 40, "d", 4)]
    sink(kafka_rows(spark, records(first)), 0)
    sink(kafka_rows(spark, records(then), 10), 1)
    want = {1: ("a2", 1), 3: ("c", 3), 4: ("d", 4)}
    assert replica_state(spark, cfg) == want
    sink(kafka_rows(spark, records(then), 20), 2)  # Connect killed: the same, at new offsets
    assert (seen[-1].inserted, seen[-1].updated) == (0, 0) and not seen[-1].replayed
    again = [Change("r", 1, 50, "a2", 1), Change("r", 3, 50, "c", 3), Change("r", 4, 50, "d", 4)]
    sink(kafka_rows(spark, records(again), 30), 3)  # no offsets flushed: the snapshot again
    assert (seen[-1].inserted, seen[-1].updated) == (0, 0)
    sink(kafka_rows(spark, records([Change("c", 2, 5, "old", 0)]), 40), 4)  # older than its d
    assert replica_state(spark, cfg) == want
    sink(kafka_rows(spark, records([Change("c", 2, 60, "back", 9)]), 50), 5)  # newer: back
    assert replica_state(spark, cfg) == {**want, 2: ("back", 9)}
    sink(kafka_rows(spark, records(then), 10), 1)  # the same batch again: the txn skips it
    assert seen[-1].replayed
    report = validate_table(spark, cfg)  # the whole table: one row per key
    assert report.success and ("expect_column_values_to_be_unique", "id") in {
        (r.expectation, r.column) for r in report.results}, report.summary_lines()


@pytest.mark.extended
def test_a_batch_whose_deletes_committed_before_a_crash_lands_the_same_when_run_again(
        spark: SparkSession, lake: Path) -> None:
    seen: list[BatchMetrics] = []
    commits: list[int] = []

    def crash_before_the_replica_commit(_s: SparkSession, batch_id: int) -> None:
        commits.append(batch_id)
        if commits.count(1) == 2:  # batch 1's deletes committed, its replica commit next
            raise RuntimeError("killed between the deletes and the replica commit")

    cfg, sink = change_sink(spark, lake, "upsert", seen, guard=crash_before_the_replica_commit)
    sink(kafka_rows(spark, records([Change("r", 1, 10, "a", 1), Change("r", 2, 10, "b", 2)])),
         0)
    later = [Change("d", 1, 20), Change("u", 2, 30, "b2", 2), Change("t", None, 40),
             Change("c", 3, 50, "c", 3)]
    with pytest.raises(RuntimeError, match="killed"):
        sink(kafka_rows(spark, records(later), 10), 1)
    assert len(cfg.target.deletes_ref.read(spark).collect()) == 2  # the delete and the truncate
    assert replica_state(spark, cfg) == {1: ("a", 1), 2: ("b", 2)}  # the replica untouched
    new_sink(cfg, seen)(kafka_rows(spark, records(later), 10), 1)  # the restart runs it again
    assert replica_state(spark, cfg) == {3: ("c", 3)}


@pytest.mark.extended
def test_any_batching_of_a_tables_life_with_replays_converges_to_the_table(
        spark: SparkSession, lake: Path) -> None:
    rng = random.Random(61)
    life = history(6, 6, rng)
    cfg, sink = change_sink(spark, lake, "upsert", [])
    sent = records(life)
    resent = sent + sent[len(sent) // 3:]  # Connect killed once: a third of it sent again
    for batch_id, chunk in enumerate(batches(resent, 25)):
        sink(kafka_rows(spark, chunk, batch_id * 25), batch_id)
    assert replica_state(spark, cfg) == replica(life)


def widened(changes: list[Change]) -> list[TopicRecord]:
    """The changes' records after ``ALTER TABLE items ALTER COLUMN qty TYPE bigint``."""
    narrow = '{"type":"int32","optional":true,"field":"qty"}'
    wide = '{"type":"int64","optional":true,"field":"qty"}'
    return [TopicRecord(r.key, None if r.value is None else r.value.replace(narrow, wide),
                        r.topic, r.partition, r.offset) for r in records(changes)]


@pytest.mark.extended
def test_a_column_widened_in_the_database_is_widened_in_place_or_stops_the_run_in_one_line(
        spark: SparkSession, lake: Path) -> None:
    (lake / "strict").mkdir()
    cfg, sink = change_sink(spark, lake / "strict", "upsert", [])
    sink(kafka_rows(spark, records([Change("r", 1, 10, "a", 1)])), 0)
    late = widened([Change("u", 1, 20, "a", 2**40)])
    with pytest.raises(SchemaError, match=r"delta\.enableTypeWidening: true") as refused:
        sink(kafka_rows(spark, late, 10), 1)
    assert "\n" not in str(refused.value) and "'qty'" in str(refused.value)
    (lake / "widening").mkdir()
    cfg, sink = change_sink(spark, lake / "widening", "upsert", [],
                            target={"properties": {"delta.enableTypeWidening": "true"}})
    sink(kafka_rows(spark, records([Change("r", 1, 10, "a", 1)])), 0)
    sink(kafka_rows(spark, late, 10), 1)
    assert replica_state(spark, cfg) == {1: ("a", 2**40)}
    assert cfg.target.ref.read(spark).schema["qty"].dataType.simpleString() == "bigint"


def test_the_replicas_change_feed_holds_each_insert_update_and_delete_once(
        spark: SparkSession, lake: Path) -> None:
    """With ``delta.enableChangeDataFeed`` (``target.properties``, issue 62) a replica's feed is
    the source table's changes: an update as its pre- and post-image, a delete as a delete; a
    change Debezium sends again, and a batch Spark replays, add no change rows."""
    seen: list[BatchMetrics] = []
    cfg, sink = change_sink(spark, lake, "upsert", seen,
                            target={"properties": {"delta.enableChangeDataFeed": True}})
    sink(kafka_rows(spark, records([Change("r", 1, 10, "a", 1), Change("r", 2, 10, "b", 2)])),
         0)
    then = [Change("u", 1, 20, "a2", 1), Change("d", 2, 30), Change("c", 3, 40, "c", 3)]
    sink(kafka_rows(spark, records(then), 10), 1)
    sink(kafka_rows(spark, records(then), 20), 2)  # sent again, at new offsets
    sink(kafka_rows(spark, records(then), 10), 1)  # the same batch replayed: skipped
    assert seen[-1].replayed
    rows = (spark.read.format("delta").option("readChangeFeed", "true")
            .option("startingVersion", 0).load(cfg.target.path)
            .select("id", "name", "_change_type", "_commit_version").collect())
    by_version: dict[int, set[tuple[str, int, str]]] = {}
    for r in rows:
        by_version.setdefault(r["_commit_version"], set()).add(
            (r["_change_type"], r["id"], r["name"]))
    assert len(rows) == 6 and list(dict(sorted(by_version.items())).values()) == [
        {("insert", 1, "a"), ("insert", 2, "b")},  # batch 0's version
        {("update_preimage", 1, "a"), ("update_postimage", 1, "a2"), ("delete", 2, "b"),
         ("insert", 3, "c")}]  # batch 1's; the re-send and the replay: no change rows
