"""``deltasink replay``: a backfill that restores missing rows once and moves no offsets."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import produce_events
from pipelines.ledger import state
from pipelines.ops.replay import replay
from pipelines.run import run_pipeline
from tests.support.checker import check
from tests.support.configs import make_config


@pytest.mark.extended
@pytest.mark.slow
def test_replay_brings_deleted_rows_back_once(spark: SparkSession, broker: EmbeddedBroker,
                                              lake: Path) -> None:
    topic = f"replay-{uuid.uuid4().hex[:8]}"
    cfg = make_config(lake, broker.bootstrap_servers, topic)
    since = (datetime.now(UTC) - timedelta(seconds=5)).isoformat()
    sent = produce_events(broker.bootstrap_servers, topic, 600, duplicate_rate=0.1,
                          poison_rate=0.01, seed=8)
    poison = sum(sent.poison.values())
    run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)
    offsets = state.recorded_offsets(spark, cfg.target.ref, cfg.name)
    gone = sent.event_ids[:40]
    ids = ",".join(f"'{i}'" for i in gone)
    spark.sql(f"DELETE FROM delta.`{cfg.target.ref.path}` WHERE event_id IN ({ids})")
    assert check(spark, cfg, sent.event_ids, poison).lost == 40

    said: list[str] = []
    result = replay(spark, cfg, since, say=said.append)
    assert result.records_read == sent.sent
    assert result.inserted == 40
    assert said[-1].startswith(f"replay {result.replay_id} done: read={sent.sent} inserted=40")
    verdict = check(spark, cfg, sent.event_ids, poison)
    assert verdict.clean, verdict
    assert state.recorded_offsets(spark, cfg.target.ref, cfg.name) == offsets
    assert not list(Path(cfg.checkpoint).parent.glob("*.replay-*"))  # its checkpoint is gone

    later = produce_events(broker.bootstrap_servers, topic, 25, seed=9, id_prefix="later")
    after = run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)
    assert after.records_in == 25 and after.inserted == 25  # resumed where it was
    verdict = check(spark, cfg, sent.event_ids + later.event_ids, poison)
    assert verdict.clean, verdict
