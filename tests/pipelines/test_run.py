"""End to end against the real broker and real Delta tables: the exactly-once acceptance tests."""

from __future__ import annotations

import shutil
import threading
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from pyspark.sql import SparkSession

from pipelines.config.model import PipelineConfig
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import POISON_KINDS, make_event, produce_events
from pipelines.kafka.topics import add_partitions, ensure_topic
from pipelines.run import run_pipeline
from tests.support.checker import check
from tests.support.configs import make_config


def new_topic() -> str:
    return f"orders-{uuid.uuid4().hex[:8]}"


def run(spark: SparkSession, config: PipelineConfig) -> list[int]:
    """Run to completion; return the inserted count per batch."""
    result = run_pipeline(spark, config, validate=False, progress=lambda _l: None)
    return [b.inserted for b in result.batches]


def test_duplicates_are_removed_within_a_batch_and_across_runs(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path) -> None:
    topic = new_topic()
    # 2,200 records in batches of at most 1,000: three batches, so copies land in the same
    # batch and in later ones.
    cfg = make_config(lake, broker.bootstrap_servers, topic,
                      source={"max_records_per_batch": 1000})
    first = produce_events(broker.bootstrap_servers, topic, 2000, duplicate_rate=0.1, seed=1)
    result = run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)
    assert result.inserted == 2000
    assert len(result.batches) >= 3  # copies landed in the same batch and in later ones
    assert sum(b.duplicates_in_batch + b.duplicates_by_merge for b in result.batches) == 200
    # The same events again (a producer replay), plus 500 new ones, days later. The replay is
    # caught by the MERGE against the table whatever the batching: one batch of 2,500.
    cfg = make_config(lake, broker.bootstrap_servers, topic)
    again = produce_events(broker.bootstrap_servers, topic, 2500, seed=1)
    second = run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)
    assert second.inserted == 500
    assert sum(b.duplicates_by_merge for b in second.batches) == 2000
    verdict = check(spark, cfg, set(first.event_ids) | set(again.event_ids), 0)
    assert verdict.clean, verdict


def test_every_poison_kind_is_quarantined_exactly_once(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path) -> None:
    topic = new_topic()
    cfg = make_config(lake, broker.bootstrap_servers, topic)
    sent = produce_events(broker.bootstrap_servers, topic, 300, poison_rate=len(POISON_KINDS) / 300,
                          seed=2)
    result = run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)
    assert result.quarantined == len(POISON_KINDS)
    reasons = {r["reason"] for r in cfg.target.quarantine_ref.read(spark).collect()}
    assert reasons == {"invalid_json", "not_an_object", "missing:event_id", "empty:event_id",
                       "bad_type:event_id", "bad_timestamp:event_time", "invalid_utf8",
                       "tombstone", "oversized"}  # null_key and missing_key share a reason
    # Lose the checkpoint and run again: the table's offsets keep quarantine exactly-once.
    shutil.rmtree(cfg.checkpoint)
    run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)
    verdict = check(spark, cfg, sent.event_ids, len(POISON_KINDS))
    assert verdict.clean, verdict


def test_a_replayed_batch_is_a_no_op(spark: SparkSession, broker: EmbeddedBroker,
                                      lake: Path) -> None:
    """A crash after the Delta commit loses only the last checkpoint commit: Spark re-runs
    that batch with the same id and offsets, and it commits nothing. New records behind it do
    not make it look like a rolled-back checkpoint (``pipelines/ledger/reconcile.py``): nothing
    is retired, and the run goes on past the replay."""
    topic = new_topic()
    # 1,010 records in batches of at most 600: two batches, so the replayed one is not batch 0.
    cfg = make_config(lake, broker.bootstrap_servers, topic, source={"max_records_per_batch": 600})
    sent = produce_events(broker.bootstrap_servers, topic, 1000, poison_rate=0.01, seed=3)
    batches = len(run(spark, cfg))
    assert batches >= 2
    version = cfg.target.ref.history(spark, 1).first()["version"]  # type: ignore[index]
    # Forget the last checkpoint commit: Spark re-runs that batch with the same batch id.
    commits = sorted((p for p in (Path(cfg.checkpoint) / "commits").iterdir() if p.name.isdigit()),
                     key=lambda p: int(p.name))
    commits[-1].unlink()
    (commits[-1].parent / f".{commits[-1].name}.crc").unlink(missing_ok=True)
    more = produce_events(broker.bootstrap_servers, topic, 300, seed=25, id_prefix="more")
    replay = run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)
    assert [b.replayed for b in replay.batches] == [True, False]  # the replay, then the new
    assert replay.batches[0].batch_id == int(commits[-1].name)
    assert replay.inserted == 300
    # The replay committed nothing: the table's one new version is the new batch's.
    assert cfg.target.ref.history(spark, 1).first()["version"] == version + 1  # type: ignore[index]
    assert not list((Path(cfg.checkpoint) / "_deltasink" / "generations").glob("*"))  # kept
    verdict = check(spark, cfg, sent.event_ids + more.event_ids, 10)
    assert verdict.clean, verdict
    # Run metrics are recorded per committed batch; the replay adds no row.
    assert cfg.quality.metrics_ref.read(spark).count() == batches + 1


