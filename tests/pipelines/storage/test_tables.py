"""Sink tables: created once even when writers race, and checked when they already exist."""

from __future__ import annotations

import datetime as dt
import threading
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from pipelines.errors import SchemaError
from pipelines.sink.tables import QUARANTINE_SCHEMA, ensure_sink_tables
from schemas import get_schema
from schemas.base import EventSchema, FieldSpec
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
    creations = target.history(spark).where("operation = 'CREATE TABLE'").count()
    assert creations == 1


def test_an_existing_table_with_another_schema_is_refused(spark: SparkSession,
                                                          lake: Path) -> None:
    cfg = make_config(lake, "127.0.0.1:9", "t")
    spark.range(3).selectExpr("cast(id as string) as event_id", "id as event_time") \
        .write.format("delta").save(cfg.target.path)
    with pytest.raises(SchemaError,
                       match="column 'event_time' is bigint in the table but timestamp"):
        ensure_sink_tables(spark, cfg, SCHEMA)


@pytest.mark.parametrize(("schema", "key", "message"), [
    (SCHEMA, "payload", "target.dedup_key 'payload' is optional in schema events_v1"),
    (EventSchema("blank_ok", (FieldSpec("id", "string", non_empty=False),
                              FieldSpec("at", "timestamp")), key="id", time_field="at"),
     "id", "target.dedup_key 'id' may be blank in schema blank_ok"),
])
def test_a_dedup_key_a_record_may_lack_is_refused_before_anything_is_created(
        spark: SparkSession, lake: Path, schema: EventSchema, key: str, message: str) -> None:
    cfg = make_config(lake, "127.0.0.1:9", "t", target={"dedup_key": key})
    with pytest.raises(SchemaError, match=message) as err:
        ensure_sink_tables(spark, cfg, schema)
    assert "\n" not in str(err.value) and "Declare it FieldSpec(" in str(err.value)
    assert not Path(cfg.target.ref.location).exists()
    assert not Path(cfg.target.quarantine_ref.location).exists()


def test_an_existing_quarantine_table_gets_the_record_hash_column(spark: SparkSession,
                                                                  lake: Path) -> None:
    cfg = make_config(lake, "127.0.0.1:9", "t")
    added = ("record_hash", "redriven_at", "redriven_version")
    old = StructType([f for f in QUARANTINE_SCHEMA.fields if f.name not in added])
    now = dt.datetime(2026, 3, 1)
    spark.createDataFrame([("orders", 0, 5, now, None, b"old", "invalid_json", "p", 0, now)], old) \
        .write.format("delta").save(cfg.target.quarantine_ref.location)
    ensure_sink_tables(spark, cfg, SCHEMA)
    rows = cfg.target.quarantine_ref.read(spark).collect()
    assert rows[0].asDict() == {"kafka_topic": "orders", "kafka_partition": 0, "kafka_offset": 5,
                                "kafka_timestamp": now, "kafka_key": None, "raw_value": b"old",
                                "reason": "invalid_json", "pipeline": "p", "batch_id": 0,
                                "quarantined_at": now, "record_hash": None,
                                "redriven_at": None, "redriven_version": None}
    history = cfg.target.quarantine_ref.history(spark).select("operation").collect()
    assert [h["operation"] for h in history] == ["ADD COLUMNS", "WRITE"]
    ensure_sink_tables(spark, cfg, SCHEMA)  # already there: nothing more to do
    assert cfg.target.quarantine_ref.history(spark).count() == 2
