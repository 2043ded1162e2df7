"""Schema evolution of an existing target: new optional columns and nested fields are added,
widened types widened in place (with ``delta.enableTypeWidening``), the rest refused."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from pipelines.errors import SchemaError
from pipelines.sink.merge import insert_only_merge
from pipelines.sink.tables import ensure_sink_tables
from pipelines.sink.widen import same_type
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
     "column 'n' widens int -> bigint: set target.properties delta.enableTypeWidening: true "
     "to widen it in place (adds the typeWidening table feature: readers then need a Delta "
     "that knows it), or keep int"),
    (schema(n={"type": "string"}),
     "column 'n' is int in the table but string in the schema, which changes it: Delta widens "
     "a type in place only (int -> bigint, decimal precision up, ...); keep int, or write to a "
     "new target and copy the rows (INSERT INTO <new> SELECT ..., CAST(... AS string) FROM "
     "<old>)"),
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


#: A schema with a struct, an array of structs and a decimal: each of them widens or grows.
BEFORE = {"n": {"type": "int"}, "amount": {"type": "decimal(10,2)"},
          "where": {"type": "struct", "fields": {"city": "string", "zip": "int"},
                    "required": False},
          "items": {"type": "array", "items": {"type": "struct", "fields": {"sku": "string"}},
                    "required": False}}
AFTER = {"n": {"type": "long"}, "amount": {"type": "decimal(12,2)"},
         "where": {"type": "struct", "required": False,
                   "fields": {"city": "string", "street": "string", "zip": "long"}},
         "items": {"type": "array", "required": False,
                   "items": {"type": "struct", "fields": {"sku": "string", "qty": "int"}}}}


@pytest.mark.parametrize("where", [  # catalog names in make test: test_connect_tables.py
    "path", pytest.param("catalog", marks=pytest.mark.extended)])
def test_widened_types_and_new_nested_fields_change_the_table_in_place_and_keep_its_rows(
        spark: SparkSession, lake: Path, where: str) -> None:
    """The table is created without type widening; the grown schema comes with the property:
    one start sets it, adds the nested fields at the schema's positions, widens the types, and
    says so; the old row reads upcast, with null in the new fields. The old schema is then a
    narrowing, refused with nothing changed."""
    table = f"default.evolve_{uuid.uuid4().hex[:8]}"
    located = {"path": None, "table": table} if where == "catalog" else {}
    cfg = make_config(lake, "127.0.0.1:9", "t", target={"dedup_key": "id", **located})
    assert ensure_sink_tables(spark, cfg, schema(**BEFORE)) == []
    ref = cfg.target.ref
    spark.sql(f"INSERT INTO {ref.sql} (id, n, amount, `where`, items, at, event_date, "
              "kafka_topic, kafka_partition, kafka_offset, ingested_at) VALUES ('a', 2147483647, "
              "12345678.91, named_struct('city', 'Oslo', 'zip', 150), "
              "array(named_struct('sku', 'x1')), now(), current_date(), 't', 0, 0, now())")
    grown = make_config(lake, "127.0.0.1:9", "t", target={
        "dedup_key": "id", **located, "properties": {"delta.enableTypeWidening": True}})

    notes = ensure_sink_tables(spark, grown, schema(**AFTER))

    assert notes == [
        f"table {ref.describe()}: set delta.enableTypeWidening=true (was unset)",
        f"table {ref.describe()}: added nested field(s) in place: where.street string, "
        "items.element.qty int",
        f"table {ref.describe()}: widened in place (delta.enableTypeWidening): n int -> bigint, "
        "amount decimal(10,2) -> decimal(12,2), where.zip int -> bigint"]
    table_schema = ref.read(spark).schema
    wanted = schema(**AFTER).target_schema()
    assert all(same_type(table_schema[f.name].dataType, f.dataType) for f in wanted.fields)
    row = ref.read(spark).select("n", "amount", "where", "items").first()
    assert row is not None
    assert (row["n"], str(row["amount"])) == (2147483647, "12345678.91")
    assert row["where"].asDict() == {"city": "Oslo", "street": None, "zip": 150}
    assert [r.asDict() for r in row["items"]] == [{"sku": "x1", "qty": None}]
    versions = ref.history(spark).count()
    assert ensure_sink_tables(spark, grown, schema(**AFTER)) == []  # idempotent: no commit
    with pytest.raises(SchemaError) as err:
        ensure_sink_tables(spark, grown, schema(**BEFORE))
    assert "column 'n' is bigint in the table but int in the schema, which narrows it" \
        in str(err.value)
    assert "\n" not in str(err.value)
    assert ref.history(spark).count() == versions  # nothing was altered


@pytest.mark.parametrize(("changed", "message"), [
    ({"where": {"type": "struct", "fields": {"city": "string"}, "required": False}},
     "struct 'where' has field(s) zip in the table but not in the schema: keep them in the "
     "schema (nested fields are optional)"),
    ({"where": {"type": "struct", "fields": {"zip": "int", "city": "string"},
                "required": False}},
     "struct 'where' has its fields in another order in the schema than in the table (city, "
     "zip): declare them in the table's order"),
])
def test_a_struct_that_lost_or_reordered_fields_is_refused(
        spark: SparkSession, lake: Path, changed: dict[str, Any], message: str) -> None:
    cfg = make_config(lake, "127.0.0.1:9", "t", target={"dedup_key": "id"})
    ensure_sink_tables(spark, cfg, schema(**BEFORE))
    with pytest.raises(SchemaError) as err:
        ensure_sink_tables(spark, cfg, schema(**{**BEFORE, **changed}))
    assert message in str(err.value)
