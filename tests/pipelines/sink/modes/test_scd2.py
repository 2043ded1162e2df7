"""``target.mode: scd2``: every version of each key, the same whatever the order of arrival."""

from __future__ import annotations

import datetime as dt
import json
import random
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.sink.metrics import BatchMetrics
from quality.validate import validate_table
from tests.support.change_events import Change, batches, history, records, versions
from tests.support.change_sinks import change_sink, history_state
from tests.support.configs import make_config
from tests.support.debezium_corpus import corpus, kafka_rows


@pytest.mark.extended
def test_the_corpus_becomes_the_tables_history_version_for_version(
        spark: SparkSession, lake: Path) -> None:
    seen: list[BatchMetrics] = []
    cfg, sink = change_sink(spark, lake, "scd2", seen, schema={"fields": {"ratio": "numeric"}})
    types = corpus("types.schemas-on")
    sink(kafka_rows(spark, types[:9]), 0)
    sink(kafka_rows(spark, types[9:], 9), 1)
    rows = cfg.target.ref.read(spark).orderBy("id", "__START_AT").collect()
    got = [(r["id"], r["name"], r["_op"], r["__END_AT"] is None) for r in rows]
    assert got == [(1, "Zoë 😀", "r", False), (1, "updated", "u", False),
                   (2, None, "r", False), (2, "again", "c", False), (3, "", "c", False),
                   (4, None, "c", False), (4, None, "u", False),  # a column added, one dropped
                   (5, "in one transaction", "c", False), (5, "changed in it", "u", False),
                   (6, "", "c", False)]  # the truncate closed every open version
    assert rows[0]["__END_AT"] == rows[1]["__START_AT"]  # versions follow each other
    end = {r["__END_AT"] for r in rows if r["id"] in (1, 2, 4, 6)} - {
        rows[0]["__END_AT"], rows[2]["__END_AT"], rows[5]["__END_AT"]}
    assert len(end) == 1  # ... at the truncate's position
    def state() -> list[tuple[object, ...]]:
        return sorted((r["id"], r["__START_AT"], r["__END_AT"], r["name"])
                      for r in cfg.target.ref.read(spark).collect())

    before = state()
    sink(kafka_rows(spark, types, 100), 2)  # everything sent again, at higher offsets
    assert state() == before
    assert (seen[-1].inserted, seen[-1].updated, seen[-1].deleted) == (0, 0, 0)


@pytest.mark.extended
def test_any_order_of_arrival_and_replays_give_the_same_history(
        spark: SparkSession, lake: Path) -> None:
    rng = random.Random(7)
    life = [*history(3, 4, rng), Change("t", None, 10_000), Change("c", 1, 10_050, "x", 1)]
    want = versions(life)
    cfg, sink = change_sink(spark, lake, "scd2", [])
    shuffled = records(life)
    rng.shuffle(shuffled)  # no real stream arrives so: the history must not care
    for batch_id, chunk in enumerate(batches(shuffled + shuffled[:9], 14)):
        sink(kafka_rows(spark, chunk, 100 * batch_id), batch_id)
    assert history_state(spark, cfg) == want


def test_a_change_of_untracked_columns_adds_no_version_it_updates_the_open_one(
        spark: SparkSession, lake: Path) -> None:
    cfg, sink = change_sink(spark, lake, "scd2", [], target={"track_history": ["name"]})
    changes = [Change("c", 1, 10, "a", 1), Change("u", 1, 20, "a", 2), Change("u", 1, 30, "b", 3),
               Change("u", 1, 40, "b", 4)]
    sink(kafka_rows(spark, records(changes)), 0)
    assert history_state(spark, cfg) == [(1, "a", 2, 10, 30), (1, "b", 4, 30, None)]


def test_the_quality_suite_proves_a_history_and_fails_a_second_open_version(
        spark: SparkSession, lake: Path) -> None:
    cfg, sink = change_sink(spark, lake, "scd2", [])
    sink(kafka_rows(spark, records([Change("c", 1, 10, "a", 1), Change("u", 1, 20, "b", 1),
                                    Change("c", 2, 15, "x", 2)])), 0)
    report = validate_table(spark, cfg)
    checked = {(r.expectation, r.column) for r in report.results}
    assert report.success, report.summary_lines()
    assert ("expect_compound_columns_to_be_unique", "id,__END_AT") in checked
    assert ("expect_history_intervals_not_to_overlap", "__START_AT,__END_AT") in checked
    spark.sql(f"UPDATE {cfg.target.ref.sql} SET __END_AT = NULL WHERE id = 1")  # two open
    failed = {r.expectation for r in validate_table(spark, cfg).results if not r.success}
    assert failed == {"expect_compound_columns_to_be_unique",
                      "expect_history_intervals_not_to_overlap"}


def event(key: str, seq: int, deleted: bool = False) -> bytes:
    when = dt.datetime(2026, 3, 1, tzinfo=dt.UTC) + dt.timedelta(hours=seq)
    return json.dumps({"event_id": key, "event_type": "deleted" if deleted else "upserted",
                       "event_time": when.isoformat().replace("+00:00", "Z"),
                       "payload": {"v": seq}}).encode()


@pytest.mark.extended
def test_an_event_topic_keeps_its_history_by_sequence_by_in_any_order(
        spark: SparkSession, lake: Path) -> None:
    from pipelines.sink.batch import BatchSink
    from pipelines.sink.tables import ensure_sink_tables
    cfg = make_config(lake, "127.0.0.1:9", "orders", target={
        "mode": "scd2", "sequence_by": "event_time", "delete_when": "event_type = 'deleted'"})
    ensure_sink_tables(spark, cfg, cfg.event_schema())
    sink = BatchSink(cfg, cfg.event_schema(), "run", lambda _s: "q",
                     lambda _s, b: {"orders": {0: 10 * (b + 1)}})
    values = [event("a", 3), event("a", 1), event("a", 2, deleted=True), event("a", 5),
              event("a", 1), event("b", 4)]
    stamp = dt.datetime(2026, 3, 2)
    frame = spark.createDataFrame(
        [(None, v, "orders", 0, i, stamp, 0) for i, v in enumerate(values)],
        "key binary, value binary, topic string, partition int, offset long, "
        "timestamp timestamp, timestampType int")
    sink(frame.where("offset < 3"), 0)
    sink(frame.where("offset >= 3"), 1)
    rows = cfg.target.ref.read(spark).orderBy("event_id", "__START_AT").collect()
    got = [(r["event_id"], r["__START_AT"].hour, None if r["__END_AT"] is None
            else r["__END_AT"].hour) for r in rows]
    # a@1, deleted at 2, back at 3, changed at 5 (a@1 twice is one change); b@4
    assert got == [("a", 1, 2), ("a", 3, 5), ("a", 5, None), ("b", 4, None)], got
