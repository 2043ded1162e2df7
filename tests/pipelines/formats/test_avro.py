"""pipelines.formats.avro through parse.classify: the wire-format split, schema versions mapped
onto the declared fields by name, and a reason for every record that cannot be decoded."""

from __future__ import annotations

import datetime as dt

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.formats.avro import AvroDecoder, WriterSchemas, is_wire_format, schema_id
from pipelines.sink.parse import classify, valid_events
from schemas.loader import schema_from_mapping
from tests.support.clicks import DECLARED, V1, V2, click, wire

SCHEMA = schema_from_mapping(DECLARED)
BOTH = WriterSchemas(by_id={1: V1, 2: V2, 3: '"string"'})


def kafka_rows(spark: SparkSession, values: list[bytes | None]) -> DataFrame:
    now = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
    rows = [(None, v, "clicks", 0, i, now, 0) for i, v in enumerate(values)]
    return spark.createDataFrame(
        rows, "key binary, value binary, topic string, partition int, offset long, "
              "timestamp timestamp, timestampType int")


def classified(spark: SparkSession, values: list[bytes | None],
               schemas: WriterSchemas = BOTH) -> DataFrame:
    return classify(kafka_rows(spark, values), SCHEMA, 10_000, decoder=AvroDecoder(schemas))


def test_the_wire_format_splits_into_magic_byte_and_big_endian_schema_id(
        spark: SparkSession) -> None:
    values = [b"\x00\x00\x01\x02\x03rest", b"\x00\x00\x00\x00", b"\x01\x00\x00\x00\x07x", None]
    rows = kafka_rows(spark, values).select(
        is_wire_format(F.col("value")).alias("wire"), schema_id(F.col("value")).alias("id")
    ).collect()
    assert [(r["wire"], r["id"]) for r in rows[:3]] == [
        (True, 0x010203), (False, 0), (False, 7)]
    assert rows[3]["wire"] is None


def test_two_writer_versions_land_on_the_declared_fields_by_name(spark: SparkSession) -> None:
    values = [wire(1, V1, click(1)), wire(2, V2, click(2, coupon="SPRING")),
              wire(2, V2, click(3))]
    rows = valid_events(classified(spark, values), SCHEMA).orderBy("event_id").collect()
    assert [(r["event_id"], r["user"], r["amount"], r["coupon"]) for r in rows] == [
        ("c-1", "u-1", 0.25, None), ("c-2", "u-2", 0.5, "SPRING"), ("c-3", "u-3", 0.75, None)]
    assert rows[0]["ts"] == dt.datetime(2026, 3, 1, 12, 0, 1)  # timestamp-millis, UTC session
    assert rows[0]["event_date"] == dt.date(2026, 3, 1)


def test_each_undecodable_record_gets_its_avro_reason(spark: SparkSession) -> None:
    good = wire(1, V1, click(1))
    values = [
        b'{"event_id": "c-9"}',          # JSON, not the wire format
        b"\x00\x00\x00",                 # too short for a schema id
        b"\x00\x00\x00\x00\x2a" + good[5:],  # id 42: not registered
        good[:9],                        # truncated Avro binary
        wire(3, '"string"', "not a record"),  # a schema that is no record
        wire(1, V1, click(5, coupon=None) | {"user": ""}),  # decodes, fails a field check
        None,
    ]
    out = classified(spark, values).orderBy("kafka_offset").select("_reason").collect()
    assert [r["_reason"] for r in out] == [
        "avro: not Confluent wire format", "avro: not Confluent wire format",
        "avro: unknown schema id 42", "avro: undecodable", "avro: undecodable", "empty:user",
        "tombstone"]


def test_a_schema_file_decodes_every_schema_id(spark: SparkSession) -> None:
    values = [wire(7, V1, click(1)), wire(99, V1, click(2)), b"\x00\x00\x00\x00\x07\xff"]
    out = classified(spark, values, WriterSchemas(file_schema=V1)).orderBy("kafka_offset")
    assert [r["_reason"] for r in out.select("_reason").collect()] == [
        None, None, "avro: undecodable"]
