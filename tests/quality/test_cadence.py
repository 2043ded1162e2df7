"""Validation on a cadence in ``--trigger continuous`` (issue 13 §2), on the real broker and
real Delta tables: each validation covers exactly the batches since the previous one."""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.cli import main
from pipelines.config.model import PipelineConfig
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import produce_events
from pipelines.run import run_pipeline
from pipelines.sink.metrics import BatchMetrics
from quality.cadence import CadenceValidator
from quality.results_read import read_validation_results
from quality.suites import QUARANTINE_EXPECTATION
from tests.support.checker import check
from tests.support.configs import make_config, write_config

#: "quality cadence <run>-c<n>: batches <a>..<b>: in=<n> ...; <k> partitions at table version <v>"
COVERED = re.compile(r"^quality cadence (\S+-c\d+): batches (\d+)\.\.(\d+): in=(\d+) .* at "
                     r"table version (\d+)$")

#: The progress line of one batch: "batch <id>: in=<n> ..."
BATCH = re.compile(r"^batch (\d+): in=(\d+) ")


def wait_until(what: str, ready: Callable[[], bool], lines: list[str],
               timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(1)
    pytest.fail(f"timed out waiting for {what}; progress so far: {lines[-30:]}")


def covered(lines: list[str]) -> list[tuple[str, int, int, int, int]]:
    """(validation id, first batch, last batch, table version, records in) per cadence line."""
    out = []
    for line in list(lines):
        m = COVERED.match(line)
        if m:
            out.append((m[1], int(m[2]), int(m[3]), int(m[5]), int(m[4])))
    return out


def batch_total(lines: list[str], field: str) -> int:
    """The sum of ``field`` (e.g. ``quarantined``) over the batch lines so far."""
    found = (re.search(rf" {field}=(\d+) ", line) for line in list(lines) if BATCH.match(line))
    return sum(int(m[1]) for m in found if m)


def quarantine_verdicts(spark: SparkSession, cfg: PipelineConfig) -> dict[str, bool]:
    return {r["run_id"]: r["success"] for r in read_validation_results(spark, cfg)
            if r["expectation"] == QUARANTINE_EXPECTATION}


@pytest.mark.extended
def test_cadence_validations_cover_exactly_the_new_batches_and_a_failure_continues(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path) -> None:
    topic = f"cadence-{uuid.uuid4().hex[:8]}"
    cfg = make_config(lake, broker.bootstrap_servers, topic,
                      source={"max_records_per_batch": 100},
                      quality={"validate_every": "2 batches", "on_failure": "continue"})
    a = produce_events(broker.bootstrap_servers, topic, 200, seed=41, id_prefix="a")
    lines: list[str] = []
    errors: list[BaseException] = []

    def background() -> None:
        try:
            run_pipeline(spark, cfg, trigger="continuous", interval="1s", progress=lines.append)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=background, daemon=True)
    thread.start()
    try:
        wait_until("the first cadence validation", lambda: bool(covered(lines)), lines)
        # 20 events and 10 poison pills: a 1% quarantine share cannot hold for their stretch.
        b = produce_events(broker.bootstrap_servers, topic, 20, poison_rate=0.5, seed=42,
                           id_prefix="b")
        # Each wait reads the tables only once the progress lines say it may be time: a Spark
        # read every second would take CPU from the stream it waits for.
        wait_until("the poison pills in quarantine", lambda: batch_total(
            lines, "quarantined") >= 10 and cfg.target.quarantine_ref.exists(spark)
            and cfg.target.quarantine_ref.read(spark).count() == 10, lines)
        # Three batches or more: the poison's stretch fails, the next two batches pass.
        c = produce_events(broker.bootstrap_servers, topic, 300, seed=43, id_prefix="c")

        def failed_then_passed() -> bool:
            failed = next((i for i, line in enumerate(list(lines))
                           if line.endswith("FAILED: recorded; the stream goes on "
                                            "(quality.on_failure: continue)")), None)
            if failed is None or not any(COVERED.match(line) for line in lines[failed:]):
                return False
            verdicts = quarantine_verdicts(spark, cfg)
            order = sorted(verdicts, key=lambda v: int(v.rsplit("-c", 1)[1]))
            first_failure = next((i for i, v in enumerate(order) if not verdicts[v]), None)
            return first_failure is not None and any(verdicts[v]
                                                     for v in order[first_failure + 1:])

        wait_until("a failed cadence validation, then a passing one", failed_then_passed, lines)
        wait_until("every record", lambda: batch_total(lines, "inserted") >= 520
                   and cfg.target.ref.read(spark).count() == 520, lines)
        assert thread.is_alive() and not errors, errors  # the failure did not stop the stream
    finally:
        for query in spark.streams.active:
            query.stop()
        thread.join(120)
    assert not errors, errors
    assert any(line.endswith("FAILED: recorded; the stream goes on (quality.on_failure: "
                             "continue)") for line in lines), lines

    stretches = covered(lines)  # the last one may be the one run when the stream stopped
    batches = {int(m[1]): int(m[2]) for m in map(BATCH.match, lines) if m}  # id -> records in
    expected_first, previous_version = 0, -1
    for n, (vid, first, last, version, records_in) in enumerate(stretches, 1):
        assert vid.endswith(f"-c{n}"), stretches
        assert first == expected_first, stretches  # nothing skipped, nothing validated twice
        assert last - first + 1 == 2 or n == len(stretches), stretches  # every 2 batches
        assert records_in == sum(batches[i] for i in range(first, last + 1)), stretches
        assert version > previous_version  # each reads the snapshot after its last batch
        rows = [r for r in read_validation_results(spark, cfg) if r["run_id"] == vid]
        assert rows and {r["table_version"] for r in rows} == {version}
        verdict = next(r for r in rows if r["expectation"] == QUARANTINE_EXPECTATION)
        assert verdict["observed_value"].split(" ")[0].endswith(f"/{records_in}"), verdict
        expected_first, previous_version = last + 1, version
    # Together they cover every batch of the run, and every record produced, exactly once.
    assert expected_first == max(batches) + 1, (stretches, batches)
    assert sum(s[4] for s in stretches) == 200 + 30 + 300
    verdict = check(spark, cfg, [*a.event_ids, *b.event_ids, *c.event_ids], 10)
    assert verdict.clean, verdict


