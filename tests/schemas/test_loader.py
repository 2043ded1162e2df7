"""YAML schemas: every type maps to its column type; every mistake is one line naming the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pipelines.errors import SchemaError
from schemas.loader import load_schema_file, schema_from_mapping
from tests.support.configs import make_config
from tests.support.orders import ORDERS_SCHEMA


def test_every_field_type_maps_to_its_column_type() -> None:
    schema = load_schema_file(ORDERS_SCHEMA)
    assert schema.target_schema().simpleString() == (
        "struct<order_id:string,line_no:int,qty:bigint,price:double,amount:decimal(12,2),"
        "paid:boolean,status:string,updated_at:timestamp,created_at:timestamp,ship_date:date,"
        "tags:array<string>,address:struct<city:string,zip:string>,attrs:string,"
        "trace_id:string,event_date:date,kafka_topic:string,kafka_partition:bigint,"
        "kafka_offset:bigint,kafka_timestamp:timestamp,ingested_at:timestamp>")
    assert schema.key_columns == ("order_id", "line_no")
    assert [f.name for f in schema.target_schema().fields if not f.nullable][:7] == [
        "order_id", "line_no", "qty", "price", "amount", "status", "updated_at"]


def base(**fields: Any) -> dict[str, Any]:
    return {"name": "s", "key": "id", "event_time": "at",
            "fields": {"id": {"type": "string"}, "at": {"type": "timestamp"}, **fields}}


@pytest.mark.parametrize(("raw", "message"), [
    (base(n={"type": "integer"}), "field 'n': unknown type 'integer'"),
    (base(n={"type": "decimal(3,5)"}), "field 'n': decimal(3,5) needs 0 <= scale"),
    (base(n={"type": "array"}), "field 'n': an array needs items"),
    (base(n={"type": "struct"}), "field 'n': a struct needs fields"),
    (base(n={"type": "int", "max_length": 3}), "field 'n': max_length is for strings only"),
    (base(n={"type": "string", "maxlen": 3}), "field 'n': unknown key(s) ['maxlen']"),
    (base(n={"type": "string", "required": "yes"}), "field 'n': required must be a bool"),
    (base(n={"type": "struct", "fields": {"c": {"type": "nope"}}}),
     "field 'n'.c: unknown type 'nope'"),
    (base(**{"bad name": {"type": "string"}}), "field 'bad name': a name must be letters"),
    ({**base(), "key": ["id", "missing"]}, "key 'missing' must be kafka.key or a field"),
    ({**base(), "event_time": "id"}, "'id' must be a timestamp field or kafka.timestamp"),
    ({**base(), "headers": {"id": "x"}}, "duplicate field or header column names"),
    ({**base(), "fields": {}}, "fields must be a non-empty mapping"),
    ({"name": "s", "key": "id", "fields": {}}, "missing 'event_time'"),
    (base(id={"type": "string", "required": False}),
     "key field 'id' must be required and non-empty"),
    (base(n={"type": "string", "allowed": ["a", 1]}),
     "field 'n': allowed values of a string field must be strings"),
])
def test_a_bad_schema_is_one_line_naming_the_field_and_the_problem(
        raw: dict[str, Any], message: str) -> None:
    with pytest.raises(SchemaError) as err:
        schema_from_mapping(raw)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_schema_file_is_found_beside_the_config_and_its_key_is_the_dedup_key(
        lake: Path) -> None:
    (lake / "schemas").mkdir()
    (lake / "schemas" / "orders.yml").write_text(ORDERS_SCHEMA.read_text())
    cfg = make_config(lake, "127.0.0.1:9", "t", schema="schemas/orders.yml")
    assert cfg.schema_source == str(lake / "schemas" / "orders.yml")
    assert cfg.target.dedup_keys == ("order_id", "line_no")
    assert cfg.schema_name == "orders_v1" and "(schema orders_v1)" in cfg.describe


def test_an_inline_schema_keyed_on_the_kafka_key_dedups_on_kafka_key(lake: Path) -> None:
    inline = {"name": "clicks", "key": "kafka.key", "event_time": "kafka.timestamp",
              "fields": {"page": "string"}}
    cfg = make_config(lake, "127.0.0.1:9", "t", schema=inline)
    assert cfg.target.dedup_keys == ("kafka_key",)
    assert cfg.event_schema().time_column == "kafka_timestamp"


def test_a_bad_schema_file_fails_the_config_load_in_one_line(lake: Path) -> None:
    (lake / "bad.yml").write_text(yaml.safe_dump(base(n={"type": "integer"})))
    with pytest.raises(SchemaError, match=r"bad.yml: field 'n': unknown type") as err:
        make_config(lake, "127.0.0.1:9", "t", schema="bad.yml")
    assert "\n" not in str(err.value)
