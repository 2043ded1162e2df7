"""Sink tables: created once even when writers race, and checked when they already exist."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.errors import SchemaError
from pipelines.sink.tables import ensure_sink_tables
from schemas import get_schema
from tests.support.configs import make_config

SCHEMA = get_schema("events_v1")


def test_two_writers_creating_the_same_tables_both_succeed(spark: SparkSession,
                                                           lake: Path) -> None:
    configs = [make_config(lake, "127.0.0.1:9", "t", name=n) for n in ("a", "b", "c")]
    errors: list[BaseException] = []

    def create(cfg: object) -> None:
        try:
            ensure_sink_tables(spark, cfg, SCHEMA)  # type: ignore[arg-type]
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=create, args=(c,)) for c in configs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not errors, errors
    target = configs[0].target.ref
    assert target.read(spark).schema.fieldNames() == SCHEMA.target_schema().fieldNames()
    creations = target.delta(spark).history().where("operation = 'CREATE TABLE'").count()
    assert creations == 1


def test_an_existing_table_with_another_schema_is_refused(spark: SparkSession,
                                                          lake: Path) -> None:
    cfg = make_config(lake, "127.0.0.1:9", "t")
    spark.range(3).selectExpr("cast(id as string) as event_id", "id as event_time") \
        .write.format("delta").save(cfg.target.path)
    with pytest.raises(SchemaError, match="column 'event_time' is bigint, expected timestamp"):
        ensure_sink_tables(spark, cfg, SCHEMA)
