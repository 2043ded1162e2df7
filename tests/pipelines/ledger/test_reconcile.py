"""Operator actions on the checkpoint: rolled back, copied from another pipeline, restored table.

Each scenario used to lose data with exit 0. Now the run finds the disagreement between the
checkpoint and the target table, moves the checkpoint aside, resumes from the table's offsets,
and every event lands exactly once.
"""

from __future__ import annotations

import shutil
import threading
import time
import uuid
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import produce_events
from pipelines.ledger import checkpoint
from pipelines.ledger.reconcile import ahead_of_table, differences
from pipelines.run import run_pipeline
from tests.support.checker import check
from tests.support.checkpoint_files import roll_back
from tests.support.configs import make_config


def new_topic() -> str:
    return f"ops-{uuid.uuid4().hex[:8]}"


def retired(location: str) -> list[Path]:
    """The checkpoint's retirement records (``checkpoint.retire``)."""
    return sorted((Path(location) / "_deltasink" / "generations").glob("*"))


def test_differences_and_ahead_name_each_partition() -> None:
    assert differences({"t": {0: 5, 1: 7}}, {"t": {0: 5, 1: 9}}) == ["t[1] 7 -> 9"]
    assert differences({"t": {0: 5}}, {"t": {0: 5}}) == []
    assert ahead_of_table({"t": {0: 5, 1: 0}}, None) == ["t[0] table - < checkpoint 5"]
    assert ahead_of_table({"t": {0: 5}}, {"t": {0: 5}}) == []
    assert ahead_of_table({"t": {0: 4}}, {"t": {0: 5}}) == []  # table ahead: a replay follows


@pytest.mark.extended
@pytest.mark.parametrize("rolled_back", [pytest.param(1, marks=pytest.mark.chaos), 3])
def test_checkpoint_rolled_back_while_records_arrive_loses_nothing(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path, rolled_back: int) -> None:
    """[1] runs in make chaos; [3] (three committed batches re-planned) covers it in make test."""
    topic = new_topic()
    # A tenth of the records it had (4,500, 3,000, 500 in batches of 1,000): the same batches.
    cfg = make_config(lake, broker.bootstrap_servers, topic,
                      source={"max_records_per_batch": 100})
    first = produce_events(broker.bootstrap_servers, topic, 450, poison_rate=0.01, seed=21)
    result = run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)
    assert len(result.batches) == 5  # 4 full batches and a partial one
    # New records arrive; the operator restores an older checkpoint (or deletes its newest
    # files, the usual forum advice for a stuck stream) and raises the batch size. Spark would
    # re-plan the rolled-back batch ids over a wider range than the one committed (one batch).
    second = produce_events(broker.bootstrap_servers, topic, 300, poison_rate=0.01, seed=22,
                            id_prefix="new")
    roll_back(cfg.checkpoint, rolled_back)
    cfg = make_config(lake, broker.bootstrap_servers, topic)
    lines: list[str] = []
    run_pipeline(spark, cfg, validate=False, progress=lines.append)
    assert any("checkpoint does not match the target" in line and "rolled back" in line
               for line in lines), lines
    assert len(retired(cfg.checkpoint)) == 1
    poison = sum(first.poison.values()) + sum(second.poison.values())
    verdict = check(spark, cfg, first.event_ids + second.event_ids, poison)
    assert verdict.clean, verdict
    # And the recovered pipeline goes on as usual.
    third = produce_events(broker.bootstrap_servers, topic, 50, seed=23, id_prefix="later")
    again = run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)
    assert again.inserted == 50
    verdict = check(spark, cfg, first.event_ids + second.event_ids + third.event_ids, poison)
    assert verdict.clean, verdict


# A true replay (only the last checkpoint commit lost), with new records behind it, is not
# taken for a roll-back: tests/pipelines/test_run.py, test_a_replayed_batch_is_a_no_op.


