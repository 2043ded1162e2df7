"""A change's source position: Postgres LSN, MySQL binlog file/pos/row, else time then Kafka."""

from __future__ import annotations

import json

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipelines.formats.debezium.position import position


def positions(spark: SparkSession, sources: list[dict[str, object]]) -> list[int | None]:
    rows = [(json.dumps(s), 0, 100 + i) for i, s in enumerate(sources)]
    frame = spark.createDataFrame(rows, "source string, partition int, offset long")
    out = frame.select(position(F.parse_json("source"), F.col("partition"),
                                F.col("offset")).alias("p"))
    return [None if r["p"] is None else int(r["p"]) for r in out.collect()]


def test_postgres_orders_by_lsn_and_a_resent_change_keeps_its_position(
        spark: SparkSession) -> None:
    got = positions(spark, [{"connector": "postgresql", "lsn": 26424456, "ts_ms": 9},
                            {"connector": "postgresql", "lsn": 26424456, "ts_ms": 9},
                            {"connector": "postgresql", "lsn": 26424776, "ts_ms": 1},
                            {"connector": "postgresql", "ts_ms": 1}])
    assert got == [26424456, 26424456, 26424776, None]  # the Kafka offset plays no part


def test_mysql_orders_by_binlog_file_then_position_then_row(spark: SparkSession) -> None:
    got = positions(spark, [{"connector": "mysql", "file": "mysql-bin.000003", "pos": 900,
                             "row": 1},
                            {"connector": "mysql", "file": "mysql-bin.000003", "pos": 900,
                             "row": 0},
                            {"connector": "mysql", "file": "mysql-bin.000004", "pos": 4},
                            {"connector": "mysql", "file": "mysql-bin.000003", "pos": 7000}])
    assert got[1] < got[0] < got[3] < got[2]


def test_another_connector_orders_by_source_time_then_kafka_coordinates(
        spark: SparkSession) -> None:
    got = positions(spark, [{"connector": "sqlserver", "ts_ms": 1700000000000},
                            {"connector": "sqlserver", "ts_ms": 1700000000000},
                            {"connector": "sqlserver", "ts_ms": 1699999999999}])
    assert got[2] < got[0] < got[1]  # same time: the later offset is the later change
