"""Crashes at named points of a batch, in a real `deltasink run` process killed with SIGKILL."""

from __future__ import annotations

import signal
import uuid
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.config.loader import load_config
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import produce_events
from pipelines.ledger import state
from tests.support.checker import check
from tests.support.configs import write_config
from tests.support.runner import run


@pytest.mark.slow
@pytest.mark.chaos
@pytest.mark.parametrize("point", ["after_quarantine_commit", "after_target_commit"])
def test_kill_mid_batch_then_restart_leaves_no_duplicate_and_no_gap(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path, point: str) -> None:
    """Both kills run in make chaos (as does test_crash_storm.py[long]'s storm of them).

    ``make test`` keeps the same SIGKILL after the target commit, with these assertions and the
    backfill's, in ``tests/pipelines/test_bookkeeping.py``: one restart serves both.
    """
    topic = f"crash-{uuid.uuid4().hex[:8]}"
    sent = produce_events(broker.bootstrap_servers, topic, 1500, duplicate_rate=0.1,
                          poison_rate=0.02, seed=9)
    path = write_config(lake, broker.bootstrap_servers, topic,
                        source={"max_records_per_batch": 500})
    cfg = load_config(path, environ={})

    crashed = run(path, fault=f"{point}@1")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr[-2000:]
    assert f"injected fault at {point} (batch 1)" in crashed.stderr
    checkpoint = Path(cfg.checkpoint)
    assert (checkpoint / "offsets" / "1").exists()  # batch 1 was planned ...
    assert not (checkpoint / "commits" / "1").exists()  # ... and never committed by Spark
    committed = {c.batch_id for c in state.sink_commits(spark, cfg.target.ref, cfg.name)}
    assert (1 in committed) == (point == "after_target_commit")

    resumed = run(path)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    if point == "after_target_commit":
        assert "batch 1: " in resumed.stdout and "(replay: already committed, skipped)" in \
            resumed.stdout
    verdict = check(spark, cfg, sent.event_ids, sum(sent.poison.values()))
    assert verdict.clean, verdict
