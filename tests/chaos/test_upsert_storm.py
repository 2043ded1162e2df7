"""Upsert under crashes: SIGKILL at every batch fault point, with shuffled and replayed input.

Each wave sends new versions of the same keys (shuffled across partitions), replays of earlier
ones and a few poison pills, crashes a run at one fault point, and reruns it. At the end the
target must equal the Python model: per key, the highest-sequence version ingested, once.
"""

from __future__ import annotations

import random
import signal
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.config.loader import load_config
from pipelines.kafka.broker import EmbeddedBroker
from tests.support import runner
from tests.support.configs import write_config
from tests.support.upsert_model import (
    UPSERT,
    Version,
    make_versions,
    mismatches,
    produce_versions,
    replays,
)

POINTS = ("before_quarantine_commit", "after_quarantine_commit", "before_target_commit",
          "after_target_commit")


@pytest.mark.chaos
def test_upsert_crash_storm_converges_to_the_model(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path, topic: str, seed: int) -> None:
    rng = random.Random(seed)
    path = write_config(lake, broker.bootstrap_servers, topic, target=UPSERT,
                        source={"max_records_per_batch": 2_000})
    cfg = load_config(path, environ={})
    sent: list[Version] = []
    waves = list(enumerate(POINTS * 2))
    order = rng.sample(range(len(waves)), len(waves))  # a later wave may carry older versions
    for wave, point in waves:
        fresh = make_versions(2_000, range(3 * order[wave] + 1, 3 * order[wave] + 4), rng)
        batch = fresh + replays(sent, 0.2, rng)
        rng.shuffle(batch)
        produce_versions(broker.bootstrap_servers, topic, batch, rng, poison=5)
        sent += batch
        crashed = runner.run(path, fault=point)
        assert crashed.returncode == -signal.SIGKILL, (wave, point, crashed.stderr[-2000:])
        resumed = runner.run(path)
        assert resumed.returncode == 0, (wave, point, resumed.stderr[-2000:])
    assert mismatches(spark, cfg, sent) == []
