"""Table properties, type widening and nested fields through Spark Connect (issue 62): the same
Delta SQL as in classic mode, from a Connect client process (no JVM of its own), on a path
target and on one named in the Connect server's catalog.

The client creates each target with ``delta.enableChangeDataFeed``, inserts a row, then brings
it to a schema that widens ``n`` and gives the ``where`` struct a field, with
``delta.enableTypeWidening`` added to the properties: one ALTER sets the property, one adds the
field, one widens. The test reads back what the client saw.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from pipelines.runtime.connect_server import ConnectServer
from tests.support import runner
from tests.support.configs import write_config

pytestmark = pytest.mark.slow

_CLIENT = """
import json, sys
from pyspark.sql import SparkSession
from pipelines.config.loader import load_config
from pipelines.sink.tables import ensure_sink_tables
spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
spark.sql(f"CREATE SCHEMA IF NOT EXISTS {sys.argv[2]}")
out = {}
for first, second in zip(sys.argv[3::2], sys.argv[4::2]):
    before, after = load_config(first, environ={}), load_config(second, environ={})
    made = ensure_sink_tables(spark, before, before.event_schema())
    ref = before.target.ref
    spark.sql(f"INSERT INTO {ref.sql} (id, n, `where`, at, event_date, kafka_topic, "
              "kafka_partition, kafka_offset, ingested_at) VALUES ('a', 7, "
              "named_struct('city', 'Oslo'), now(), current_date(), 't', 0, 0, now())")
    grown = ensure_sink_tables(spark, after, after.event_schema())
    table = spark.sql(f"SELECT id, n, `where` FROM {ref.sql}")
    out[ref.describe()] = {
        "made": made, "grown": grown,
        "properties": dict(spark.sql(f"DESCRIBE DETAIL {ref.sql}").first()["properties"]),
        "types": {f.name: f.dataType.simpleString() for f in table.schema.fields},
        "rows": [r.asDict(recursive=True) for r in table.collect()]}
print(json.dumps(out))
"""


def schema(n: str, where: dict[str, str]) -> dict[str, Any]:
    return {"name": "s", "key": "id", "event_time": "at", "fields": {
        "id": {"type": "string"}, "n": {"type": n}, "at": {"type": "timestamp"},
        "where": {"type": "struct", "fields": where, "required": False}}}


def test_properties_widening_and_nested_fields_work_through_spark_connect(
        connect_server: ConnectServer, lake: Path) -> None:
    database = f"spark_catalog.tables_{uuid.uuid4().hex[:8]}"
    configs = []
    for where in ("path", "catalog"):
        (lake / where).mkdir()
        located = {} if where == "path" else {
            "path": None, "quarantine_path": None, "table": f"{database}.orders",
            "quarantine_table": f"{database}.orders_quarantine"}
        for step, n, fields, properties in (
                ("before", "int", {"city": "string"}, {"delta.enableChangeDataFeed": True}),
                ("after", "long", {"city": "string", "zip": "string"},
                 {"delta.enableChangeDataFeed": True, "delta.enableTypeWidening": True})):
            configs.append(write_config(
                lake / where, "127.0.0.1:9", "t", name=step, spark={"remote": connect_server.url},
                schema=schema(n, fields), target={**located, "properties": properties}))
    done = subprocess.run([sys.executable, "-c", _CLIENT, connect_server.url, database,
                           *map(str, configs)], capture_output=True, text=True, timeout=600,
                          env=runner.cold_env(None))
    assert done.returncode == 0, done.stderr[-3000:]
    seen: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])

    assert len(seen) == 2
    for table, got in seen.items():
        assert got["made"] == [], table  # created with its properties: nothing to change
        assert got["grown"] == [
            f"table {table}: set delta.enableTypeWidening=true (was unset)",
            f"table {table}: added nested field(s) in place: where.zip string",
            f"table {table}: widened in place (delta.enableTypeWidening): n int -> bigint"]
        assert {k: got["properties"].get(k) for k in (
            "delta.enableChangeDataFeed", "delta.enableTypeWidening")} == {
            "delta.enableChangeDataFeed": "true", "delta.enableTypeWidening": "true"}
        assert got["types"] == {"id": "string", "n": "bigint",
                                "where": "struct<city:string,zip:string>"}
        assert got["rows"] == [{"id": "a", "n": 7, "where": {"city": "Oslo", "zip": None}}]