@pytest.mark.extended
def test_checkpoint_deletion_loses_and_duplicates_nothing(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path) -> None:
    topic = new_topic()
    cfg = make_config(lake, broker.bootstrap_servers, topic)
    first = produce_events(broker.bootstrap_servers, topic, 800, seed=4)
    run(spark, cfg)
    shutil.rmtree(cfg.checkpoint)
    second = produce_events(broker.bootstrap_servers, topic, 300, seed=40, id_prefix="late")
    # ... and a producer replay of the first run's events, sent after the checkpoint was lost
    # (the scenario of tests/chaos/test_checkpoint.py, whose short profile this one replaces).
    replay = produce_events(broker.bootstrap_servers, topic, 800, seed=4)
    assert set(replay.event_ids) == set(first.event_ids)
    result = run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)
    # Resumed from the table's offsets: only the records sent since were read, and the
    # replayed ones were caught by the MERGE against the table.
    assert result.records_in == 300 + 800 and result.inserted == 300
    assert sum(b.duplicates_by_merge for b in result.batches) == 800
    verdict = check(spark, cfg, first.event_ids + second.event_ids, 0)
    assert verdict.clean, verdict


@pytest.mark.extended
def test_aborted_transactions_are_not_ingested(spark: SparkSession, broker: EmbeddedBroker,
                                               lake: Path) -> None:
    import random
    from datetime import UTC, datetime

    topic = new_topic()
    ensure_topic(broker.bootstrap_servers, topic, 2)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "log_level": 0,
                         "transactional.id": f"tx-{topic}"})
    producer.init_transactions(30)
    rng, now = random.Random(5), datetime.now(UTC)
    committed = []
    for round_ in range(3):
        for outcome in ("abort", "commit"):
            producer.begin_transaction()
            for i in range(50):
                eid = f"{outcome}-{round_}-{i}"
                producer.produce(topic, key=eid.encode(), value=make_event(eid, now, rng))
                if outcome == "commit":
                    committed.append(eid)
            if outcome == "abort":
                # Delivered first: an abort while a partition is still being added to the
                # transaction can fail INVALID_TXN_STATE (confluentinc/librdkafka#4849).
                producer.flush(30)
                producer.abort_transaction()
            else:
                producer.commit_transaction()
    cfg = make_config(lake, broker.bootstrap_servers, topic, source={"max_records_per_batch": 60})
    result = run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)
    # Markers leave offset gaps; the run still finishes and reads only committed records.
    assert result.records_in == 150
    verdict = check(spark, cfg, committed, 0)
    assert verdict.clean, verdict


