"""The demo's Avro topic, next to the JSON one: Confluent wire format, decoded by ``from_avro``.

The demo has no schema registry, so this pipeline reads its writer schema from an ``.avsc`` file
(``source.avro.schema_file``). Values are encoded here with a few lines of Avro binary (zig-zag
varints, length-prefixed strings, little-endian doubles) behind the wire format's magic byte and
schema id, so the demo needs nothing beyond deltasink's own dependencies. 1% of the records are
truncated (``avro: undecodable``) and a few are JSON on the Avro topic
(``avro: not Confluent wire format``); both are quarantined.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import yaml
from confluent_kafka import Producer

from pipelines.errors import BrokerError
from pipelines.kafka.topics import ensure_topic

CLICKS_AVSC = {"type": "record", "name": "Click", "namespace": "demo", "fields": [
    {"name": "event_id", "type": "string"},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "user", "type": "string"},
    {"name": "amount", "type": "double"}]}
TOPIC, COUNT, TRUNCATED_EVERY, JSON_VALUES = "clicks", 5_000, 100, 5
_START_MS = int(datetime(2026, 3, 1, tzinfo=UTC).timestamp() * 1000)


def _long(value: int) -> bytes:
    """An Avro long: zig-zag, then a base-128 varint."""
    n = (value << 1) ^ (value >> 63)
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _string(text: str) -> bytes:
    data = text.encode("utf-8")
    return _long(len(data)) + data


def click_value(i: int) -> bytes:
    """Click ``i`` in the Confluent wire format (schema id 1)."""
    body = (_string(f"click-{i}") + _long(_START_MS + i * 1000) + _string(f"user-{i % 50}")
            + struct.pack("<d", i / 8))
    return b"\x00" + struct.pack(">I", 1) + body


def write_avro_config(folder: Path, bootstrap: str) -> Path:
    """The Avro pipeline's YAML and its ``.avsc``, written into ``folder``."""
    (folder / "clicks.avsc").write_text(json.dumps(CLICKS_AVSC, indent=2) + "\n")
    path = folder / "clicks_avro.yml"
    path.write_text(yaml.safe_dump({
        "name": "clicks_avro",
        "source": {"bootstrap_servers": bootstrap, "topics": [TOPIC], "format": "avro",
                   "avro": {"schema_file": "clicks.avsc"}},
        "schema": {"name": "clicks", "key": "event_id", "event_time": "ts",
                   "fields": {"event_id": {"type": "string"}, "ts": {"type": "timestamp"},
                              "user": {"type": "string"}, "amount": {"type": "double"}}},
        "target": {"path": "./clicks", "quarantine_path": "./clicks_quarantine"},
        "checkpoint": "./_checkpoints/clicks_avro",
        "quality": {"docs_dir": "./_quality/docs", "results_path": "./_quality/results",
                    "metrics_path": "./_quality/run_metrics", "max_quarantine_ratio": 0.02},
    }, sort_keys=False))
    return path


def produce_clicks(bootstrap: str) -> tuple[int, int]:
    """Produce the Avro topic; returns (distinct good clicks, bad records)."""
    ensure_topic(bootstrap, TOPIC, partitions=2)
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    failed: list[object] = []

    def delivered(error: object, _message: object) -> None:
        if error is not None:
            failed.append(error)

    bad = 0
    for i in range(COUNT):
        value = click_value(i)
        if i % TRUNCATED_EVERY == TRUNCATED_EVERY - 1:
            value, bad = value[:9], bad + 1  # cut mid-record
        producer.produce(TOPIC, value=value, on_delivery=delivered)
        producer.poll(0)
    for i in range(JSON_VALUES):
        producer.produce(TOPIC, value=json.dumps({"event_id": f"json-{i}"}).encode(),
                         on_delivery=delivered)
    if producer.flush(60) or failed:
        raise BrokerError(f"the demo producer could not deliver every click: {failed[:1]}")
    return COUNT - bad, bad + JSON_VALUES


def run_avro_step(folder: Path, bootstrap: str, cli: Callable[..., int]) -> int:
    """Produce the Avro topic, run its pipeline with ``cli``, list its quarantine, check it."""
    config_path = write_avro_config(folder, bootstrap)
    good, bad = produce_clicks(bootstrap)
    print(f"produced {COUNT + JSON_VALUES} records to '{TOPIC}': {good} Avro clicks, "
          f"{COUNT - good} of them cut short, {JSON_VALUES} JSON values")
    if cli("run", "-c", str(config_path)):
        return 1
    cli("quarantine", "list", "-c", str(config_path))
    from pyspark.sql import functions as F

    from pipelines.config.loader import load_config
    from pipelines.runtime.spark import get_spark

    config = load_config(config_path)
    spark = get_spark("deltasink-demo")
    rows = config.target.ref.read(spark).count()
    reasons = {r["reason"]: int(r["n"]) for r in config.target.quarantine_ref.read(spark)
               .groupBy("reason").agg(F.count("*").alias("n")).collect()}
    print(f"\navro target rows:      {rows:>7}  (expected {good})")
    print(f"avro quarantined:      {sum(reasons.values()):>7}  (expected {bad}) "
          + ", ".join(f"{r}={n}" for r, n in sorted(reasons.items())))
    ok = rows == good and sum(reasons.values()) == bad
    print("\nRESULT: " + ("every Avro click landed once; every bad record is quarantined once"
                          if ok else "MISMATCH (see above)"))
    return 0 if ok else 1
