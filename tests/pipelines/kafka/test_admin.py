"""Metadata and offsets through the driver JVM's Java Kafka client, on the plain broker."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.errors import BrokerError, ConfigError
from pipelines.kafka import identity, topics
from pipelines.kafka.broker import EmbeddedBroker, free_port_pair
from pipelines.kafka.produce import produce_events
from tests.support.configs import make_config


def test_list_partitions_and_watermarks_come_from_the_java_client(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path) -> None:
    sent = produce_events(broker.bootstrap_servers, "admin-marks", 30, partitions=3, seed=11)
    source = make_config(lake, broker.bootstrap_servers, "admin-marks").source
    partitions = topics.wait_for_source(spark, source, 10.0)
    assert partitions == {"admin-marks": [0, 1, 2]}
    marks = topics.watermarks(spark, source, partitions)
    assert set(marks) == {("admin-marks", p) for p in range(3)}
    assert sum(high - low for low, high in marks.values()) == sent.sent == 30


def test_deleted_offsets_and_identity_use_the_java_client(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path) -> None:
    produce_events(broker.bootstrap_servers, "admin-ids", 5, partitions=2, seed=12)
    source = make_config(lake, broker.bootstrap_servers, "admin-ids").source
    assert topics.deleted_offsets(spark, source, {"admin-ids": {0: 0, 1: 0}}) == {}
    now = identity.describe(spark, source, ["admin-ids"])
    assert now.cluster_id and len(now.topic_ids["admin-ids"]) == 22  # a base64 Kafka Uuid


def test_an_unknown_java_only_option_value_is_one_line_config_error(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path) -> None:
    source = make_config(lake, broker.bootstrap_servers, "admin-bad", source={
        "options": {"sasl.login.callback.handler.class": "com.example.NoSuchHandler"}}).source
    with pytest.raises(ConfigError) as caught:
        topics.list_partitions(spark, source)
    message = str(caught.value)
    assert "ConfigException" in message and "sasl.login.callback.handler.class" in message
    assert "could not be found" in message
    assert "com.example.NoSuchHandler" in message  # a class name is no secret: shown
    assert "\n" not in message and "\tat " not in message


def test_an_unreachable_broker_is_a_broker_error_with_kafkas_reason(
        spark: SparkSession, lake: Path) -> None:
    nowhere = f"127.0.0.1:{free_port_pair()}"
    source = make_config(lake, nowhere, "admin-none").source
    with pytest.raises(BrokerError) as caught:
        topics.list_partitions(spark, source, timeout=2.0)
    assert "TimeoutException" in str(caught.value) and "\n" not in str(caught.value)
