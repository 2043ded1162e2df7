"""Run-metrics bookkeeping never fails a batch, and every committed batch gets exactly one row."""

from __future__ import annotations

import signal
import uuid
from pathlib import Path

import pytest
from pyspark.sql import Row, SparkSession

from pipelines.cli import main
from pipelines.config.loader import load_config
from pipelines.config.model import PipelineConfig
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import ProduceSummary, produce_events
from pipelines.ledger import state
from pipelines.run import run_pipeline
from tests.support.checker import check
from tests.support.configs import make_config, write_config
from tests.support.runner import run

WARNING = "warning: could not record the run metrics"


def metrics_rows(spark: SparkSession, cfg: PipelineConfig) -> list[Row]:
    return list(cfg.quality.metrics_ref.read(spark).where(f"pipeline = '{cfg.name}'").collect())


def assert_one_row_per_commit(spark: SparkSession, cfg: PipelineConfig,
                              sent: ProduceSummary) -> list[Row]:
    """One metrics row per target commit of the pipeline, none twice, with faithful counts."""
    rows = metrics_rows(spark, cfg)
    keys = [(r["query_id"], r["batch_id"]) for r in rows]
    commits = state.sink_commits(spark, cfg.target.ref, cfg.name)
    assert len(keys) == len(set(keys))
    assert sorted(keys) == sorted((c.app_id.rsplit(":", 1)[1], c.batch_id) for c in commits)
    for r in rows:
        assert r["records_in"] == (r["quarantined"] + r["duplicates_in_batch"]
                                   + r["duplicates_by_merge"] + r["inserted"]), r
    assert sum(r["records_in"] for r in rows) == sent.sent
    assert sum(r["inserted"] for r in rows) == len(sent.event_ids)
    assert sum(r["quarantined"] for r in rows) == sum(sent.poison.values())
    return rows


def both(first: ProduceSummary, second: ProduceSummary) -> ProduceSummary:
    """What two produce calls to one topic sent, together."""
    poison = {k: first.poison.get(k, 0) + second.poison.get(k, 0)
              for k in {*first.poison, *second.poison}}
    return ProduceSummary(first.topic, first.sent + second.sent,
                          first.event_ids + second.event_ids,
                          first.duplicates + second.duplicates, poison)


@pytest.mark.extended
@pytest.mark.slow
def test_unwritable_metrics_table_warns_once_and_the_next_start_backfills(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path) -> None:
    topic = f"books-{uuid.uuid4().hex[:8]}"
    cfg = make_config(lake, broker.bootstrap_servers, topic,
                      source={"max_records_per_batch": 300})
    first = produce_events(broker.bootstrap_servers, topic, 250, duplicate_rate=0.1,
                           poison_rate=0.02, seed=21)
    recorded = run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)
    kept = sorted(b.batch_id for b in recorded.batches)
    second = produce_events(broker.bootstrap_servers, topic, 750, duplicate_rate=0.1,
                            poison_rate=0.02, seed=22, id_prefix="more")
    sent = both(first, second)
    metrics = Path(str(cfg.quality.metrics_path))
    saved = lake / "run_metrics.saved"
    lines: list[str] = []

    def progress(line: str) -> None:
        lines.append(line)
        if line.startswith("batch ") and not saved.exists():  # break the table mid-run
            metrics.rename(saved)
            metrics.write_text("not a Delta table\n")

    result = run_pipeline(spark, cfg, validate=False, progress=progress)  # no exception

    assert len(result.batches) >= 3
    warnings = [ln for ln in lines if ln.startswith(WARNING)]
    assert len(warnings) == 1 and "\n" not in warnings[0], lines
    assert "their data is committed" in warnings[0] and "backfilled" in warnings[0]
    verdict = check(spark, cfg, sent.event_ids, sum(sent.poison.values()))
    assert verdict.clean, verdict

    metrics.unlink()  # repaired: only the first run's rows are in it
    saved.rename(metrics)
    assert sorted(r["batch_id"] for r in metrics_rows(spark, cfg)) == kept
    again: list[str] = []
    run_pipeline(spark, cfg, validate=False, progress=again.append)

    backfilled = len(result.batches)
    assert f"run metrics: backfilled {backfilled} batches" in "\n".join(again), again
    rows = assert_one_row_per_commit(spark, cfg, sent)
    by_batch = {r["batch_id"]: r for r in rows}
    for b in result.batches:  # the backfilled rows say what the batches themselves saw
        row = by_batch[b.batch_id]
        assert (row["records_in"], row["quarantined"], row["duplicates_in_batch"],
                row["duplicates_by_merge"], row["inserted"], row["run_id"]) == (
            b.records_in, b.quarantined, b.duplicates_in_batch, b.duplicates_by_merge,
            b.inserted, result.run_id)
        assert row["event_dates"] == ",".join(d.isoformat() for d in b.event_dates)

    run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)  # nothing missing now
    assert len(metrics_rows(spark, cfg)) == len(rows)


