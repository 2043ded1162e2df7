"""Schema evolution of an existing target: new optional columns are added, the rest refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from pipelines.errors import SchemaError
from pipelines.sink.merge import insert_only_merge
from pipelines.sink.tables import ensure_sink_tables
from schemas.base import EventSchema
from schemas.loader import schema_from_mapping
from tests.support.configs import make_config


def schema(**fields: Any) -> EventSchema:
    base = {"id": {"type": "string"}, "n": {"type": "int"}, "at": {"type": "timestamp"}}
    return schema_from_mapping({"name": "s", "key": "id", "event_time": "at",
                                "fields": {k: v for k, v in {**base, **fields}.items() if v}})


def test_a_new_optional_field_becomes_a_nullable_column_and_old_rows_read_null(
        spark: SparkSession, lake: Path) -> None:
    cfg = make_config(lake, "127.0.0.1:9", "t", target={"dedup_key": "id"})
    ensure_sink_tables(spark, cfg, schema())
    ref = cfg.target.ref
    spark.sql(f"INSERT INTO delta.`{ref.path}` (id, n, at, event_date, kafka_topic, "
              "kafka_partition, kafka_offset, ingested_at) VALUES ('a', 1, now(), current_date(), "
              "'t', 0, 0, now())")
    grown = schema(note={"type": "string", "required": False},
                   where={"type": "struct", "fields": {"city": "string"}, "required": False})
    ensure_sink_tables(spark, cfg, grown)
    table = ref.read(spark)
    types = {f.name: (f.dataType.simpleString(), f.nullable) for f in table.schema.fields}
    assert types["note"] == ("string", True)
    assert types["where"] == ("struct<city:string>", True)
    assert table.select("note", "where").collect() == [(None, None)]
    history = ref.history(spark).select("operation").collect()
    assert [r[0] for r in history].count("ADD COLUMNS") == 1
    ensure_sink_tables(spark, cfg, grown)  # idempotent: nothing more to add, no new commit
    assert ref.history(spark).count() == len(history)


@pytest.mark.parametrize(("changed", "message"), [
    (schema(n={"type": "long"}),
     "column 'n' is int in the table but bigint in the schema: Delta cannot change a column's "
     "type in place; write to a new target and copy the rows (INSERT INTO <new> SELECT ..., "
     "CAST(`n` AS bigint) ... FROM <old>)"),
    (schema(n=None),
     "column 'n' is NOT NULL in the table but no longer in the schema (a removed or renamed "
     "required field): keep the field, or drop the constraint first (ALTER TABLE ... ALTER "
     "COLUMN `n` DROP NOT NULL)"),
    (schema(extra={"type": "string"}),
     "new column 'extra' (string) is required, but existing rows have no value: declare it "
     "required: false"),
])
def test_an_incompatible_change_is_refused_naming_the_column_and_the_migration(
        spark: SparkSession, lake: Path, changed: EventSchema, message: str) -> None:
    cfg = make_config(lake, "127.0.0.1:9", "t", target={"dedup_key": "id"})
    ensure_sink_tables(spark, cfg, schema())
    before = cfg.target.ref.history(spark).count()
    with pytest.raises(SchemaError) as err:
        ensure_sink_tables(spark, cfg, changed)
    assert message in str(err.value) and "\n" not in str(err.value)
    assert cfg.target.ref.history(spark).count() == before  # nothing was altered


def test_a_removed_optional_field_keeps_its_column_and_new_rows_land_with_null(
        spark: SparkSession, lake: Path) -> None:
    cfg = make_config(lake, "127.0.0.1:9", "t", target={"dedup_key": "id"})
    with_note = schema(note={"type": "string", "required": False})
    ensure_sink_tables(spark, cfg, with_note)
    without = schema()
    ensure_sink_tables(spark, cfg, without)  # accepted: the column stays, nullable
    rows = spark.sql("SELECT 'b' AS id, 2 AS n, now() AS at, current_date() AS event_date, "
                     "'t' AS kafka_topic, 0L AS kafka_partition, 1L AS kafka_offset, "
                     "now() AS kafka_timestamp, now() AS ingested_at")
    outcome = insert_only_merge(cfg.target.ref, rows, ("id",))
    assert outcome.inserted == 1
    assert cfg.target.ref.read(spark).select("id", "note").collect() == [("b", None)]
