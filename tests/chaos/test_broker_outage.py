"""Scenario 3: the broker freezes (SIGSTOP) during a run, shorter and longer than the timeout.

Each test has its own broker, so that freezing it disturbs no other test.
"""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.errors import BrokerError
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import produce_events
from pipelines.kafka.retention import check_retention
from pipelines.run import run_pipeline
from tests.chaos.conftest import PROFILES, Profile, record
from tests.support.checker import check
from tests.support.configs import make_config


class Outage:
    """Freeze the broker when the first batch is reported; thaw it after ``seconds`` (or never)."""

    def __init__(self, broker: EmbeddedBroker, seconds: float | None) -> None:
        self.broker = broker
        self.seconds = seconds
        self.started: float | None = None
        self.lines: list[str] = []

    def __call__(self, line: str) -> None:
        self.lines.append(line)
        if self.started is None and line.startswith("batch "):
            self.started = time.monotonic()
            self.broker.pause()
            if self.seconds is not None:
                threading.Timer(self.seconds, self.broker.resume).start()


@pytest.mark.parametrize("profile", PROFILES)
def test_outage_within_broker_timeout_is_ridden_out(
        spark: SparkSession, own_broker: EmbeddedBroker, lake: Path, topic: str,
        profile: Profile, seed: int) -> None:
    rng = random.Random(seed)
    bootstrap = own_broker.bootstrap_servers
    # Six batches' worth: the first batch is reported (and the broker frozen) after it
    # committed, read from its commit by the client, so batches must be left to freeze under.
    sent = produce_events(bootstrap, topic, profile.small * 6, duplicate_rate=0.1,
                          poison_rate=0.01, seed=seed)
    cfg = make_config(lake, bootstrap, topic,
                      source={"max_records_per_batch": profile.small,
                              "broker_timeout": "120s"})
    seconds = rng.uniform(5, 20)
    outage = Outage(own_broker, seconds)
    result = run_pipeline(spark, cfg, validate=False, progress=outage)
    assert outage.started is not None, "the broker was never paused"
    assert time.monotonic() - outage.started >= seconds  # the run outlived the outage
    assert len(result.batches) >= 2, outage.lines
    verdict = check(spark, cfg, sent.event_ids, sum(sent.poison.values()))
    record("3 broker frozen < broker_timeout", profile, verdict, f"{seconds:.0f}s outage")
    assert verdict.clean, (seed, verdict, outage.lines)


@pytest.mark.parametrize("profile", PROFILES)
def test_outage_beyond_broker_timeout_fails_clearly_and_the_next_run_completes(
        spark: SparkSession, own_broker: EmbeddedBroker, lake: Path, topic: str,
        profile: Profile, seed: int) -> None:
    bootstrap = own_broker.bootstrap_servers
    sent = produce_events(bootstrap, topic, profile.small * 6, duplicate_rate=0.1,
                          poison_rate=0.01, seed=seed)  # batches left to freeze under
    timeout = 15.0
    cfg = make_config(lake, bootstrap, topic,
                      source={"max_records_per_batch": profile.small,
                              "broker_timeout": f"{timeout:.0f}s"})
    outage = Outage(own_broker, None)
    try:
        with pytest.raises(BrokerError) as failed:
            run_pipeline(spark, cfg, validate=False, progress=outage)
        assert outage.started is not None
        took = time.monotonic() - outage.started
    finally:
        own_broker.resume()
    message = str(failed.value)
    print(f"after {took:.0f}s: {message}")
    assert f"Kafka at {bootstrap} was unavailable" in message
    assert "broker_timeout=15s" in message and "run again" in message
    # Bounded: the broker watch notices within the timeout plus a probe (5 s + 5 s), and then
    # stops the query (slow on a loaded machine).
    assert timeout <= took <= timeout + 90, took

    run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)
    verdict = check(spark, cfg, sent.event_ids, sum(sent.poison.values()))
    record("3 broker frozen > broker_timeout, rerun", profile, verdict,
           f"BrokerError after {took:.0f}s")
    assert verdict.clean, (seed, verdict, outage.lines)


def test_the_retention_check_rides_out_a_broker_that_answers_within_broker_timeout(
        spark: SparkSession, own_broker: EmbeddedBroker, lake: Path, topic: str) -> None:
    """make test saw a rerun fail right after an outage: its offsets request ("No leaders
    found") had a fixed 10 s, where the run's start waits up to ``source.broker_timeout``."""
    produce_events(own_broker.bootstrap_servers, topic, 10, seed=1, partitions=1)
    cfg = make_config(lake, own_broker.bootstrap_servers, topic, source={"broker_timeout": "90s"})
    own_broker.pause()
    threading.Timer(14.0, own_broker.resume).start()  # longer than one 10 s request
    started = time.monotonic()
    check_retention(spark, cfg, {topic: {0: 0}}, lambda _l: None, {topic: [0]})  # no raise
    assert time.monotonic() - started >= 10  # it waited for the broker instead of failing
