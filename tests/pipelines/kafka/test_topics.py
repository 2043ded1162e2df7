"""Kafka admin client settings derived from the pipeline's (Java-style) options."""

from __future__ import annotations

from pipelines.kafka.topics import client_config


def test_java_only_options_are_translated_or_dropped_for_librdkafka() -> None:
    jaas = ('kafkashaded.org.apache.kafka.common.security.plain.PlainLoginModule required '
            'username="svc-orders" password="p\\"w0rd";')
    conf = client_config("broker:9093", {
        "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.jaas.config": jaas,
        "request.timeout.ms": "20000"})
    assert conf == {"bootstrap.servers": "broker:9093", "log_level": 0,
                    "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
                    "sasl.username": "svc-orders", "sasl.password": 'p"w0rd'}


def test_plain_options_pass_through() -> None:
    assert client_config("b:1", {"client.id": "x"})["client.id"] == "x"
