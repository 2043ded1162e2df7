"""deltasink as a Spark Connect client (``spark.remote``) of Spark's own Connect server.

Every run here is a ``deltasink`` process with ``spark.remote`` set: it starts no JVM of its own,
and its ``foreachBatch`` body runs in a Python worker that the server started. The tables are
checked afterwards from this (classic) test process, with ``tests/support/checker.py``.
"""

from __future__ import annotations

import json
import re
import signal
import uuid
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.config.loader import load_config
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import ProduceSummary, produce_events
from pipelines.runtime.connect_server import ConnectServer
from tests.support import runner
from tests.support.checker import check
from tests.support.configs import write_config
from tests.support.crashes import assert_killed_over_connect_after_the_target_commit_of_batch_1

pytestmark = pytest.mark.slow


def connect_pipeline(lake: Path, broker: EmbeddedBroker, server: ConnectServer, *,
                     per_batch: int, events: int, seed: int) -> tuple[Path, ProduceSummary]:
    """A new topic with ``events`` events (10% copies, 1% poison), and a config that lands it
    through ``server`` in batches of ``per_batch`` records."""
    topic = f"connect-{uuid.uuid4().hex[:8]}"
    path = write_config(lake, broker.bootstrap_servers, topic, spark={"remote": server.url},
                        source={"max_records_per_batch": per_batch})
    sent = produce_events(broker.bootstrap_servers, topic, events, duplicate_rate=0.1,
                          poison_rate=0.01, seed=seed)
    return path, sent


def test_a_run_through_spark_connect_lands_every_event_once_across_a_kill(
        connect_server: ConnectServer, broker: EmbeddedBroker, lake: Path,
        request: pytest.FixtureRequest) -> None:
    # ~333 records at 150 a batch: 3 batches, so the kill after batch 1 leaves one to come.
    path, sent = connect_pipeline(lake, broker, connect_server, per_batch=150, events=300,
                                  seed=23)

    # Killed after the target commit of batch 1, before Spark commits its checkpoint: under
    # Connect the fault kills the server's batch worker, as a lost driver would.
    spark: SparkSession = request.getfixturevalue("spark")
    cfg = load_config(path, environ={})
    seen: set[str] = set()
    killed = runner.run(path, fault="after_target_commit@1", children=seen)
    assert "java" not in seen, f"the client started a JVM: {sorted(seen)}"
    assert_killed_over_connect_after_the_target_commit_of_batch_1(spark, cfg, killed)

    done = runner.run(path, validate=True, children=seen)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "java" not in seen, f"the client started a JVM: {sorted(seen)}"
    assert "quality PASSED" in done.stdout, done.stdout[-3000:]
    assert "(replay: already committed, skipped)" in done.stdout, done.stdout[-3000:]
    assert (Path(cfg.checkpoint) / "commits" / "2").exists()  # the run went on past batch 1

    status = runner.deltasink("status", "--config", str(path), "--json")
    assert status.returncode == 0, status.stderr[-2000:]
    state = json.loads(status.stdout)
    assert state["in_sync"] and state["quarantine_rows"] == sum(sent.poison.values())

    verdict = check(spark, cfg, sent.event_ids, sum(sent.poison.values()))
    assert verdict.clean, verdict

    # A duplicate planted behind deltasink's back is caught by validate --full, over Connect, and
    # only the key's uniqueness fails: every other expectation passes on the whole table (what a
    # clean validate --full before the planting showed, in a process of its own: 11 s).
    cfg.target.ref.append(cfg.target.ref.read(spark).orderBy("event_id").limit(1))
    caught = runner.deltasink("validate", "--config", str(path), "--full")
    assert caught.returncode == 3, caught.stdout[-2000:] + caught.stderr[-2000:]
    failed = [ln for ln in caught.stdout.splitlines() if ln.startswith("  FAILED ")]
    assert failed and all("_unique on event_id" in ln for ln in failed), caught.stdout[-2000:]
    counts = re.search(r"^quality FAILED: .*: (\d+)/(\d+) expectations passed$", caught.stdout,
                       re.M)
    assert counts is not None and int(counts[1]) == int(counts[2]) - len(failed), caught.stdout


@pytest.mark.extended
def test_a_client_killed_with_sigkill_mid_run_loses_and_duplicates_nothing(
        connect_server: ConnectServer, broker: EmbeddedBroker, lake: Path,
        request: pytest.FixtureRequest) -> None:
    # ~333 records at 100 a batch: 4 batches (10 s and more of them after the lock is taken),
    # so the kill 4 s after it lands mid-run.
    path, sent = connect_pipeline(lake, broker, connect_server, per_batch=100, events=300,
                                  seed=29)
    cfg = load_config(path, environ={})
    lock = Path(cfg.checkpoint) / ".deltasink.lock"
    killed = runner.run(path, kill_after=4.0, kill_after_lock=lock)
    assert killed.returncode == -signal.SIGKILL, killed.stdout[-2000:] + killed.stderr[-2000:]
    # The killed client's query may still run on the server: the next run takes the lease
    # (its pid is gone on this host) and the server stops the old query when this one starts.
    done = runner.run(path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    spark: SparkSession = request.getfixturevalue("spark")
    verdict = check(spark, cfg, sent.event_ids, sum(sent.poison.values()))
    assert verdict.clean, verdict