@pytest.mark.extended
def test_a_failed_cadence_validation_with_on_failure_stop_ends_the_stream_with_exit_3(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    topic = f"cadence-{uuid.uuid4().hex[:8]}"
    path = write_config(lake, broker.bootstrap_servers, topic,
                        source={"max_records_per_batch": 100},
                        quality={"validate_every": "2 batches", "on_failure": "stop"})
    sent = produce_events(broker.bootstrap_servers, topic, 100, poison_rate=0.5, seed=44)
    codes: list[int] = []
    thread = threading.Thread(daemon=True, target=lambda: codes.append(main(
        ["run", "--config", str(path), "--trigger", "continuous", "--interval", "1s"])))
    thread.start()
    thread.join(300)  # the stream ends by itself: 150 records are 2 batches, then validation
    if thread.is_alive():
        for query in spark.streams.active:
            query.stop()
        thread.join(60)
        pytest.fail("the stream did not stop after its failed cadence validation")
    assert codes == [3]
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("data quality check failed: validation ") and \
        err[-1].endswith("-c1 failed (quality.on_failure: stop): the stream was stopped; see "
                         "the failing expectations above"), err
    assert not any("Traceback" in line for line in err), err
    cfg = make_config(lake, broker.bootstrap_servers, topic,
                      source={"max_records_per_batch": 100})
    verdicts = quarantine_verdicts(spark, cfg)
    assert list(verdicts.values()) == [False] and next(iter(verdicts)).endswith("-c1")
    # Both batches are committed; the next run replays the unfinished one as a no-op.
    result = run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)
    assert result.inserted == 0
    verdict = check(spark, cfg, sent.event_ids, 50)
    assert verdict.clean, verdict


def test_a_stretch_without_records_is_not_reported_as_a_pass(
        spark: SparkSession, lake: Path) -> None:
    cfg = make_config(lake, "127.0.0.1:9", "orders", quality={"validate_every": 1})
    lines: list[str] = []
    cadence = CadenceValidator(spark, cfg, "run1", lines.append)
    cadence(BatchMetrics(pipeline=cfg.name, run_id="run1", query_id="q", batch_id=7,
                         records_in=0, quarantined=0, duplicates_in_batch=0,
                         duplicates_by_merge=0, inserted=0, duration_s=0.1,
                         started_at=datetime.now(UTC), target_version=3))
    assert lines == ["quality cadence run1-c1: no new records since the last validation; "
                     "nothing validated"]
    assert cadence.reports == []
    assert read_validation_results(spark, cfg) == []
