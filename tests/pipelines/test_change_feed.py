"""The change data feed of a target with ``delta.enableChangeDataFeed`` (``target.properties``),
read back after real runs against the session broker: each batch's changes appear once, in the
version its commit made, whatever the copies in the topic and a batch Spark replays.

A replay is made as in test_run.py: the checkpoint's last commit is deleted, so Spark runs that
batch again with the same id and offsets, and Delta skips its commit (txn): no version, no
change rows. Upsert deletes are tombstones (``_deleted = true``, pipelines/sink/modes/upsert.py): in
the feed a key's delete is its update (or insert) whose image has ``_deleted`` true.
"""

from __future__ import annotations

import random
import uuid
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.config.model import PipelineConfig
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import produce_events
from pipelines.run import run_pipeline
from pipelines.sink.metrics import RunResult
from tests.support.configs import make_config
from tests.support.upsert_model import UPSERT, make_versions, mismatches, model, produce_versions

CDF = {"delta.enableChangeDataFeed": True}


def feed(spark: SparkSession, cfg: PipelineConfig) -> DataFrame:
    """The target's change data feed from its first version."""
    return (spark.read.format("delta").option("readChangeFeed", "true")
            .option("startingVersion", 0).load(cfg.target.path))


def replay_last_batch(cfg: PipelineConfig) -> int:
    """Forget the checkpoint's last batch commit (Spark runs that batch again); its id."""
    commits = sorted((p for p in (Path(cfg.checkpoint) / "commits").iterdir()
                      if p.name.isdigit()), key=lambda p: int(p.name))
    commits[-1].unlink()
    (commits[-1].parent / f".{commits[-1].name}.crc").unlink(missing_ok=True)
    return int(commits[-1].name)


def committed(*runs: RunResult) -> dict[int, Any]:
    """Target version -> the batch that committed it, over ``runs``."""
    return {b.target_version: b for r in runs for b in r.batches
            if not b.replayed and b.target_version is not None}


def run(spark: SparkSession, cfg: PipelineConfig) -> RunResult:
    return run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)


def test_each_batchs_inserts_are_in_the_feed_once_across_copies_and_a_replay(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path) -> None:
    topic = f"cdf-{uuid.uuid4().hex[:8]}"
    cfg = make_config(lake, broker.bootstrap_servers, topic, target={"properties": CDF},
                      source={"max_records_per_batch": 150})
    first = produce_events(broker.bootstrap_servers, topic, 300, duplicate_rate=0.2, seed=62)
    before = run(spark, cfg)
    assert len(before.batches) >= 3  # copies fall in one batch and in later ones
    replayed = replay_last_batch(cfg)
    more = produce_events(broker.bootstrap_servers, topic, 100, duplicate_rate=0.2, seed=63,
                          id_prefix="more")
    after = run(spark, cfg)
    assert after.batches[0].replayed and after.batches[0].batch_id == replayed

    changes = feed(spark, cfg).select("event_id", "_change_type", "_commit_version").collect()
    assert {r["_change_type"] for r in changes} == {"insert"}
    ids = Counter(r["event_id"] for r in changes)
    assert set(ids) == set(first.event_ids) | set(more.event_ids)
    assert set(ids.values()) == {1}  # every event once, its copies never
    per_version = Counter(r["_commit_version"] for r in changes)
    batches = committed(before, after)
    assert per_version == {v: b.inserted for v, b in batches.items() if b.inserted}
    assert sum(b.inserted for b in batches.values()) == len(ids)


def test_an_upserts_inserts_updates_and_deletes_are_in_the_feed_once(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path) -> None:
    """Each batch's inserts and updates are its version's change rows (an update as a
    pre- and a post-image); a key's images climb its sequence (``event_time``, then the Kafka
    coordinates), each record at most once, and its last image is the model's latest version,
    tombstone or not.

    A producer copy of a version sent after it sits at a higher Kafka offset, which the upsert
    order counts as newer (pipelines/sink/modes/upsert.py): it lands as one more update, with the
    same payload and new ``kafka_*`` columns. So the feed holds each record once, not each
    payload: a reader that wants payload changes only compares the images."""
    rng = random.Random(62)
    topic = f"cdf-upsert-{uuid.uuid4().hex[:8]}"
    cfg = make_config(lake, broker.bootstrap_servers, topic,
                      target={**UPSERT, "properties": CDF}, source={"max_records_per_batch": 50})
    versions = make_versions(30, range(1, 4), rng)
    sent = versions + rng.sample(versions, 20)  # producer copies
    produce_versions(broker.bootstrap_servers, topic, sent, rng)
    before = run(spark, cfg)
    replay_last_batch(cfg)
    later = make_versions(30, range(4, 6), rng)
    produce_versions(broker.bootstrap_servers, topic, later, rng)
    after = run(spark, cfg)
    assert after.batches[0].replayed
    assert mismatches(spark, cfg, sent + later) == []

    rows = (feed(spark, cfg).select(
        "event_id", "_deleted", "_change_type", "_commit_version", "kafka_partition",
        "kafka_offset", F.get_json_object("payload", "$.v").cast("int").alias("v")).collect())
    batches = committed(before, after)
    kinds: dict[int, Counter[str]] = defaultdict(Counter)
    for r in rows:
        kinds[r["_commit_version"]][r["_change_type"]] += 1
    for version, batch in batches.items():
        assert kinds.pop(version, Counter()) == Counter(
            {k: n for k, n in (("insert", batch.inserted), ("update_preimage", batch.updated),
                               ("update_postimage", batch.updated)) if n}), version
    assert not kinds  # no change rows outside the batches' own versions
    images: dict[str, list[tuple[int, tuple[int, int, int], bool]]] = defaultdict(list)
    for r in rows:
        if r["_change_type"] in ("insert", "update_postimage"):
            images[r["event_id"]].append((r["_commit_version"], (
                r["v"], r["kafka_partition"], r["kafka_offset"]), r["_deleted"]))
    latest = model(sent + later)
    for key, seen in images.items():
        seen.sort()
        steps = [order for _, order, _ in seen]
        assert steps == sorted(set(steps)), (key, seen)  # upwards, each record once
        assert (seen[-1][1][0], seen[-1][2]) == latest[key]
    assert set(images) == set(latest)
    assert any(deleted for _, deleted in latest.values())  # deletes were in the feed too