@pytest.mark.extended
@pytest.mark.slow
def test_a_crash_after_the_target_commit_is_backfilled_though_the_replay_is_skipped(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    topic = f"books-{uuid.uuid4().hex[:8]}"
    sent = produce_events(broker.bootstrap_servers, topic, 1200, duplicate_rate=0.1,
                          poison_rate=0.02, seed=22)
    # 1,344 records in batches of at most 700: batch 0 and batch 1, the one killed; the restart
    # has nothing after the replay to run.
    path = write_config(lake, broker.bootstrap_servers, topic,
                        source={"max_records_per_batch": 700})
    cfg = load_config(path, environ={})

    crashed = run(path, fault="after_target_commit@1")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr[-2000:]
    # The crash of tests/pipelines/test_crash.py (in make chaos): batch 1 planned, committed to
    # the target, and never committed by Spark.
    checkpoint = Path(cfg.checkpoint)
    assert (checkpoint / "offsets" / "1").exists()
    assert not (checkpoint / "commits" / "1").exists()
    assert 1 in {c.batch_id for c in state.sink_commits(spark, cfg.target.ref, cfg.name)}
    # The rows wait for the query's end, or a flush every minute while it runs
    # (quality/recorder.py): the kill took batch 1's row, and batch 0's unless a slow run
    # (a loaded machine) flushed it first. Whatever is missing is what the restart backfills.
    flushed = ({r["batch_id"] for r in metrics_rows(spark, cfg)}
               if cfg.quality.metrics_ref.exists(spark) else set())
    assert flushed <= {0}, flushed  # batch 1 never finished in Spark's eyes: no row for it
    missing = sorted({0, 1} - flushed)
    noun = "batch" if len(missing) == 1 else "batches"

    # The restart is `deltasink run`'s main() in this process, on the session's SparkSession:
    # the SIGKILL above needed a process of its own, the restart does not.
    capsys.readouterr()
    code = main(["run", "--config", str(path), "--no-validate"])
    out, err = capsys.readouterr()

    assert code == 0, err[-2000:]
    assert (f"run metrics: backfilled {len(missing)} {noun} from the target's history "
            f"(batch ids {', '.join(map(str, missing))})") in out, out
    assert "batch 1: " in out and "(replay: already committed, skipped)" in out
    rows = assert_one_row_per_commit(spark, cfg, sent)
    batch1 = next(r for r in rows if r["batch_id"] == 1)
    assert batch1["lag_records"] is None  # its progress died with the process
    history = {int(h["version"]): h for h in cfg.target.ref.history(spark).collect()}
    assert batch1["target_version"] in history
    assert batch1["inserted"] == int(
        history[batch1["target_version"]]["operationMetrics"]["numTargetRowsInserted"]) > 0
    verdict = check(spark, cfg, sent.event_ids, sum(sent.poison.values()))
    assert verdict.clean, verdict
