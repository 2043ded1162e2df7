"""Acceptance: a YAML schema (every field type, a composite key, a header column) end to end
through ``deltasink run``, then a compatible change (a new optional field) and a refused one."""

from __future__ import annotations

import uuid
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


def produce(bootstrap: str, topic: str, values: list[tuple[bytes, str]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for value, trace in values:
        producer.produce(topic, value=value, key=b"k", headers=[("trace-id", trace.encode())])
    assert producer.flush(30) == 0


def run(config: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``deltasink run --config <config>`` in this process, on the session's SparkSession (a
    cold process is not what this test is about: tests/pipelines/cli/test_cli.py starts one)."""
    capsys.readouterr()
    code = main(["run", "--config", str(config)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err[-3000:]
    return code, out, err


@pytest.mark.extended
def test_a_yaml_schema_runs_end_to_end_then_evolves_and_refuses_an_incompatible_change(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    topic = f"orders-{uuid.uuid4().hex[:8]}"
    ensure_topic(broker.bootstrap_servers, topic, partitions=2)
    schema_file = lake / "orders.schema.yml"
    schema_file.write_text(ORDERS_SCHEMA.read_text())
    config = write_config(lake, broker.bootstrap_servers, topic, schema="orders.schema.yml")
    lines = [order(f"o-{i // 4}", i % 4 + 1) for i in range(200)]
    copies = lines[:20]  # redelivered: each must land once, on (order_id, line_no)
    poison = order("o-x", line_no="12")  # strict typing: a numeric string is not an int
    produce(broker.bootstrap_servers, topic,
            [(encode(r), f"t-{i}") for i, r in enumerate([*lines, *copies, poison])])

    code, out, err = run(config, capsys)
    assert code == 0, out[-2000:] + err[-2000:]
    assert "inserted=200" in out and "quarantined=1" in out
    assert "quality PASSED" in out

    # A compatible change: a new optional field becomes a nullable column before the MERGE.
    schema_file.write_text(ORDERS_SCHEMA.read_text().replace(
        "fields:\n", "fields:\n  coupon: {type: string, required: false}\n", 1))
    produce(broker.bootstrap_servers, topic,
            [(encode(order("o-new", 1, coupon="SPRING")), "t-new")])
    code, out, err = run(config, capsys)
    assert code == 0, out[-2000:] + err[-2000:]
    assert "inserted=1" in out

    # A widening without delta.enableTypeWidening: line_no int -> long is refused before
    # anything is read (tests/pipelines/test_widen_run.py widens it with the property).
    schema_file.write_text(schema_file.read_text().replace(
        "line_no: {type: int}", "line_no: {type: long}"))
    code, out, err = run(config, capsys)
    assert code == 2, out[-2000:] + err[-2000:]  # a schema error: exit code 2, as documented
    error = [ln for ln in err.splitlines() if ln.strip()]
    assert len(error) == 1, err[-2000:]
    assert error[0].startswith("error: ")
    assert "column 'line_no' widens int -> bigint: set target.properties " \
        "delta.enableTypeWidening: true to widen it in place" in error[0]

    cfg = load_config(config, environ={})
    target = cfg.target.ref.read(spark)
    assert target.count() == 201
    assert target.select("order_id", "line_no").distinct().count() == 201
    assert target.where("coupon IS NOT NULL").select("order_id", "coupon").collect() == [
        ("o-new", "SPRING")]
    assert target.where("trace_id IS NULL").count() == 0
    assert {f.name: f.dataType.simpleString() for f in target.schema.fields}["line_no"] == "int"
    reasons = [r["reason"] for r in cfg.target.quarantine_ref.read(spark).collect()]
    assert reasons == ["bad_type:line_no"]
