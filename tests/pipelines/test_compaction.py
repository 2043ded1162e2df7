"""A continuous run compacts its target as it streams (``target.compact_while_streaming``,
issue 46), on the real broker and real Delta tables, and stays exactly once."""

from __future__ import annotations

import re
import signal
import time
import uuid
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.config.loader import load_config
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import produce_events
from pipelines.run import run_pipeline
from pipelines.runtime.connect_server import ConnectServer
from pipelines.sink.merge import AUTO_COMPACT
from tests.support import runner
from tests.support.checker import check
from tests.support.configs import make_config, write_config

#: Delta compacts a partition once it holds this many small files (50 by default).
MIN_FILES = AUTO_COMPACT.removesuffix(".enabled") + ".minNumFiles"
BATCH = re.compile(r"^batch \d+: in=(\d+) ")


@pytest.mark.extended
@pytest.mark.parametrize("compact", [True, False])
def test_a_continuous_run_compacts_its_target_as_it_streams_and_stays_exactly_once(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path, compact: bool) -> None:
    topic = f"compact-{uuid.uuid4().hex[:8]}"
    cfg = make_config(lake, broker.bootstrap_servers, topic,
                      source={"max_records_per_batch": 60},
                      target={"compact_while_streaming": compact})
    sent = produce_events(broker.bootstrap_servers, topic, 400, duplicate_rate=0.1,
                          poison_rate=0.01, seed=46)
    lines: list[str] = []

    def read_all() -> bool:
        return sum(int(m[1]) for m in map(BATCH.match, list(lines)) if m) >= sent.sent

    spark.conf.set(MIN_FILES, "3")
    try:
        result = run_pipeline(spark, cfg, trigger="continuous", interval="1s", validate=False,
                              progress=lines.append, stopping=read_all)
    finally:
        spark.conf.unset(MIN_FILES)

    assert result.batch_count >= 7, lines
    history = cfg.target.ref.history(spark).collect()
    compactions = [r for r in history if r["operation"] == "OPTIMIZE"]
    assert bool(compactions) == compact, [r["operation"] for r in history]
    files = spark.sql(f"DESCRIBE DETAIL delta.`{cfg.target.path}`").first()["numFiles"]
    dates = len(result.event_dates)
    if compact:  # each date compacted once it held 3 small files: fewer than one per batch
        assert files < result.batch_count, (files, result.batch_count, dates)
    verdict = check(spark, cfg, sent.event_ids, sum(sent.poison.values()))
    assert verdict.clean, verdict
    # A rerun finds nothing new: the compactions are not batches, and no offset moved back.
    again = run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)
    assert again.records_in == 0 and again.inserted == 0


@pytest.mark.extended
@pytest.mark.slow
def test_a_continuous_run_through_spark_connect_compacts_its_target_and_stays_exactly_once(
        spark: SparkSession, broker: EmbeddedBroker, connect_server: ConnectServer,
        lake: Path) -> None:
    """The same through Spark's own Connect server: the MERGE with auto-compaction runs in the
    server's ``foreachBatch`` worker, in the session the client's query started from, with the
    client's settings (``spark.conf``) in it. A ``deltasink`` process, stopped by Ctrl-C to its
    process group once the target holds every event."""
    topic = f"compact-connect-{uuid.uuid4().hex[:8]}"
    path = write_config(lake, broker.bootstrap_servers, topic,
                        spark={"remote": connect_server.url, "conf": {MIN_FILES: "3"}},
                        source={"max_records_per_batch": 60})
    cfg = load_config(path, environ={})
    sent = produce_events(broker.bootstrap_servers, topic, 400, duplicate_rate=0.1,
                          poison_rate=0.01, seed=47)
    target = Path(cfg.target.path or "")
    polled = [0.0]

    def landed() -> bool:  # every event in the target (read at most every 2 s)
        # Its first commit, not its log folder: the folder exists while the run creates the
        # table, and a read then finds no table (DELTA_TABLE_NOT_FOUND; seen under load).
        if time.monotonic() - polled[0] < 2 or not any((target / "_delta_log").glob("*.json")):
            return False
        polled[0] = time.monotonic()
        return cfg.target.ref.read(spark).count() >= len(sent.event_ids)

    stopped = runner.deltasink("run", "--config", str(path), "--no-validate", "--trigger",
                               "continuous", "--interval", "1s", kill_when=landed,
                               kill_after=0.0, kill_with=signal.SIGINT)
    assert stopped.returncode == 0, stopped.stdout[-3000:] + stopped.stderr[-3000:]
    batches = [ln for ln in stopped.stdout.splitlines() if BATCH.match(ln)]
    assert len(batches) >= 7, stopped.stdout[-3000:]

    history = cfg.target.ref.history(spark).collect()
    assert any(r["operation"] == "OPTIMIZE" for r in history), [r["operation"] for r in history]
    files = spark.sql(f"DESCRIBE DETAIL delta.`{cfg.target.path}`").first()["numFiles"]
    assert files < len(batches), (files, len(batches))
    verdict = check(spark, cfg, sent.event_ids, sum(sent.poison.values()))
    assert verdict.clean, verdict
    again = runner.run(path)  # nothing new: the compactions are not batches
    assert again.returncode == 0, again.stderr[-3000:]
    assert "in=0 inserted=0" in again.stdout, again.stdout[-2000:]
