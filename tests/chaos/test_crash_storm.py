"""Scenario 1: SIGKILL `deltasink run` at random moments and at every named fault point."""

from __future__ import annotations

import random
import signal
import time
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.broker import EmbeddedBroker
from pipelines.config_loader import load_config
from pipelines.produce import produce_events
from tests.chaos.conftest import PROFILES, Profile, record
from tests.support import runner
from tests.support.checker import check
from tests.support.configs import write_config


@pytest.mark.parametrize("profile", PROFILES)
def test_crash_storm_loses_and_duplicates_nothing(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path, topic: str, profile: Profile,
        seed: int) -> None:
    rng = random.Random(seed)
    bootstrap = broker.bootstrap_servers
    path = write_config(lake, bootstrap, topic,
                        source={"max_records_per_batch": profile.batch},
                        quality={"max_quarantine_ratio": 0.5})
    cfg = load_config(path, environ={})
    crashes = [("kill", "")] * profile.kills + [("fault", p) for p in profile.points]
    rng.shuffle(crashes)
    per_wave = max(1, profile.events // len(crashes))
    ids: list[str] = []
    poison = 0
    run_time = 60.0  # estimate of one uninterrupted run; adapted to what we measure
    log: list[str] = []
    for wave, (kind, point) in enumerate(crashes):
        sent = produce_events(bootstrap, topic, per_wave, duplicate_rate=0.1, poison_rate=0.01,
                              seed=seed + wave, id_prefix=f"w{wave}")
        ids += sent.event_ids
        poison += sum(sent.poison.values())
        started = time.monotonic()
        if kind == "kill":
            delay = rng.uniform(0.2, 1.0) * run_time
            done = runner.run(path, kill_after=delay)
            log.append(f"wave {wave}: kill after {delay:.0f}s -> rc {done.returncode}")
        else:
            done = runner.run(path, fault=point, validate=point == "during_validation")
            log.append(f"wave {wave}: fault {point} -> rc {done.returncode}")
            assert done.returncode == -signal.SIGKILL, (seed, point, done.stderr[-2000:])
            assert f"injected fault at {point}" in done.stderr
        assert done.returncode in (0, -signal.SIGKILL), (seed, log, done.stderr[-2000:])
        if done.returncode == 0:
            run_time = time.monotonic() - started
    # A producer replay of the first wave, long after it landed.
    produce_events(bootstrap, topic, per_wave, duplicate_rate=0.1, poison_rate=0.0,
                   seed=seed, id_prefix="w0")
    final = runner.run(path)
    assert final.returncode == 0, (seed, log, final.stderr[-2000:])
    verdict = check(spark, cfg, ids, poison)
    kills = sum(1 for line in log if "rc -9" in line)
    record("1 crash storm (random SIGKILL + fault points)", profile, verdict,
           f"{len(ids)} events, {kills} kills, seed {seed}")
    print("\n".join(log))
    assert verdict.clean, (seed, verdict, log)
