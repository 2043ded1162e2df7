"""Redrive under SIGKILL: a large quarantine of fixable records, redriven across many crashes.

A legacy producer's events (no ``event_type``, ``dd.MM.yyyy`` times) are quarantined under
``events_v1``. After the switch to ``events_v2``, ``deltasink quarantine redrive`` is killed at
random moments and at both fault points, then run to completion. The checker must find every
event exactly once, every poison pill still quarantined once, every legacy row marked, and the GX
suite must pass. Long profile only (``make chaos``); ``tests/pipelines/ops/test_redrive.py``
covers both fault points in ``make test``.
"""

from __future__ import annotations

import random
import signal
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.config.loader import load_config
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import produce_events
from quality.validate import validate_table
from tests.chaos.conftest import LONG, Profile, record
from tests.support import runner
from tests.support.checker import check
from tests.support.configs import write_config

#: Legacy-format events as a share of the profile's events: a large quarantine to redrive.
LEGACY = 0.2
#: What a redrive prints when it had nothing to commit (the fault points are then not reached).
NOTHING_LEFT = "redriven=0 inserted=0 "


@pytest.mark.chaos
@pytest.mark.parametrize("profile", [LONG], ids=["long"])
def test_redrive_storm_lands_each_quarantined_record_once(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path, topic: str, profile: Profile,
        seed: int) -> None:
    rng = random.Random(seed)
    bootstrap = broker.bootstrap_servers
    quality = {"max_quarantine_ratio": 0.5}
    v1 = write_config(lake, bootstrap, topic, source={"max_records_per_batch": profile.batch},
                      quality=quality)
    sent = produce_events(bootstrap, topic, profile.events, duplicate_rate=0.1,
                          poison_rate=0.01, seed=seed, legacy_rate=LEGACY)
    poison, legacy = sum(sent.poison.values()), len(sent.legacy_ids)
    done = runner.run(v1)
    assert done.returncode == 0, done.stderr[-2000:]
    cfg = load_config(v1, environ={})
    assert check(spark, cfg, sent.event_ids, poison + legacy).clean

    v2 = write_config(lake, bootstrap, topic, schema="events_v2",
                      source={"max_records_per_batch": profile.batch}, quality=quality)
    cfg = load_config(v2, environ={})
    args = ("quarantine", "redrive", "--config", str(v2))
    log: list[str] = []
    points = ["before_redrive_commit", "after_redrive_commit"]
    for attempt in range(profile.kills // 3):
        if points and rng.random() < 0.3:
            point = points.pop(rng.randrange(len(points)))
            killed = runner.deltasink(*args, fault=point)
            log.append(f"{attempt}: fault {point} -> rc {killed.returncode}")
            if killed.returncode == 0 and NOTHING_LEFT in killed.stdout:
                continue  # an earlier run redrove everything: no commit left to crash at
            assert killed.returncode == -signal.SIGKILL, (seed, point, killed.stderr[-2000:])
            continue
        delay = rng.uniform(2, 40)
        killed = runner.deltasink(*args, kill_after=delay)
        log.append(f"{attempt}: kill after {delay:.1f}s -> rc {killed.returncode}")
        assert killed.returncode in (0, -signal.SIGKILL), (seed, killed.stderr[-2000:])
    for point in points:  # the fault points not drawn yet
        killed = runner.deltasink(*args, fault=point)
        log.append(f"fault {point} -> rc {killed.returncode}")
    finished = runner.deltasink(*args)
    assert finished.returncode == 0, (seed, log, finished.stderr[-2000:])

    verdict = check(spark, cfg, [*sent.event_ids, *sent.legacy_ids], poison + legacy)
    record("redrive storm (SIGKILL mid-redrive)", profile, verdict,
           f"{legacy} legacy records, {len(log)} interrupted redrives")
    assert verdict.clean, (seed, verdict, log)
    quarantine = cfg.target.quarantine_ref.read(spark)
    assert quarantine.where("redriven_at IS NOT NULL").count() == legacy, (seed, log)
    assert quarantine.where("redriven_at IS NULL").count() == poison, (seed, log)
    report = validate_table(spark, cfg, full=True)
    assert report.success, report.summary_lines()
