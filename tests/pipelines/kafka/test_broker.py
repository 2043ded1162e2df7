"""The embedded broker: cluster ids, and data that survives a restart on the same folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from pipelines.kafka.broker import EmbeddedBroker, free_port_pair
from pipelines.kafka.broker_files import new_cluster_id
from pipelines.kafka.topics import ensure_topic


def test_cluster_ids_never_look_like_options() -> None:
    ids = [new_cluster_id() for _ in range(2000)]
    assert not any(i.startswith("-") for i in ids)
    assert all(len(i) == 22 for i in ids)


@pytest.mark.extended
@pytest.mark.slow  # starts a broker of its own, twice
def test_stop_and_start_on_the_same_folder_keeps_every_record(tmp_path: Path) -> None:
    node = EmbeddedBroker.at(tmp_path / "broker", port=free_port_pair()).start()
    try:
        ensure_topic(node.bootstrap_servers, "kept", 2)
        producer = Producer({"bootstrap.servers": node.bootstrap_servers, "log_level": 0})
        for i in range(100):
            producer.produce("kept", value=b"%d" % i, partition=i % 2)
        assert producer.flush(30) == 0
        assert node.stop()
        assert node.pid is None
        again = EmbeddedBroker.at(tmp_path / "broker").start()  # the port is remembered
        assert again.port == node.port
        consumer = Consumer({"bootstrap.servers": again.bootstrap_servers, "group.id": "t",
                             "log_level": 0})
        ends = [consumer.get_watermark_offsets(TopicPartition("kept", p), timeout=10)[1]
                for p in (0, 1)]
        consumer.close()
        assert ends == [50, 50]
    finally:
        EmbeddedBroker.at(tmp_path / "broker").stop()
