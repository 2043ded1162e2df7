"""Acceptance (issue 62): a schema that widens mid-stream, through ``deltasink run``.

The example YAML schema lands a topic; then the schema widens ``line_no`` (a key column) from
int to long and ``amount`` from decimal(12,2) to decimal(14,2), and its ``address`` struct gains
``country``. With ``delta.enableTypeWidening`` in ``target.properties`` the next run widens
and adds in place, says so in one line each, and lands records that need the wider types, while
copies of old records are still caught on the widened key. Narrowing back is refused in one
line, and the table keeps every row.
"""

from __future__ import annotations

import uuid
from decimal import Decimal
from pathlib import Path

import pytest
from confluent_kafka import Producer
from pyspark.sql import SparkSession

from pipelines.cli import main
from pipelines.config.loader import load_config
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.topics import ensure_topic
from tests.support.configs import write_config
from tests.support.orders import ORDERS_SCHEMA, encode, order

BIG = 3_000_000_000  # a line number no int holds


def produce(bootstrap: str, topic: str, records: list[dict[str, object]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for record in records:
        producer.produce(topic, value=encode(record), headers=[("trace-id", b"t")])
    assert producer.flush(30) == 0


def run(config: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``deltasink run --config <config>`` in this process, on the session's SparkSession."""
    capsys.readouterr()
    code = main(["run", "--config", str(config)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err[-3000:]
    return code, out, err


def test_a_schema_widened_mid_stream_widens_the_table_in_place_and_keeps_every_row(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    topic = f"widen-{uuid.uuid4().hex[:8]}"
    ensure_topic(broker.bootstrap_servers, topic, partitions=2)
    schema_file = lake / "orders.schema.yml"
    schema_file.write_text(ORDERS_SCHEMA.read_text())
    config = write_config(lake, broker.bootstrap_servers, topic, schema="orders.schema.yml",
                          target={"properties": {"delta.enableTypeWidening": True}},
                          quality={"enabled": False})
    old = [order(f"o-{i // 4}", i % 4 + 1) for i in range(40)]
    produce(broker.bootstrap_servers, topic, old)
    code, out, err = run(config, capsys)
    assert code == 0 and "inserted=40" in out, out[-2000:] + err[-2000:]

    schema_file.write_text(ORDERS_SCHEMA.read_text()
                           .replace("line_no: {type: int}", "line_no: {type: long}")
                           .replace('"decimal(12,2)"', '"decimal(14,2)"')
                           .replace("      city: {type: string}\n", "      city: {type: string}\n"
                                    "      country: {type: string, required: false}\n"))
    wide = [order(f"n-{i}", BIG + i, amount=123456789012.34,
                  address={"city": "Oslo", "country": "NO", "zip": "0150"}) for i in range(20)]
    produce(broker.bootstrap_servers, topic, wide + old[:5])  # old copies: caught, not landed
    code, out, err = run(config, capsys)
    assert code == 0, out[-2000:] + err[-2000:]
    described = load_config(config, environ={}).target.ref.describe()
    said = [ln for ln in out.splitlines() if ln.startswith(f"table {described}: ")]
    assert said == [
        f"table {described}: added nested field(s) in place: address.country string",
        f"table {described}: widened in place (delta.enableTypeWidening): line_no int -> bigint, "
        "amount decimal(12,2) -> decimal(14,2)"], out[-3000:]
    assert "inserted=20" in out, out[-2000:]

    cfg = load_config(config, environ={})
    target = cfg.target.ref.read(spark)
    types = {f.name: f.dataType.simpleString() for f in target.schema.fields}
    assert (types["line_no"], types["amount"]) == ("bigint", "decimal(14,2)")
    assert types["address"] == "struct<city:string,country:string,zip:string>"
    rows = {(r["order_id"], r["line_no"]): r for r in target.collect()}
    assert len(rows) == target.count() == 60  # each once: the old copies were caught
    first = rows[("o-0", 1)]
    assert (first["amount"], first["address"].asDict()) == (
        Decimal("28.50"), {"city": "Lyon", "country": None, "zip": "69001"})
    widest = rows[("n-0", BIG)]
    assert (widest["amount"], widest["address"]["country"]) == (Decimal("123456789012.34"), "NO")

    # Back to the old schema: a narrowing, refused in one line before anything is read.
    schema_file.write_text(ORDERS_SCHEMA.read_text())
    code, out, err = run(config, capsys)
    error = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(error) == 1, out[-2000:] + err[-2000:]
    assert "column 'line_no' is bigint in the table but int in the schema, which narrows " \
        "it" in error[0]
    assert cfg.target.ref.read(spark).count() == 60