@pytest.mark.extended
def test_checkpoint_copied_from_another_pipeline_loses_nothing(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path) -> None:
    topic = new_topic()
    sent = produce_events(broker.bootstrap_servers, topic, 2000, poison_rate=0.01, seed=26)
    cfg_a = make_config(lake, broker.bootstrap_servers, topic, name="pipeline_a")
    run_pipeline(spark, cfg_a, validate=False, progress=lambda _l: None)
    # A second pipeline on the same topic, into its own table, started from a copy of a's
    # checkpoint (a template job cloned with its state): it must not start where a stopped.
    cfg_b = make_config(lake, broker.bootstrap_servers, topic, name="pipeline_b",
                        target={"path": str(lake / "b"), "quarantine_path": str(lake / "bq")})
    shutil.copytree(cfg_a.checkpoint, cfg_b.checkpoint)
    (Path(cfg_b.checkpoint) / ".deltasink.lock").unlink(missing_ok=True)
    lines: list[str] = []
    result = run_pipeline(spark, cfg_b, validate=False, progress=lines.append)
    assert any("checkpoint does not match the target" in line and "another pipeline" in line
               for line in lines), lines
    assert result.inserted == 2000
    verdict = check(spark, cfg_b, sent.event_ids, sum(sent.poison.values()))
    assert verdict.clean, verdict


@pytest.mark.extended
def test_restore_under_the_pipeline_is_reingested_exactly_once(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path) -> None:
    topic = new_topic()
    cfg = make_config(lake, broker.bootstrap_servers, topic)
    first = produce_events(broker.bootstrap_servers, topic, 2000, seed=27)
    run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)
    after_first = cfg.target.ref.history(spark, 1).first()["version"]  # type: ignore[index]
    second = produce_events(broker.bootstrap_servers, topic, 2000, seed=28, id_prefix="two")
    run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)
    # A bad deploy is rolled back by hand: the second run's 2,000 rows disappear.
    spark.sql(f"RESTORE TABLE delta.`{cfg.target.path}` TO VERSION AS OF {after_first}")
    assert cfg.target.ref.read(spark).count() == 2000
    lines: list[str] = []
    result = run_pipeline(spark, cfg, validate=False, progress=lines.append)
    assert any("restored" in line for line in lines), lines
    assert result.inserted == 2000
    verdict = check(spark, cfg, first.event_ids + second.event_ids, 0)
    assert verdict.clean, verdict
    assert checkpoint.has_state(spark, cfg.checkpoint)


@pytest.mark.extended
def test_restore_while_the_run_is_writing_stops_the_batch_and_reingests_exactly_once(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    topic = new_topic()
    cfg = make_config(lake, broker.bootstrap_servers, topic,
                      source={"max_records_per_batch": 700})
    sent = produce_events(broker.bootstrap_servers, topic, 2000, seed=31)
    pause = lake / "pause"
    pause.mkdir()
    monkeypatch.setenv("DELTASINK_FAULT", f"pause_in_batch={pause}@2")
    lines: list[str] = []
    outcome: dict[str, object] = {}

    def go() -> None:
        try:
            outcome["result"] = run_pipeline(spark, cfg, validate=False, progress=lines.append)
        except BaseException as exc:
            outcome["error"] = exc

    runner = threading.Thread(target=go)
    runner.start()
    deadline = time.monotonic() + 600
    while not (pause / "ready-2").exists():
        assert runner.is_alive(), ("the run ended before batch 2", outcome, lines)
        assert time.monotonic() < deadline, ("hung: batch 2 not reached in 600 s", lines)
        time.sleep(0.5)
    # Batches 0 and 1 are in; batch 2 is in flight. An operator rolls back batch 1 by hand.
    history = cfg.target.ref.history(spark).collect()
    batch0 = min(r["version"] for r in history if r["operation"] == "MERGE")
    spark.sql(f"RESTORE TABLE delta.`{cfg.target.path}` TO VERSION AS OF {batch0}")
    (pause / "go").write_text("")
    runner.join(timeout=600)

    assert not runner.is_alive(), ("hung: the run had not ended 600 s after the RESTORE", lines)
    assert "error" not in outcome, outcome
    assert "result" in outcome, outcome
    assert any("restored while this run was writing" in line for line in lines), lines
    verdict = check(spark, cfg, sent.event_ids, sum(sent.poison.values()))
    assert verdict.clean, verdict
