"""Scenario 1: SIGKILL `deltasink run` at random moments and at every named fault point."""

from __future__ import annotations

import random
import signal
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.config.loader import load_config
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import produce_events
from tests.chaos.conftest import LONG, SHORT, Profile, record
from tests.support import runner
from tests.support.checker import check
from tests.support.configs import write_config

#: Both profiles run in ``make chaos`` only: the storm is the suite's longest test, and
#: ``make test`` keeps a SIGKILL after the target commit and its restart in
#: ``tests/pipelines/test_bookkeeping.py`` (``tests/pipelines/test_crash.py`` is in ``make chaos``).
#: ``short-connect``: the short storm through Spark's own Connect server (``spark.remote``).
STORM = [pytest.param(SHORT, False, marks=pytest.mark.chaos, id="short"),
         pytest.param(LONG, False, marks=pytest.mark.chaos, id="long"),
         pytest.param(SHORT, True, marks=pytest.mark.chaos, id="short-connect")]

#: Fault points inside the batch body: under Spark Connect it runs in the server's Python
#: worker, so the fault kills that worker (as a lost driver would), and the client exits 1.
IN_BATCH = ("before_quarantine_commit", "after_quarantine_commit", "before_target_commit",
            "after_target_commit")


@pytest.mark.parametrize(("profile", "connect"), STORM)
def test_crash_storm_loses_and_duplicates_nothing(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path, topic: str, profile: Profile,
        seed: int, connect: bool, request: pytest.FixtureRequest) -> None:
    rng = random.Random(seed)
    bootstrap = broker.bootstrap_servers
    remote = {"spark": {"remote": request.getfixturevalue("connect_server").url}} \
        if connect else {}
    path = write_config(lake, bootstrap, topic,
                        source={"max_records_per_batch": profile.batch},
                        quality={"max_quarantine_ratio": 0.5}, **remote)
    cfg = load_config(path, environ={})
    lock = Path(cfg.checkpoint) / ".deltasink.lock"
    points = list(profile.points)
    per_wave = max(1, profile.events // (profile.kills + len(points)))
    ids: list[str] = []
    poison = 0
    kills = 0
    stream_est = 20.0  # seconds a run streams before it is done; adapted as runs finish early
    log: list[str] = []
    for wave in range(2 * (profile.kills + len(points))):
        if kills >= profile.kills and not points:
            break
        sent = produce_events(bootstrap, topic, per_wave, duplicate_rate=0.1, poison_rate=0.01,
                              seed=seed + wave, id_prefix=f"w{wave}")
        ids += sent.event_ids
        poison += sum(sent.poison.values())
        if points and (kills >= profile.kills or rng.random() < 0.3):
            point = points.pop(rng.randrange(len(points)))
            done = runner.run(path, fault=point, validate=point == "during_validation")
            log.append(f"wave {wave}: fault {point} -> rc {done.returncode}")
            if connect and point in IN_BATCH:
                assert done.returncode == 1, (seed, point, done.stderr[-2000:])
            else:
                assert done.returncode == -signal.SIGKILL, (seed, point, done.stderr[-2000:])
                assert f"injected fault at {point}" in done.stderr
            continue
        if rng.random() < 0.2:  # during start-up: Spark, preflight, table checks
            delay = rng.uniform(1, 20)
            done = runner.run(path, kill_after=delay)
            when = f"{delay:.1f}s after start"
        else:  # while streaming: anywhere in a batch, a commit, or between them
            delay = rng.uniform(0, stream_est)
            done = runner.run(path, kill_after=delay, kill_after_lock=lock)
            when = f"{delay:.1f}s into streaming"
        assert done.returncode in (0, -signal.SIGKILL), (seed, log, done.stderr[-2000:])
        log.append(f"wave {wave}: kill {when} -> rc {done.returncode}")
        if done.returncode == 0:
            stream_est *= 0.7
        else:
            kills += 1
            stream_est = min(stream_est * 1.1, 120.0)
    assert kills >= profile.kills and not points, (seed, log)
    # A producer replay of the first wave, long after it landed.
    produce_events(bootstrap, topic, per_wave, duplicate_rate=0.1, poison_rate=0.0,
                   seed=seed, id_prefix="w0")
    final = runner.run(path)
    assert final.returncode == 0, (seed, log, final.stderr[-2000:])
    verdict = check(spark, cfg, ids, poison)
    record("1 crash storm (random SIGKILL + fault points)"
           + (", through Spark Connect" if connect else ""), profile, verdict,
           f"{len(ids)} events, {kills} random kills + {len(profile.points)} fault "
           f"points, seed {seed}")
    print("\n".join(log))
    assert verdict.clean, (seed, verdict, log)
