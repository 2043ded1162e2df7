"""A topic's records as a CDC test reads them: key and value as text, with their coordinates.

The same shape is the corpus format of ``tests/data/debezium/`` (JSON Lines, one record a line:
``{"key", "value", "topic", "partition", "offset"}``, key and value the message's bytes as UTF-8
text, or null for a null key or a tombstone's null value).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition


@dataclass(frozen=True)
class TopicRecord:
    """One Kafka record, its bytes decoded as UTF-8."""

    key: str | None
    value: str | None
    topic: str
    partition: int
    offset: int

    def value_json(self) -> Any:
        """The value parsed as JSON (None for a tombstone)."""
        return None if self.value is None else json.loads(self.value)

    def key_json(self) -> Any:
        """The key parsed as JSON (None for a null key)."""
        return None if self.key is None else json.loads(self.key)


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8")


def read_topic(bootstrap: str, topic: str, timeout: float = 30.0) -> list[TopicRecord]:
    """Every record of ``topic`` now (up to each partition's high watermark), in partition and
    offset order; empty if the topic does not exist."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "cdc-tests-reader",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    try:
        meta = consumer.list_topics(topic, timeout=10).topics.get(topic)
        if meta is None or meta.error is not None or not meta.partitions:
            return []
        ends = {}
        for partition in meta.partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition),
                                                       timeout=10)
            if high > low:
                ends[partition] = high
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in ends])
        records: list[TopicRecord] = []
        deadline = time.monotonic() + timeout
        while any(ends.values()) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            partition, offset = message.partition() or 0, message.offset() or 0
            records.append(TopicRecord(_text(message.key()), _text(message.value()), topic,
                                       partition, offset))
            if offset + 1 >= ends[partition]:
                ends[partition] = 0
        if any(ends.values()):
            raise TimeoutError(f"read {len(records)} records of {topic}, not all, in {timeout}s")
        return sorted(records, key=lambda r: (r.partition, r.offset))
    finally:
        consumer.close()


def wait_for_records(bootstrap: str, topic: str, count: int,
                     timeout: float = 120.0) -> list[TopicRecord]:
    """Wait until ``topic`` holds at least ``count`` records; return them all.

    Raises:
        TimeoutError: fewer than ``count`` after ``timeout`` seconds (with how many there were).
    """
    deadline = time.monotonic() + timeout
    while True:
        records = read_topic(bootstrap, topic)
        if len(records) >= count:
            return records
        if time.monotonic() > deadline:
            raise TimeoutError(f"{topic} holds {len(records)} records, not {count}, "
                               f"after {timeout:.0f}s")
        time.sleep(0.5)


def write_jsonl(path: Path, records: list[TopicRecord]) -> None:
    """Write ``records`` as JSON Lines, one record a line (the corpus format)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(asdict(r), ensure_ascii=False) + "\n" for r in records))


def read_jsonl(path: Path) -> list[TopicRecord]:
    """The records of a JSON Lines file :func:`write_jsonl` wrote."""
    return [TopicRecord(**json.loads(line)) for line in path.read_text().splitlines() if line]
