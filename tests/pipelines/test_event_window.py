"""An event-time dedup window: copies caught within it on any date, and a MERGE that reads only
the time slice a batch's keys can be in; the default window (none in the config), end to end:
what it catches, and the loud validation failure of a copy re-stamped beyond it."""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import random
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Producer
from pyspark.sql import SparkSession

from pipelines.cli import main
from pipelines.config.model import PipelineConfig
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import make_event
from pipelines.kafka.topics import client_config, ensure_topic
from pipelines.run import run_pipeline
from pipelines.sink.event_window import MAX_SPANS, bucket_seconds, dates_of, spans
from pipelines.sink.metrics import BatchMetrics, RunResult
from tests.support.configs import make_config
from tests.support.merge_batches import kafka_batch, rows_per_id, sink_for

HOUR = dt.timedelta(hours=1)
DAY = dt.datetime(2026, 3, 10)
UTC = dt.UTC


def at(hours: float, day: dt.datetime = DAY) -> dt.datetime:
    return day + dt.timedelta(hours=hours)


def test_buckets_are_a_quarter_window_between_a_minute_and_an_hour() -> None:
    assert [bucket_seconds(w) for w in (dt.timedelta(seconds=30), 15 * dt.timedelta(minutes=1),
                                        HOUR, 36 * HOUR)] == [60, 225, 900, 3600]


def test_spans_widen_each_bucket_by_the_window_and_merge_overlaps() -> None:
    width = bucket_seconds(HOUR)  # 900 s
    start = int(at(12).replace(tzinfo=UTC).timestamp()) // width
    got = spans([start, start + 1, start + 40], HOUR)
    assert got == [(at(11).replace(tzinfo=UTC), at(13.5).replace(tzinfo=UTC)),
                   (at(21).replace(tzinfo=UTC), at(23.25).replace(tzinfo=UTC))]
    assert spans([], HOUR) == []


def test_spans_are_capped_by_joining_the_closest_and_never_narrowed() -> None:
    width = bucket_seconds(dt.timedelta(minutes=4))  # 60 s
    buckets = [i * 10 for i in range(MAX_SPANS + 5)]  # 10 min apart: none overlap
    got = spans(buckets, dt.timedelta(minutes=4))
    assert len(got) == MAX_SPANS
    epoch = dt.datetime(1970, 1, 1, tzinfo=UTC)
    for b in buckets:  # every bucket's own span is still inside one of them
        low = epoch + dt.timedelta(seconds=b * width) - dt.timedelta(minutes=4)
        high = epoch + dt.timedelta(seconds=(b + 1) * width) + dt.timedelta(minutes=4)
        assert any(lo <= low and high <= hi for lo, hi in got)


def test_a_span_across_midnight_reads_both_dates() -> None:
    assert dates_of([(at(23).replace(tzinfo=UTC), at(25).replace(tzinfo=UTC))]) == [
        DAY.date(), DAY.date() + dt.timedelta(days=1)]


