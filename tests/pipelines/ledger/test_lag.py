"""Lag and freshness: recorded per batch, shown by status, checked by validate (issue 13 §1)."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pyspark.sql import SparkSession

from pipelines.cli import main
from pipelines.config.loader import load_config
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import produce_events
from pipelines.ledger.lag import harvester, progress_lags
from pipelines.ops.status import collect_status, format_status
from pipelines.run import run_pipeline
from quality.results_read import read_run_metrics, read_validation_results
from quality.suites import LAG_EXPECTATION, STALENESS_EXPECTATION
from tests.support.configs import write_config


def progress(batch: int, rows: int, latest: dict[str, dict[str, int]],
             end: dict[str, dict[str, int]]) -> dict[str, Any]:
    """A progress as Spark's JSON has it: a Kafka source's offsets are nested objects."""
    return {"id": "q", "batchId": batch, "numInputRows": rows,
            "sources": [{"latestOffset": latest, "endOffset": end}]}


def test_lag_is_latest_minus_end_offsets_and_idle_triggers_are_skipped() -> None:
    seen = [progress(0, 5, {"t": {"0": 10, "1": 4}}, {"t": {"0": 3, "1": 4}}),
            progress(1, 0, {"t": {"0": 10}}, {"t": {"0": 10}}),  # idle: no batch, no row
            {"id": "q", "batchId": 2, "numInputRows": 7,
             "sources": [{"latestOffset": None, "endOffset": "{}"}]},
            {"id": "q", "batchId": 3, "numInputRows": 1,  # offsets as JSON text
             "sources": [{"latestOffset": '{"t": {"0": 12}}', "endOffset": '{"t": {"0": 11}}'}]}]
    assert progress_lags(seen) == {("q", 0): 7, ("q", 2): 0, ("q", 3): 1}


def test_the_harvest_flushes_the_rows_with_their_lags_and_without_them_if_progress_fails() -> None:
    seen = [progress(0, 5, {"t": {"0": 10}}, {"t": {"0": 3}})]
    flushed: list[tuple[dict[tuple[str, int], int], bool]] = []
    said: list[str] = []
    harvest = harvester(lambda lags, final: flushed.append((lags, final)), said.append)

    class Broken:
        @property
        def recentProgress(self) -> list[object]:  # Spark's name
            raise RuntimeError("progress gone")

    harvest(SimpleNamespace(recentProgress=[SimpleNamespace(json=json.dumps(p)) for p in seen]))
    harvest(Broken(), final=True)
    harvest(Broken(), final=True)

    assert flushed == [({("q", 0): 7}, False), ({}, True), ({}, True)]  # rows written anyway
    assert said == ["warning: could not read the lag from the query's progress (progress gone)"]


@pytest.mark.extended
def test_a_stopped_pipeline_with_a_backlog_fails_lag_and_staleness_with_exit_3(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    topic = f"lag-{uuid.uuid4().hex[:8]}"
    path = write_config(lake, broker.bootstrap_servers, topic,
                        source={"max_records_per_batch": 100},
                        quality={"max_lag_records": 10, "max_staleness": "1s"})
    cfg = load_config(path, environ={})
    produced_at = time.time()
    produce_events(broker.bootstrap_servers, topic, 300, seed=31)

    result = run_pipeline(spark, cfg, progress=lambda _l: None)  # caught up: both checks pass
    # No record can have waited longer than from its production to the run's end: a bound
    # this run sets itself (a fixed number of seconds would fail on a loaded machine).
    waited = time.time() - produced_at + 1  # + 1: Kafka's timestamps are in milliseconds

    rows = sorted(read_run_metrics(spark, cfg), key=lambda r: r["batch_id"])
    assert len(rows) == len(result.batches) >= 3
    read = 0
    for row in rows:  # Kafka held 300; each batch's lag is what was left after it
        read += row["records_in"]
        assert row["lag_records"] == 300 - read, row
        assert row["newest_event_time"] is not None and row["newest_kafka_timestamp"] is not None
        assert row["freshness_kafka_s"] >= 0
        assert 0 <= row["latency_p50_s"] <= row["latency_p99_s"] <= waited, (row, waited)
    assert rows[-1]["lag_records"] == 0

    produce_events(broker.bootstrap_servers, topic, 50, seed=32, id_prefix="late")
    capsys.readouterr()
    assert main(["validate", "--config", str(path)]) == 3  # stopped, with a backlog
    out = capsys.readouterr().out
    lag_line = next(ln for ln in out.splitlines() if f"FAILED {LAG_EXPECTATION}" in ln)
    assert "lag 50 records" in lag_line and "(max 10 records)" in lag_line, out
    assert f"FAILED {STALENESS_EXPECTATION}" in out and "(max 1s)" in out, out
    recorded = {r["expectation"]: r for r in read_validation_results(spark, cfg)
                if r["expectation"] in (LAG_EXPECTATION, STALENESS_EXPECTATION)
                and not r["success"]}
    assert recorded[LAG_EXPECTATION]["unexpected_count"] == 50

    status = collect_status(spark, cfg)  # what `deltasink status` prints, and its --json
    lines = format_status(status)
    assert any(ln.startswith("lag             50 records") for ln in lines), lines
    assert any("newest Kafka timestamp inserted" in ln for ln in lines), lines
    assert status["lag"]["records"] == 50 and status["freshness"]["kafka_s"] > 0
    newest = max(r["newest_kafka_timestamp"] for r in rows)  # naive local, as Spark gives it
    assert status["freshness"]["newest_kafka_timestamp"].timestamp() == pytest.approx(
        newest.timestamp(), abs=0.001)
