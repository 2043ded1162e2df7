"""Maintenance compacts the target in event-time order when the dedup window is on event time."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.ops.maintenance import optimize_and_vacuum
from pipelines.sink.metrics import BatchMetrics
from pipelines.sink.tables import ensure_sink_tables
from tests.support.configs import make_config
from tests.support.merge_batches import kafka_batch, sink_for


@pytest.mark.parametrize(("window", "order"), [("1h", ["event_time"]),
                                             pytest.param("1d", [], marks=pytest.mark.extended)])
def test_optimize_orders_the_target_by_event_time_only_for_an_event_time_window(
        spark: SparkSession, lake: Path, window: str, order: list[str]) -> None:
    cfg = make_config(lake, "127.0.0.1:1", "orders", target={"dedup_window": window})
    seen: list[BatchMetrics] = []
    sink = sink_for(spark, cfg, seen)
    noon = dt.datetime(2026, 3, 10, 12)
    for batch in range(2):  # two files in one partition: something to compact
        sink(kafka_batch(spark, [(f"e{batch}", noon + dt.timedelta(hours=batch))], batch), batch)

    actions = optimize_and_vacuum(spark, cfg)

    target = cfg.target.ref
    suffix = " ZORDER BY `event_time`" if order else ""
    assert f"OPTIMIZE {target.describe()}{suffix}" in actions
    history = spark.sql(f"DESCRIBE HISTORY {target.sql}").where("operation = 'OPTIMIZE'")
    params = history.first()
    assert params is not None
    assert json.loads(params["operationParameters"]["zOrderBy"]) == order
    # The setting is the statement's own: the session's OPTIMIZE file size is left as it was.
    assert spark.conf.get("spark.databricks.delta.optimize.maxFileSize", None) is None


def test_vacuum_keeps_a_tables_longer_deleted_file_retention(spark: SparkSession,
                                                              lake: Path) -> None:
    """Delta refuses a VACUUM that keeps less than the table's own
    ``delta.deletedFileRetentionDuration``: a target that keeps 200 hours is vacuumed keeping
    200, the quarantine (Delta's default week) keeping the 168-hour minimum."""
    cfg = make_config(lake, "127.0.0.1:1", "orders", target={
        "properties": {"delta.deletedFileRetentionDuration": "interval 200 hours"}})
    ensure_sink_tables(spark, cfg, cfg.event_schema())

    actions = optimize_and_vacuum(spark, cfg)

    assert f"VACUUM {cfg.target.ref.describe()} RETAIN 200 HOURS" in actions
    assert f"VACUUM {cfg.target.quarantine_ref.describe()} RETAIN 168 HOURS" in actions
