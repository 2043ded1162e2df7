"""Debezium's real messages (tests/data/debezium/) decoded: every logical type, every op, and a
reason for every record that cannot become a change."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from pipelines.config.model import PipelineConfig
from pipelines.formats.debezium.records import ChangeRecords
from tests.support.configs import change_stream_config
from tests.support.debezium_corpus import (
    EDGE_ROW,
    FULL_ROW,
    TYPES_PINNED,
    corpus,
    kafka_rows,
    plain,
)
from tests.support.topic_records import TopicRecord

Rows = dict[int, dict[str, Any]]


def config(folder: Path, **extra: Any) -> PipelineConfig:
    return change_stream_config(folder, **extra)


def classified(spark: SparkSession, cfg: PipelineConfig, records: list[TopicRecord]) -> Rows:
    """Each record's change row, by offset."""
    frame = ChangeRecords(cfg).classify(kafka_rows(spark, records), 1_048_576)
    return {r["kafka_offset"]: r.asDict() for r in frame.collect()}


@pytest.fixture(scope="module")
def schemas_on(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Rows:
    cfg = config(tmp_path_factory.mktemp("on"), schema={"fields": {"ratio": "string"}})
    return classified(spark, cfg, corpus("types.schemas-on"))


@pytest.fixture(scope="module")
def schemas_off(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Rows:
    return classified(spark, config(tmp_path_factory.mktemp("off"), schema=TYPES_PINNED),
                      corpus("types.schemas-off"))


def same(got: Any, want: Any) -> bool:
    got = plain(got)
    if isinstance(want, float) and math.isnan(want):
        return isinstance(got, float) and math.isnan(got)
    return bool(got == want) and type(got) is type(want)


@pytest.mark.parametrize("column", sorted(FULL_ROW))
def test_every_logical_type_lands_as_its_spark_value_with_schemas_on(
        schemas_on: Rows, column: str) -> None:
    assert same(schemas_on[0][column], FULL_ROW[column]), schemas_on[0][column]
    assert same(schemas_on[2][column], EDGE_ROW[column]), schemas_on[2][column]
    assert schemas_on[0]["_reason"] is None and schemas_on[2]["_reason"] is None


@pytest.mark.parametrize("column", sorted(FULL_ROW))
def test_every_pinned_type_lands_the_same_value_with_schemas_off(
        schemas_off: Rows, column: str) -> None:
    assert same(schemas_off[0][column], FULL_ROW[column]), schemas_off[0][column]
    assert same(schemas_off[2][column], EDGE_ROW[column]), schemas_off[2][column]


def test_a_row_of_nulls_lands_as_nulls(schemas_on: Rows) -> None:
    row = schemas_on[1]
    assert row["_reason"] is None and row["id"] == 2
    assert all(row[c] is None for c in FULL_ROW if c != "id")


def test_ops_flags_and_the_tombstones_that_are_skipped_not_quarantined(
        schemas_on: Rows, schemas_off: Rows) -> None:
    for rows in (schemas_on, schemas_off):
        assert [rows[o]["_op"] for o in range(17)] == [
            "r", "r", "c", "u", "d", None, "c", "c", "u", "d", None, "d", None, "c", "c", "u", "t"]
        assert [o for o, r in rows.items() if r["_reason"] is not None] == [5, 10, 12]
        assert {rows[o]["_reason"] for o in (5, 10, 12)} == {"skip:tombstone"}
        assert [o for o, r in rows.items() if r["_deleted"]] == [4, 9, 11]
        assert [o for o, r in rows.items() if r["_truncate"]] == [16]
        assert rows[16]["id"] is None and rows[4]["id"] == 2  # a delete keeps its key


def test_positions_order_a_keys_changes_and_a_snapshot_shares_one(schemas_on: Rows) -> None:
    position = {o: r["_position"] for o, r in schemas_on.items() if r["_reason"] is None}
    assert position[0] == position[1]  # the snapshot's rows: one LSN
    streamed = [position[o] for o in (2, 3, 4, 6, 7, 8, 9, 11, 14, 15, 16)]
    assert streamed == sorted(streamed) and position[2] > position[0]
    assert position[11] == position[13]  # a primary-key update: d of 3 and c of 6, one LSN
    assert schemas_on[14]["added"] == "a new column"  # a column added mid-stream
    assert schemas_on[15]["small"] is None  # ... and one dropped


def test_a_numeric_without_precision_that_does_not_fit_is_quarantined_not_rounded(
        spark: SparkSession, tmp_path: Path) -> None:
    rows = classified(spark, config(tmp_path), corpus("types.schemas-on")[:3])
    assert str(rows[0]["ratio"]) == "3.141592653589790000"  # decimal(38,18), exact
    assert rows[2]["_reason"] == "out_of_range:ratio"  # 1e-20 would round to 0


def test_an_unsent_toasted_value_is_marked_unchanged_and_a_full_identity_delete_keeps_its_row(
        spark: SparkSession, tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    (tmp_path / "f").mkdir()
    toasted = classified(spark, config(tmp_path / "t"), corpus("toasted.schemas-on"))
    assert len(toasted[0]["body"]) == 4000 and toasted[0]["_unchanged"] == []
    assert toasted[1]["body"] is None and toasted[1]["_unchanged"] == ["body"]
    assert toasted[1]["n"] == 2
    full = classified(spark, config(tmp_path / "f"), corpus("full_identity.schemas-on"))
    assert [full[o]["_op"] for o in range(3)] == ["r", "u", "d"]
    assert (str(full[1]["price"]), str(full[2]["price"]), full[2]["name"]) == \
        ("2.25", "2.25", "one")


def broken(records: list[TopicRecord]) -> list[TopicRecord]:
    """Records no change can come from, each after a good one (its schema learned)."""
    good = records[3]  # an update of row 1
    envelope = json.loads(good.value or "")
    body = envelope["payload"]

    def with_payload(**changes: Any) -> str:
        return json.dumps({**envelope, "payload": {**body, **changes}})

    def record(value: str | None, key: str | None = good.key) -> TopicRecord:
        return TopicRecord(key, value, good.topic, 0, 0)

    price = next(f for f in body["after"] if f == "price")
    return [good,
            record(with_payload(op="x")),
            record(with_payload(op=None)),
            record(with_payload(after=None)),
            record(with_payload(after={**body["after"], price: "!!not base64"})),
            record(with_payload(source={**body["source"], "lsn": None})),
            record(good.value, key=None),
            record(good.value, key="{not json"),
            record(json.dumps(body)),  # schemas off, and no schema.fields
            record("{not json")]


def test_every_record_that_cannot_be_a_change_gets_its_reason(
        spark: SparkSession, tmp_path: Path) -> None:
    rows = classified(spark, config(tmp_path), broken(corpus("types.schemas-on")))
    assert [rows[o]["_reason"] for o in range(len(rows))] == [
        None, "debezium: unknown op x", "debezium: not a change event (no op)",
        "debezium: u without after", "bad_value:price", "debezium: no source position",
        "missing:kafka.key", "invalid_json:kafka.key",
        "debezium: no schema (the JSON converter's schemas.enable=false): pin the columns in "
        "schema.fields", "invalid_json"]