def test_spans_and_dates_at_the_ends_of_time_stop_there_instead_of_overflowing() -> None:
    last = dt.datetime(9999, 12, 31, 23, 30, tzinfo=UTC)  # the latest time the parser lets in
    bucket = int(last.timestamp()) // bucket_seconds(HOUR)
    (low, high), = spans([bucket], HOUR)
    assert low <= last - HOUR and high == dt.datetime.max.replace(tzinfo=UTC)
    assert dates_of([(low, high)]) == [dt.date(9999, 12, 31)]
    first = dt.datetime(1, 1, 1, 0, 30, tzinfo=UTC)
    (low, high), = spans([int(first.timestamp()) // bucket_seconds(HOUR)], HOUR)
    assert low == dt.datetime.min.replace(tzinfo=UTC) and high >= first + HOUR
    assert dates_of([(low, high)]) == []  # before year 1000: no event_date can hold it


@pytest.mark.extended
@pytest.mark.parametrize("partition_by", [["event_date"], []])
def test_a_copy_is_caught_within_the_window_on_any_date_and_lands_again_beyond_it(
        spark: SparkSession, lake: Path, partition_by: list[str]) -> None:
    cfg = make_config(lake, "127.0.0.1:1", "orders",
                      target={"dedup_window": "1h", "partition_by": partition_by},
                      quality={"count_other_date_copies": True})
    seen: list[BatchMetrics] = []
    sink = sink_for(spark, cfg, seen)
    sink(kafka_batch(spark, [("e1", at(23.75)), ("e2", at(10)), ("e3", at(23.5))], 0), 0)
    # e1 re-stamped 40 min later, past midnight (caught); e2 2.5 h later (beyond: lands);
    # e3 sent again unchanged (caught); e4 new.
    again = [("e1", at(24 + 1 / 3)), ("e2", at(12.5)), ("e3", at(23.5)), ("e4", at(24.25))]
    sink(kafka_batch(spark, again, 3), 1)
    # e2 between its two rows, within the window of both: matches both, no multiple-match error.
    sink(kafka_batch(spark, [("e2", at(11.5))], 7), 2)
    sink(kafka_batch(spark, again, 3), 1)  # batch 1 replayed: a skip, proven

    rows = {}
    for r in cfg.target.ref.read(spark).orderBy("event_time").collect():
        rows.setdefault(r["event_id"], []).append(r["event_time"])
    assert rows == {"e1": [at(23.75)], "e2": [at(10), at(12.5)], "e3": [at(23.5)],
                    "e4": [at(24.25)]}
    assert [(b.inserted, b.duplicates_by_merge, b.duplicates_other_date, b.replayed)
            for b in seen] == [(3, 0, 0, False), (2, 2, 1, False), (0, 1, 0, False),
                               (0, 0, 0, True)]


def test_the_merge_reads_only_the_files_of_its_time_slice(spark: SparkSession, lake: Path
                                                          ) -> None:
    cfg = make_config(lake, "127.0.0.1:1", "orders", target={"dedup_window": "1h"})
    seen: list[BatchMetrics] = []
    sink = sink_for(spark, cfg, seen)
    sink(kafka_batch(spark, [("night", at(0.5))], 0), 0)
    partition = Path(cfg.target.ref.location) / f"event_date={DAY.date()}"
    night_files = set(partition.glob("*.parquet"))
    assert night_files
    sink(kafka_batch(spark, [("noon", at(12))], 1), 1)
    for data in night_files:
        data.unlink()  # a MERGE that read the 00:30 file would now fail

    sink(kafka_batch(spark, [("noon", at(12 + 5 / 60)), ("later", at(12 + 10 / 60))], 2), 2)
    assert (seen[-1].inserted, seen[-1].duplicates_by_merge) == (1, 1)  # same date, no 00:30
    with pytest.raises(Exception, match=r"(?i)not.*(found|exist)"):
        # within 1 h of 00:30, with a key in that file's key range (else its statistics skip it)
        sink(kafka_batch(spark, [("night", at(1 + 20 / 60))], 4), 3)



def test_a_table_written_under_the_old_1d_default_needs_no_migration(
        spark: SparkSession, lake: Path) -> None:
    old = make_config(lake, "127.0.0.1:1", "orders", target={"dedup_window": "1d"})
    seen: list[BatchMetrics] = []
    sink_for(spark, old, seen)(kafka_batch(spark, [("a", at(12)), ("b", at(23.9))], 0), 0)
    new = make_config(lake, "127.0.0.1:1", "orders")  # the same table, the config left alone
    assert new.target.time_window == dt.timedelta(minutes=15)

    # a again as it was, b re-stamped 10 min later onto the next date, c new
    sink_for(spark, new, seen)(
        kafka_batch(spark, [("a", at(12)), ("b", at(24 + 1 / 30)), ("c", at(13))], 2), 1)
    assert (seen[-1].inserted, seen[-1].duplicates_by_merge) == (1, 2)
    assert rows_per_id(spark, new) == {"a": [DAY.date()], "b": [DAY.date()], "c": [DAY.date()]}

# The default window (no target.dedup_window in the config): one scenario of three runs
# against the real broker, shared by the assertions below.
RUN_DAY = dt.datetime(2026, 3, 10, tzinfo=UTC)
#: (event id, event time) per run; a copy is the same id again.
RUNS: list[list[tuple[str, dt.datetime]]] = [
    # a producer retry in the same batch (a twice, same time), b five minutes before midnight
    [("a", at(12, RUN_DAY)), ("a", at(12, RUN_DAY)), ("b", at(23 + 55 / 60, RUN_DAY)),
     ("c", at(8, RUN_DAY)), ("d", at(22, RUN_DAY))],
    # a later run, after the table grew onto another date (e, 3 days on): a sent again with its
    # own time (a replay, days apart), b re-stamped 10 min later across midnight, c 10 min later
    [("e", at(72 + 9, RUN_DAY)), ("a", at(12, RUN_DAY)), ("b", at(24 + 5 / 60, RUN_DAY)),
     ("c", at(8 + 10 / 60, RUN_DAY))],
    # d re-stamped 3 h later, past the window and past midnight: this run writes only that date
    [("d", at(25, RUN_DAY))],
]


@dataclass
class Scenario:
    cfg: PipelineConfig
    config_file: Path
    results: list[RunResult]
    third: tuple[int, str, str]  # exit code, stdout, stderr of `deltasink run`, in process


@pytest.fixture(scope="module")
def default_window(spark: SparkSession, broker: EmbeddedBroker,
                   tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    lake = tmp_path_factory.mktemp("default_window")
    topic = f"orders-{uuid.uuid4().hex[:8]}"
    ensure_topic(broker.bootstrap_servers, topic, 1)
    cfg = make_config(lake, broker.bootstrap_servers, topic)  # no dedup_window: the default
    config_file = lake / f"{cfg.name}.yml"
    assert "dedup_window" not in config_file.read_text()
    producer = Producer({**client_config(broker.bootstrap_servers), "enable.idempotence": True})
    rng, results = random.Random(45), []

    def send(events: list[tuple[str, dt.datetime]]) -> None:
        for event_id, when in events:
            producer.produce(topic, key=event_id.encode(), value=make_event(event_id, when, rng))
        assert producer.flush(30) == 0

    for events in RUNS[:2]:
        send(events)
        results.append(run_pipeline(spark, cfg, progress=lambda _l: None))  # validated
    send(RUNS[2])
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(["run", "--config", str(config_file)])
    return Scenario(cfg, config_file, results, (code, stdout.getvalue(), stderr.getvalue()))


def test_the_default_window_is_an_event_time_window(default_window: Scenario) -> None:
    assert default_window.cfg.target.time_window == dt.timedelta(minutes=15)


def test_the_default_catches_retries_replays_and_copies_across_midnight(
        spark: SparkSession, default_window: Scenario) -> None:
    first, second = default_window.results
    assert (first.inserted, sum(b.duplicates_in_batch for b in first.batches)) == (4, 1)
    # a (same time, days later), b (across midnight) and c (10 min later) were all caught
    assert (second.inserted, sum(b.duplicates_by_merge for b in second.batches)) == (1, 3)
    rows: dict[str, list[dt.datetime]] = {}
    for r in default_window.cfg.target.ref.read(spark).orderBy("event_time").collect():
        rows.setdefault(r["event_id"], []).append(r["event_time"])
    day = RUN_DAY.replace(tzinfo=None)
    assert rows == {"a": [at(12, day)], "b": [at(23 + 55 / 60, day)], "c": [at(8, day)],
                    "d": [at(22, day), at(25, day)],  # beyond the window: landed twice
                    "e": [at(81, day)]}


def test_a_copy_restamped_beyond_the_window_fails_the_runs_validation_loudly(
        spark: SparkSession, default_window: Scenario) -> None:
    code, out, err = default_window.third
    assert code == 3
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("data quality check failed: "), err
    # The run wrote only the next date; the first row of d is on the day before. The key is
    # unique within the run's date, so only the check against the other dates can see it.
    failed = [line for line in out.splitlines() if "FAILED" in line and "quality" not in line]
    assert len(failed) == 1, out
    assert "expect_key_unique_across_dates" in failed[0] and "d" in failed[0].split("keys:")[-1]
    assert f"{RUN_DAY.date()}" in failed[0]  # the other row's date is named
