"""Scenario 6: replays, backfills under a new pipeline name, and very late duplicates."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from confluent_kafka import Producer
from pyspark.sql import SparkSession

from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import make_event, produce_events
from pipelines.kafka.topics import client_config, ensure_topic
from pipelines.run import run_pipeline
from tests.chaos.conftest import PROFILES, Profile, record
from tests.support.checker import check
from tests.support.configs import make_config


def quiet(_line: str) -> None:
    pass


def version(spark: SparkSession, path: str) -> int:
    from pipelines.storage.tables import TableRef

    return int(TableRef(path=path).history(spark, 1).collect()[0]["version"])


@pytest.mark.parametrize("profile", PROFILES)
def test_rerun_and_backfill_add_nothing(spark: SparkSession, broker: EmbeddedBroker,
                                        lake: Path, topic: str, profile: Profile,
                                        seed: int) -> None:
    bootstrap = broker.bootstrap_servers
    sent = produce_events(bootstrap, topic, profile.small, duplicate_rate=0.1, poison_rate=0.01,
                          seed=seed)
    live = make_config(lake, bootstrap, topic)
    run_pipeline(spark, live, validate=False, progress=quiet)
    target, quarantine = str(live.target.ref.path), str(live.target.quarantine_ref.path)
    versions = (version(spark, target), version(spark, quarantine))

    rerun = run_pipeline(spark, live, validate=False, progress=quiet)
    assert rerun.records_in == 0 and rerun.inserted == 0
    assert (version(spark, target), version(spark, quarantine)) == versions

    # A backfill: another pipeline name (new txnAppId, new checkpoint) from earliest.
    backfill = make_config(lake, bootstrap, topic, name="orders_backfill")
    result = run_pipeline(spark, backfill, validate=False, progress=quiet)
    assert result.records_in == sent.sent and result.inserted == 0
    verdict = check(spark, live, sent.event_ids, sum(sent.poison.values()))
    record("6 rerun + backfill under a new name", profile, verdict, "no-op, inserted 0")
    assert verdict.clean, (seed, verdict)


@pytest.mark.parametrize("profile", PROFILES)
def test_late_duplicates_across_many_partitions_are_dropped(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path, topic: str, profile: Profile,
        seed: int) -> None:
    rng = random.Random(seed)
    bootstrap = broker.bootstrap_servers
    ensure_topic(bootstrap, topic, 3)
    days = 120
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    events = [(f"late-{seed}-{i}", make_event(f"late-{seed}-{i}",
                                              today - timedelta(days=i % days, seconds=i), rng))
              for i in range(profile.small)]
    producer = Producer(client_config(bootstrap))

    def send(batch: list[tuple[str, bytes]]) -> None:
        for key, value in batch:
            producer.produce(topic, key=key.encode(), value=value)
        assert producer.flush(60) == 0

    cfg = make_config(lake, bootstrap, topic, source={"max_records_per_batch": profile.batch})
    half = len(events) // 2
    send(events[:half])
    run_pipeline(spark, cfg, validate=False, progress=quiet)
    dates = cfg.target.ref.read(spark).select("event_date").distinct().count()
    assert dates >= min(days, half) * 0.9
    # Much later: copies of old events (every date), mixed with new ones.
    late = rng.sample(events[:half], max(1, half // 5))
    mixed = late + events[half:]
    rng.shuffle(mixed)
    send(mixed)
    result = run_pipeline(spark, cfg, validate=False, progress=quiet)
    assert result.inserted == len(events) - half
    verdict = check(spark, cfg, [e for e, _ in events], 0)
    record("6 late duplicates over many event_date parts", profile, verdict,
           f"{len(late)} late copies over {dates} dates")
    assert verdict.clean, (seed, verdict)
