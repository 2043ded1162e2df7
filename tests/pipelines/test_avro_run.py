"""Acceptance: Avro in the Confluent wire format, produced with confluent-kafka's own
AvroSerializer against a registry on localhost, with two schema versions, a corrupt record and an
unknown schema id, lands exactly once; the bad records are quarantined with their reasons, and
the unknown-id record lands by a redrive once its schema is registered. A wrong registry password
fails ``deltasink run`` in one line, before anything is created."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from pyspark.sql import SparkSession

from pipelines.cli import main
from pipelines.config.loader import load_config
from pipelines.config.model import PipelineConfig
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.topics import ensure_topic
from pipelines.ops.redrive import redrive
from pipelines.run import run_pipeline
from tests.support.checker import check
from tests.support.clicks import DECLARED, V1, V2, click, wire
from tests.support.configs import write_config
from tests.support.registry import running_registry

USER, PASSWORD = "deltasink", "registry-pw-7f3a"
V3 = V1.replace('"name": "Click"', '"name": "Click", "doc": "v3"')  # V1's fields, a new id


def test_two_schema_versions_land_once_and_bad_avro_is_quarantined_with_reasons(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path) -> None:
    topic = f"clicks-{uuid.uuid4().hex[:8]}"
    ensure_topic(broker.bootstrap_servers, topic, partitions=2)
    with running_registry(credentials=(USER, PASSWORD)) as registry:
        client = SchemaRegistryClient({"url": registry.url,
                                       "basic.auth.user.info": f"{USER}:{PASSWORD}"})
        context = SerializationContext(topic, MessageField.VALUE)
        v1, v2 = (AvroSerializer(client, s, conf={"auto.register.schemas": True})
                  for s in (V1, V2))
        values = [v1(click(i), context) for i in range(150)]
        values += [v2(click(i, coupon=f"K{i}" if i % 2 else None), context)
                   for i in range(150, 300)]
        assert values[0] is not None and values[-1] is not None
        copies = values[:10] + values[-10:]  # redelivered, in both versions
        corrupt = values[1][:8]  # a known schema id, truncated Avro binary
        unknown = wire(3, V1, click(999))  # id 3: not registered (yet)
        not_wire = b'{"event_id": "c-json"}'
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
        for value in [*values, *copies, corrupt, unknown, not_wire]:
            producer.produce(topic, value=value)
        assert producer.flush(30) == 0
        assert set(registry.subjects) == {f"{topic}-value"}
        assert len(registry.subjects[f"{topic}-value"]) == 2  # two versions, two ids

        # The password comes through the environment override, like Kafka's secrets.
        path = write_config(lake, broker.bootstrap_servers, topic, schema=DECLARED, source={
            "format": "avro", "avro": {"registry_url": registry.url, "registry_user": USER}})
        config = load_config(path, environ={"DELTASINK_SOURCE__AVRO__REGISTRY_PASSWORD":
                                            PASSWORD})
        assert PASSWORD not in repr(config) and PASSWORD not in path.read_text()
        result = run_pipeline(spark, config, validate=False, progress=lambda _l: None)

        assert (result.records_in, result.inserted, result.quarantined) == (323, 300, 3)
        # Versions listed before the run and per batch; each version's schema fetched once.
        assert registry.calls(f"GET /subjects/{topic}-value/versions/") == 2
        verdict = check(spark, config, [f"c-{i}" for i in range(300)], poison_count=3)
        assert verdict.clean, verdict
        reasons = sorted(r["reason"] for r in config.target.quarantine_ref.read(spark).collect())
        assert reasons == ["avro: not Confluent wire format", "avro: undecodable",
                           "avro: unknown schema id 3"]

        # Its writer schema is registered late (id 3): a redrive decodes and lands the record.
        assert registry.register(f"{topic}-value", V3) == 3
        redone = redrive(spark, config, reason="avro: unknown schema id 3", say=lambda _l: None)
        assert redone is not None and (redone.inserted, redone.redriven) == (1, 1)

    verdict = check(spark, config, [f"c-{i}" for i in [*range(300), 999]], poison_count=3)
    assert verdict.clean, verdict
    target = config.target.ref.read(spark)
    assert target.where("coupon IS NOT NULL").count() == 75  # v2's odd ids
    assert target.where("event_id = 'c-0'").first()["user"] == "u-0"  # type: ignore[index]


def test_a_wrong_registry_password_is_one_line_before_any_table_is_created(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """``deltasink run``'s ``main()`` in this process, on the session's SparkSession: the
    failure and its one line are the point here, not a cold process."""
    topic = f"clicks-{uuid.uuid4().hex[:8]}"
    ensure_topic(broker.bootstrap_servers, topic, partitions=1)
    wrong = "not-the-registry-pw-91c2"
    with running_registry(credentials=(USER, PASSWORD)) as registry:
        registry.register(f"{topic}-value", V1)
        path = write_config(lake, broker.bootstrap_servers, topic, schema=DECLARED, source={
            "format": "avro", "avro": {"registry_url": registry.url, "registry_user": USER}})
        monkeypatch.setenv("DELTASINK_SOURCE__AVRO__REGISTRY_PASSWORD", wrong)
        capsys.readouterr()
        code = main(["run", "--config", str(path), "--no-validate"])
        out, err = capsys.readouterr()
    assert code == 1
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err[-2000:]
    assert f"schema registry {registry.url}" in lines[0]
    assert "HTTP 401, the registry refused the credentials" in lines[0]
    assert wrong not in out + err
    assert not (lake / "orders").exists() and not (lake / "orders_quarantine").exists()


def test_a_writer_schema_that_widens_a_field_lands_once_the_declared_field_widens(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path) -> None:
    """A producer's new writer schema widens ``clicks`` from int to long; the pipeline's
    declared field widens with it, and with ``delta.enableTypeWidening`` the next run widens
    the column in place: records of both writer versions land, the old rows intact."""
    topic = f"clicks-{uuid.uuid4().hex[:8]}"
    ensure_topic(broker.bootstrap_servers, topic, partitions=1)
    narrow, wide = (V1.replace('"fields": [', f'"fields": [{{"name": "clicks", "type": "{t}"}}, ')
                    for t in ("int", "long"))
    declared = {**DECLARED, "fields": {**DECLARED["fields"], "clicks": {"type": "int"}}}
    with running_registry() as registry:
        client = SchemaRegistryClient({"url": registry.url})
        context = SerializationContext(topic, MessageField.VALUE)
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers})

        def send(schema: str, records: list[dict[str, object]]) -> None:
            serialize = AvroSerializer(client, schema, conf={"auto.register.schemas": True})
            for record in records:
                producer.produce(topic, value=serialize(record, context))
            assert producer.flush(30) == 0

        def config(fields: dict[str, object]) -> PipelineConfig:
            path = write_config(lake, broker.bootstrap_servers, topic,
                                schema={**declared, "fields": fields},
                                source={"format": "avro", "avro": {"registry_url": registry.url}},
                                target={"properties": {"delta.enableTypeWidening": True}})
            return load_config(path, environ={})

        send(narrow, [{**click(i), "clicks": i} for i in range(20)])
        first = config(declared["fields"])
        assert run_pipeline(spark, first, validate=False,
                            progress=lambda _l: None).inserted == 20
        send(wide, [{**click(i), "clicks": 2**40 + i} for i in range(20, 40)])
        said: list[str] = []
        second = config({**declared["fields"], "clicks": {"type": "long"}})
        result = run_pipeline(spark, second, validate=False, progress=said.append)

    assert result.inserted == 20
    assert any(line.endswith("widened in place (delta.enableTypeWidening): clicks int -> bigint")
               for line in said), said
    rows = {r["event_id"]: r["clicks"] for r in second.target.ref.read(spark).collect()}
    assert rows == {f"c-{i}": i if i < 20 else 2**40 + i for i in range(40)}
