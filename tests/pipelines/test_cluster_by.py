"""``target.cluster_by``: a liquid-clustered target instead of a partitioned one (issue 62)."""

from __future__ import annotations

import signal
import uuid
from pathlib import Path

import pytest
from pydantic import ValidationError
from pyspark.sql import SparkSession

from pipelines.config.loader import load_config
from pipelines.config.target import TargetConfig
from pipelines.errors import SchemaError
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import produce_events
from pipelines.ops.maintenance import optimize_and_vacuum
from pipelines.ops.replay import replay
from pipelines.ops.rewind import rewind
from pipelines.run import run_pipeline
from pipelines.sink.tables import ensure_sink_tables
from tests.support.checker import check
from tests.support.configs import make_config, write_config
from tests.support.runner import run

CLUSTERED = {"cluster_by": ["event_date", "event_id"]}


def test_a_clustered_target_has_no_partitions_and_keeps_its_dedup_window() -> None:
    target = TargetConfig(path="/t", **CLUSTERED)  # type: ignore[arg-type]
    assert target.partition_by == () and target.prune_by == ("event_date",)
    assert TargetConfig(path="/t", cluster_by=["event_date"], dedup_window="1d"
                        ).date_window == 1  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=r"at most one of target\.partition_by or "
                                              r"target\.cluster_by"):
        TargetConfig(path="/t", cluster_by=["event_id"], partition_by=["event_date"]
                     )  # type: ignore[arg-type]
    assert TargetConfig(path="/t").prune_by == ("event_date",)  # partitioned, as before
    assert TargetConfig(path="/t", partition_by=[]).prune_by == ()  # type: ignore[arg-type]


@pytest.mark.slow
def test_a_clustered_target_drops_copies_of_earlier_runs_by_file_statistics(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path) -> None:
    topic = f"clustered-{uuid.uuid4().hex[:8]}"
    cfg = make_config(lake, broker.bootstrap_servers, topic, target=CLUSTERED)
    first = produce_events(broker.bootstrap_servers, topic, 500, duplicate_rate=0.1,
                           poison_rate=0.01, seed=30)
    run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)
    detail = cfg.target.ref.detail(spark)
    assert list(detail["partitionColumns"]) == []
    assert list(detail["clusteringColumns"]) == ["event_date", "event_id"]
    again = produce_events(broker.bootstrap_servers, topic, 500, seed=30)
    result = run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)
    assert result.records_in == again.sent and result.inserted == 0
    assert check(spark, cfg, first.event_ids, sum(first.poison.values())).clean


@pytest.mark.slow
@pytest.mark.extended
def test_a_clustered_target_lands_exactly_once_through_reruns_replay_rewind_and_maintenance(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path) -> None:
    topic = f"clustered-{uuid.uuid4().hex[:8]}"
    cfg = make_config(lake, broker.bootstrap_servers, topic, target=CLUSTERED,
                      source={"max_records_per_batch": 400})
    first = produce_events(broker.bootstrap_servers, topic, 900, duplicate_rate=0.1,
                           poison_rate=0.01, seed=31)
    run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)
    detail = cfg.target.ref.detail(spark)
    assert list(detail["partitionColumns"]) == []
    assert list(detail["clusteringColumns"]) == ["event_date", "event_id"]
    after_one = int(cfg.target.ref.latest_version(spark))

    # Copies of run 1's events in a later run: the MERGE, pruned by file statistics, drops them.
    again = produce_events(broker.bootstrap_servers, topic, 900, seed=31)
    second = produce_events(broker.bootstrap_servers, topic, 300, seed=32, id_prefix="two")
    result = run_pipeline(spark, cfg, validate=True, progress=lambda _l: None)
    assert result.inserted == 300 and result.records_in == again.sent + second.sent
    poison = sum(first.poison.values())
    ids = first.event_ids + second.event_ids
    assert check(spark, cfg, ids, poison).clean

    gone = ",".join(f"'{i}'" for i in first.event_ids[:25])  # a backfill restores them once
    spark.sql(f"DELETE FROM delta.`{cfg.target.ref.path}` WHERE event_id IN ({gone})")
    assert replay(spark, cfg, "1970-01-01T00:00:00Z", say=lambda _l: None).inserted == 25
    assert check(spark, cfg, ids, poison).clean

    rewind(spark, cfg, to_version=after_one, say=lambda _l: None)  # run 2 undone, re-read
    assert cfg.target.ref.read(spark).count() == len(first.event_ids)
    assert run_pipeline(spark, cfg, validate=False, progress=lambda _l: None).inserted == 300
    assert check(spark, cfg, ids, poison).clean

    actions = optimize_and_vacuum(spark, cfg)
    assert f"OPTIMIZE {cfg.target.ref.describe()}" in actions  # clustering, not ZORDER
    assert not any("ZORDER" in a for a in actions)
    assert run_pipeline(spark, cfg, validate=True, progress=lambda _l: None).inserted == 0
    assert check(spark, cfg, ids, poison).clean


@pytest.mark.slow
def test_new_clustering_columns_are_set_in_place_and_a_partitioned_target_is_refused(
        spark: SparkSession, lake: Path) -> None:
    cfg = make_config(lake, "127.0.0.1:9", "t", target={"cluster_by": ["event_id"]})
    ensure_sink_tables(spark, cfg, cfg.event_schema())
    moved = make_config(lake, "127.0.0.1:9", "t", target={"cluster_by": ["event_time"]})
    ensure_sink_tables(spark, moved, moved.event_schema())
    assert list(cfg.target.ref.detail(spark)["clusteringColumns"]) == ["event_time"]

    (lake / "p").mkdir()
    partitioned = make_config(lake / "p", "127.0.0.1:9", "t")
    ensure_sink_tables(spark, partitioned, partitioned.event_schema())
    clustered = make_config(lake / "p", "127.0.0.1:9", "t", target={"cluster_by": ["event_id"]})
    with pytest.raises(SchemaError, match=r"is partitioned by \['event_date'\], and "
                                          r"target\.cluster_by applies when a table is created"):
        ensure_sink_tables(spark, clustered, clustered.event_schema())


@pytest.mark.slow
@pytest.mark.extended
def test_a_clustered_target_killed_after_its_commit_restarts_with_no_duplicate_or_gap(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path) -> None:
    topic = f"clustered-crash-{uuid.uuid4().hex[:8]}"
    sent = produce_events(broker.bootstrap_servers, topic, 1200, duplicate_rate=0.1,
                          poison_rate=0.02, seed=33)
    path = write_config(lake, broker.bootstrap_servers, topic, target=CLUSTERED,
                        source={"max_records_per_batch": 500})
    crashed = run(path, fault="after_target_commit@1")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr[-2000:]
    resumed = run(path)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "(replay: already committed, skipped)" in resumed.stdout
    cfg = load_config(path, environ={})
    assert check(spark, cfg, sent.event_ids, sum(sent.poison.values())).clean
