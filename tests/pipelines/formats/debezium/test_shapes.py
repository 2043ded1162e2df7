"""Learning a topic's Connect schemas from its records, and planning a batch's columns."""

from __future__ import annotations

import json

import pytest
from pyspark.sql.types import (
    DecimalType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from pipelines.formats.debezium.connect import ConnectSchemaError
from pipelines.formats.debezium.shapes import ShapeError, Shapes, fits, row_schema
from tests.support.debezium_corpus import corpus


def value_schemas(name: str) -> list[dict[str, object]]:
    """The distinct value schemas of a corpus file, as the batch's observation gives them."""
    seen: dict[str, dict[str, object]] = {}
    for record in corpus(name):
        if record.value is not None:
            schema = json.dumps(json.loads(record.value)["schema"], sort_keys=True)
            seen.setdefault(schema, {"id": len(seen) + 1, "text": schema})
    return list(seen.values())


def test_a_wider_type_fits_a_narrower_one_but_not_the_other_way() -> None:
    assert fits(IntegerType(), LongType()) and not fits(LongType(), IntegerType())
    assert fits(DecimalType(12, 2), DecimalType(14, 4))
    assert not fits(DecimalType(12, 2), DecimalType(12, 4))  # two integer digits lost
    assert not fits(StringType(), IntegerType())


def test_each_table_version_is_learned_once_and_the_key_from_the_key_schema() -> None:
    shapes = Shapes()
    found = {"values": value_schemas("types.schemas-on"),
             "keys": [{"id": 9, "text": json.dumps(json.loads(corpus("types.schemas-on")[0]
                                                              .key or "")["schema"])}]}
    assert shapes.learn(found)
    assert len(shapes.values) == 3  # before ADD COLUMN, after it, after DROP COLUMN
    assert not shapes.learn(found)  # nothing new the second time
    assert shapes.key_columns() == ("id",)
    names = [f.name for f in shapes.plan(StructType([]), {}, ("id",)).fields]
    assert names[:4] == ["id", "big", "small", "name"] and "added" in names


def test_a_schema_that_is_not_an_envelope_is_unreadable_not_fatal() -> None:
    shapes = Shapes()
    shapes.learn({"values": [{"id": 1, "text": '{"type": "string"}'},
                             {"id": 2, "text": "not json"}]})
    assert sorted(shapes.unreadable) == [1, 2] and not shapes.values
    with pytest.raises(ConnectSchemaError, match="not a Debezium change event"):
        row_schema({"type": "struct", "fields": [{"type": "int32", "field": "id"}]})


def test_keys_that_name_other_fields_stop_the_run() -> None:
    shapes = Shapes()
    shapes.learn({"names": [["id"]]})
    with pytest.raises(ShapeError, match="fields differ"):
        shapes.learn({"names": [["id", "tenant"]]})


def test_the_plan_keeps_the_tables_columns_and_types_and_a_pin_wins() -> None:
    shapes = Shapes()
    shapes.learn({"values": value_schemas("types.schemas-on")})
    existing = StructType([StructField("gone", StringType(), True),
                           StructField("id", LongType(), True),  # widened since: kept
                           StructField("price", DecimalType(12, 2), True)])
    plan = shapes.plan(existing, {"ratio": StringType()}, ("id",))
    types = {f.name: f.dataType for f in plan.fields}
    assert [f.name for f in plan.fields][:3] == ["gone", "id", "price"]  # a dropped column stays
    assert types["id"] == LongType() and types["ratio"] == StringType()
    assert types["price"] == DecimalType(12, 2) and all(f.nullable for f in plan.fields)
