"""Upserts through `deltasink run` on a real broker: shuffled partitions, replays, a crash."""

from __future__ import annotations

import random
import signal
import uuid
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.config.loader import load_config
from pipelines.kafka.broker import EmbeddedBroker
from tests.support.configs import write_config
from tests.support.runner import run
from tests.support.upsert_model import (
    UPSERT,
    make_versions,
    mismatches,
    produce_versions,
    replays,
)


@pytest.mark.slow
@pytest.mark.chaos
def test_upsert_killed_after_its_commit_then_fed_late_versions_converges_to_the_model(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path) -> None:
    """In make chaos; tests/chaos/test_upsert_storm.py kills after_target_commit with late waves."""
    rng = random.Random(21)
    topic = f"upsert-{uuid.uuid4().hex[:8]}"
    first = make_versions(40, (2, 4, 6, 8), rng)
    produce_versions(broker.bootstrap_servers, topic, first, rng, poison=3)
    path = write_config(lake, broker.bootstrap_servers, topic, target=UPSERT,
                        source={"max_records_per_batch": 90})
    cfg = load_config(path, environ={})

    crashed = run(path, fault="after_target_commit@1")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr[-2000:]
    resumed = run(path)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "(replay: already committed, skipped)" in resumed.stdout
    assert mismatches(spark, cfg, first) == []

    late = make_versions(40, (1, 3, 5, 7), rng)  # never seen, all older than seq 8
    newer = make_versions(20, (9, 10), rng)  # half the keys move on
    mixed = late + newer + replays(first, 0.3, rng)
    rng.shuffle(mixed)
    produce_versions(broker.bootstrap_servers, topic, mixed, rng)
    again = run(path)
    assert again.returncode == 0, again.stderr[-2000:]
    assert mismatches(spark, cfg, first + mixed) == []