@pytest.mark.extended
def test_partitions_added_while_running_are_ingested(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path) -> None:
    topic = new_topic()
    first = produce_events(broker.bootstrap_servers, topic, 200, seed=6, partitions=1)
    cfg = make_config(lake, broker.bootstrap_servers, topic)
    errors: list[BaseException] = []

    def background() -> None:
        try:
            run_pipeline(spark, cfg, trigger="continuous", interval="1s", validate=False,
                         progress=lambda _l: None)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=background, daemon=True)
    thread.start()
    try:
        wait_for_rows(spark, cfg, 200)
        add_partitions(broker.bootstrap_servers, topic, 3)
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "log_level": 0})
        import random
        from datetime import UTC, datetime

        rng, late = random.Random(6), []
        for i in range(100):
            eid = f"new-partition-{i}"
            late.append(eid)
            producer.produce(topic, key=eid.encode(), partition=1 + i % 2,
                             value=make_event(eid, datetime.now(UTC), rng))
        producer.flush(30)
        wait_for_rows(spark, cfg, 300)
    finally:
        for query in spark.streams.active:
            query.stop()
        thread.join(60)
    assert not errors, errors
    parts = {r["kafka_partition"] for r in cfg.target.ref.read(spark).collect()}
    assert parts == {0, 1, 2}
    verdict = check(spark, cfg, list(first.event_ids) + late, 0)
    assert verdict.clean, verdict


def wait_for_rows(spark: SparkSession, cfg: PipelineConfig, n: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cfg.target.ref.exists(spark) and cfg.target.ref.read(spark).count() >= n:
            return
        time.sleep(1)
    pytest.fail(f"the target did not reach {n} rows in {timeout}s")


@pytest.mark.extended
def test_two_concurrent_writers_neither_lose_nor_duplicate(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path) -> None:
    topic_a, topic_b = new_topic(), new_topic()
    # Overlapping ids: b's events are a superset of a's.
    a = produce_events(broker.bootstrap_servers, topic_a, 1500, seed=7, partitions=2)
    b = produce_events(broker.bootstrap_servers, topic_b, 2500, seed=7, partitions=2)
    # Batches of at most 900: a commits 2 and b 3 MERGEs into the same table at the same time,
    # and their first batches carry (nearly) the same event ids: b's topic starts with a's.
    cfg_a = make_config(lake, broker.bootstrap_servers, topic_a, name="writer_a",
                        source={"max_records_per_batch": 900})
    cfg_b = make_config(lake, broker.bootstrap_servers, topic_b, name="writer_b",
                        source={"max_records_per_batch": 900})
    results, errors = [], []

    def go(cfg: PipelineConfig) -> None:
        try:
            results.append(run_pipeline(spark, cfg, validate=False, progress=lambda _l: None))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=go, args=(c,)) for c in (cfg_a, cfg_b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    assert not errors, errors
    counts = sorted(len(r.batches) for r in results)
    assert counts[0] >= 2 and counts[1] >= 3, counts  # several commits each, to interleave
    assert sum(r.inserted for r in results) == 2500
    verdict = check(spark, cfg_a, set(a.event_ids) | set(b.event_ids), 0)
    assert verdict.clean, verdict


@pytest.mark.extended
def test_a_planted_duplicate_fails_the_next_run(spark: SparkSession, broker: EmbeddedBroker,
                                                lake: Path) -> None:
    from pipelines.errors import QualityError

    topic = new_topic()
    cfg = make_config(lake, broker.bootstrap_servers, topic)
    produce_events(broker.bootstrap_servers, topic, 300, seed=11)
    lines: list[str] = []
    run_pipeline(spark, cfg, progress=lines.append)  # validates, and passes
    assert any(line.startswith("quality PASSED") for line in lines)
    # Plant a duplicate straight into the Delta table, then land new events in every partition.
    target = cfg.target.ref.read(spark)
    planted = target.orderBy("event_id").limit(1)
    planted_id = planted.first()["event_id"]  # type: ignore[index]
    cfg.target.ref.append(planted)
    produce_events(broker.bootstrap_servers, topic, 300, seed=12, id_prefix="next")
    lines.clear()
    with pytest.raises(QualityError, match="validation failed"):
        run_pipeline(spark, cfg, progress=lines.append)
    failures = [line for line in lines if "FAILED" in line]
    assert any("expect_column_values_to_be_unique" in line and "event_id" in line
               for line in failures), lines
    assert any(planted_id in line for line in failures), lines
    # The CLI finds it too: by default in the latest run's partitions, and with --full.
    from pipelines.cli import main

    config_file = str(lake / f"{cfg.name}.yml")
    assert main(["validate", "--config", config_file]) == 3
    assert main(["validate", "--config", config_file, "--full"]) == 3
