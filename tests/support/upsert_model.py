"""Versions of keys for upsert tests, the Python model of the table they must converge to.

A version is ``(key, seq)``: its ``event_time`` is ``BASE + seq * 7h`` (so versions of one key
fall on different event dates and the row moves partition), ``payload.v = seq``, and
``event_type`` is ``deleted`` for a delete. The model keeps, per key, the highest ``seq`` ever
ingested; the target must hold exactly that version of every key, one row per key.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from collections.abc import Iterable
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.config.model import PipelineConfig

BASE = dt.datetime(2026, 3, 1, 12, tzinfo=dt.UTC)
#: The upsert settings every test uses (sequence on event_time; deletes by event_type).
UPSERT = {"mode": "upsert", "sequence_by": "event_time",
          "delete_when": "event_type = 'deleted'", "partition_by": ["event_date"],
          "dedup_window": "0d"}


@dataclass(frozen=True)
class Version:
    """One version of a key."""

    key: str
    seq: int
    deleted: bool = False

    def value(self) -> bytes:
        """The Kafka record value (an events_v1 JSON event)."""
        when = BASE + dt.timedelta(hours=7 * self.seq)
        return json.dumps({"event_id": self.key,
                           "event_type": "deleted" if self.deleted else "upserted",
                           "event_time": when.isoformat().replace("+00:00", "Z"),
                           "payload": {"v": self.seq}}).encode()


def make_versions(keys: int, seqs: Iterable[int], rng: random.Random, prefix: str = "k",
                  delete_share: float = 0.2) -> list[Version]:
    """A version of each of ``keys`` keys at each sequence of ``seqs``, some deletes, shuffled.

    A (key, seq) pair must be made once only: two different versions with one sequence would
    tie, and the table breaks ties by Kafka coordinates, which the model does not know.
    """
    steps = list(seqs)
    out = [Version(f"{prefix}{k}", s, rng.random() < delete_share)
           for k in range(keys) for s in steps]
    rng.shuffle(out)
    return out


def replays(versions: list[Version], share: float, rng: random.Random) -> list[Version]:
    """A random ``share`` of ``versions`` sent again (a producer retry, a re-emit), shuffled."""
    out = rng.sample(versions, int(len(versions) * share))
    rng.shuffle(out)
    return out


def model(ingested: Iterable[Version]) -> dict[str, tuple[int, bool]]:
    """key -> (seq, deleted) of the highest-sequence version ingested."""
    best: dict[str, Version] = {}
    for v in ingested:
        if v.key not in best or v.seq > best[v.key].seq:
            best[v.key] = v
    return {k: (v.seq, v.deleted) for k, v in best.items()}


def table_state(spark: SparkSession, config: PipelineConfig) -> dict[str, list[tuple[int, bool]]]:
    """key -> every (payload.v, _deleted) row of the key in the target (one, if unique)."""
    rows = (config.target.ref.read(spark)
            .select("event_id", F.get_json_object("payload", "$.v").cast("int").alias("v"),
                    "_deleted", "event_type").collect())
    out: dict[str, list[tuple[int, bool]]] = {}
    for r in rows:
        assert (r["event_type"] == "deleted") == r["_deleted"], r
        out.setdefault(r["event_id"], []).append((int(r["v"]), bool(r["_deleted"])))
    return out


def mismatches(spark: SparkSession, config: PipelineConfig,
               ingested: Iterable[Version]) -> list[str]:
    """Where the target differs from the model (empty: converged), one line per key."""
    want = model(ingested)
    have = table_state(spark, config)
    bad = [f"{k}: want {want.get(k)}, have {have.get(k)}"
           for k in sorted(want.keys() | have.keys())
           if have.get(k) != ([want[k]] if k in want else None)]
    return bad


def kafka_rows(spark: SparkSession, versions: list[Version], first_offset: int,
               topic: str = "orders", partitions: int = 1) -> DataFrame:
    """``versions`` shaped like Spark's Kafka source rows, at consecutive offsets."""
    rows = []
    for i, v in enumerate(versions):
        stamp = dt.datetime(2026, 3, 1) + dt.timedelta(seconds=first_offset + i)
        rows.append((v.key.encode(), v.value(), topic, (first_offset + i) % partitions,
                     first_offset + i, stamp, 0))
    return spark.createDataFrame(rows, "key binary, value binary, topic string, partition int, "
                                       "offset long, timestamp timestamp, timestampType int")


def produce_versions(bootstrap: str, topic: str, versions: list[Version], rng: random.Random,
                     partitions: int = 3, poison: int = 0) -> None:
    """Send ``versions`` in order, each to a random partition (so order across them is lost).

    ``poison`` records that are not JSON go along (quarantined, never in the model).
    """
    from confluent_kafka import Producer

    from pipelines.kafka.topics import client_config, ensure_topic

    ensure_topic(bootstrap, topic, partitions)
    producer = Producer({**client_config(bootstrap), "enable.idempotence": True})
    for v in versions:
        producer.produce(topic, key=v.key.encode(), value=v.value(),
                         partition=rng.randrange(partitions))
    for _ in range(poison):
        producer.produce(topic, value=b"not json", partition=rng.randrange(partitions))
    if producer.flush(60):
        raise RuntimeError(f"records were not delivered to {topic}")
