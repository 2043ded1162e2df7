"""Scenario 7: bad input at the edges; each record lands or is quarantined, once; the job lives."""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Producer
from pyspark.sql import SparkSession

from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.topics import client_config, ensure_topic
from pipelines.run import run_pipeline
from tests.chaos.conftest import PROFILES, Profile, record
from tests.support.checker import Verdict
from tests.support.configs import make_config

T = "2026-01-01T00:00:00Z"
Expect = Callable[[str | None, str | None], bool]  # (landed event_id, quarantine reason)


def event(event_id: object, event_type: object = "order_placed", event_time: object = T,
          payload: object = None, **extra: object) -> bytes:
    doc: dict[str, object] = {"event_id": event_id, "event_type": event_type,
                              "event_time": event_time, **extra}
    if payload is not None:
        doc["payload"] = payload
    return json.dumps(doc, ensure_ascii=False).encode()


def lands(event_id: str) -> Expect:
    return lambda landed, reason: landed == event_id and reason is None


def quarantined(prefix: str) -> Expect:
    return lambda landed, reason: landed is None and (reason or "").startswith(prefix)


def either(landed: str | None, reason: str | None) -> bool:
    return (landed is None) != (reason is None)


def edge_records(profile: Profile, rng: random.Random
                 ) -> list[tuple[str, bytes | None, bytes | None, Expect]]:
    """(description, key, value, expectation), in the order they are sent."""
    depth = 3000
    nested = (event("nested")[:-1] + b', "payload": ' + b'{"n": ' * depth + b"1"
              + b"}" * depth + b"}")
    weird = "ctl-\x01\x07\t\n\r\x1b-😀🔥-ünï-" + "\u202e" + "-end"
    sql_id = "x' OR 1=1 --"
    out: list[tuple[str, bytes | None, bytes | None, Expect]] = [
        ("10 MB record", None, event("huge", payload={"blob": "x" * 10_000_000}),
         quarantined("oversized")),
        ("deeply nested JSON", None, nested, either),
        ("10,000-char event_id", None, event("k" * 10_000), quarantined("too_long:event_id")),
        ("10,000-char Kafka key", b"K" * 10_000, event("long-kafka-key"), lands("long-kafka-key")),
        ("control chars and emoji", weird.encode(), event(weird, payload={"note": weird}),
         lands(weird)),
        ("SQL in key and values", sql_id.encode(),
         event(sql_id, event_type="'; DROP TABLE orders; --", payload={"q": "' OR 1=1 --"}),
         lands(sql_id)),
        ("SQL in the value only", None, event("sql-2", event_type="1; DELETE FROM t WHERE 1=1"),
         lands("sql-2")),
        ("event_id: number", None, event(123), quarantined("bad_type:event_id")),
        ("event_id: object", None, event({"a": 1}), quarantined("bad_type:event_id")),
        ("event_type: list", None, event("t-1", event_type=[1]),
         quarantined("bad_type:event_type")),
        ("event_type: bool", None, event("t-2", event_type=True),
         quarantined("bad_type:event_type")),
        ("event_time: number", None, event("t-3", event_time=1700000000),
         quarantined("bad_")),
        ("event_time: object", None, event("t-4", event_time={"s": 1}), quarantined("bad_")),
        ("payload: string", None, event("t-5", payload="not an object"),
         quarantined("bad_type:payload")),
        ("payload: list", None, event("t-6", payload=[1, 2]), quarantined("bad_type:payload")),
        ("event_time: year 1000", None, event("past-1", event_time="1000-01-01T12:00:00Z"),
         either),
        ("event_time: 1900", None, event("past-2", event_time="1900-01-01T00:00:00Z"),
         lands("past-2")),
        ("event_time: year 9999", None, event("future-1", event_time="9999-12-31T23:59:59Z"),
         either),
        ("event_time: 2200", None, event("future-2", event_time="2200-06-01T12:00:00+02:00"),
         lands("future-2")),
    ]
    out += [("poison run", None, b'{"event_id": "broken-%d", ' % i, quarantined("invalid_json"))
            for i in range(profile.poison_run)]
    out.append(("valid after the poison run", None, event("after-poison"),
                lands("after-poison")))
    return out


def send(bootstrap: str, topic: str, records: list[tuple[bytes | None, bytes | None]]
         ) -> list[int]:
    """Send to partition 0 in order; return each record's offset."""
    producer = Producer({**client_config(bootstrap), "enable.idempotence": True,
                         "message.max.bytes": 16_000_000, "linger.ms": 20})
    offsets: list[int] = [-1] * len(records)

    def delivered(index: int) -> Callable[[object, object], None]:
        def callback(err: object, msg: object) -> None:
            assert err is None, err
            offsets[index] = msg.offset()  # type: ignore[attr-defined]
        return callback

    for i, (key, value) in enumerate(records):
        while True:
            try:
                producer.produce(topic, key=key, value=value, partition=0,
                                 on_delivery=delivered(i))
                break
            except BufferError:
                producer.poll(0.1)
    assert producer.flush(120) == 0
    return offsets


@pytest.mark.parametrize("profile", PROFILES)
def test_edge_records_land_or_are_quarantined_once(spark: SparkSession, broker: EmbeddedBroker,
                                                   lake: Path, topic: str, profile: Profile,
                                                   seed: int) -> None:
    bootstrap = broker.bootstrap_servers
    ensure_topic(bootstrap, topic, 1)
    records = edge_records(profile, random.Random(seed))
    offsets = send(bootstrap, topic, [(k, v) for _, k, v, _ in records])
    cfg = make_config(lake, bootstrap, topic)
    result = run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)
    assert result.records_in == len(records)

    landed = Counter()  # type: Counter[int]
    ids: dict[int, str] = {}
    for row in cfg.target.ref.read(spark).select("event_id", "kafka_offset").collect():
        landed[row["kafka_offset"]] += 1
        ids[row["kafka_offset"]] = row["event_id"]
    q = Counter()  # type: Counter[int]
    reasons: dict[int, str] = {}
    for row in cfg.target.quarantine_ref.read(spark).select("kafka_offset", "reason").collect():
        q[row["kafka_offset"]] += 1
        reasons[row["kafka_offset"]] = row["reason"]
    wrong = [(what, ids.get(off, "")[:40], reasons.get(off))
             for (what, _, _, expect), off in zip(records, offsets, strict=True)
             if not expect(ids.get(off), reasons.get(off))]
    verdict = Verdict(lost=sum(1 for o in offsets if not landed[o] and not q[o]),
                      duplicated=sum(1 for n in landed.values() if n > 1),
                      unexpected=len(set(landed) - set(offsets)),
                      quarantine_lost=0,
                      quarantine_duplicated=sum(1 for n in q.values() if n > 1))
    record("7 bad input at the edges", profile, verdict,
           f"{len(records)} records, {profile.poison_run} pills in a row, {len(wrong)} wrong")
    assert not wrong, wrong[:20]
    assert verdict.clean, verdict
    # The job is alive: the next run on the same checkpoint still works, with nothing to do.
    assert run_pipeline(spark, cfg, validate=False, progress=lambda _l: None).records_in == 0


@pytest.mark.parametrize("profile", PROFILES)
def test_empty_topic_then_a_single_record(spark: SparkSession, broker: EmbeddedBroker,
                                          lake: Path, topic: str, profile: Profile) -> None:
    bootstrap = broker.bootstrap_servers
    ensure_topic(bootstrap, topic, 3)
    cfg = make_config(lake, bootstrap, topic)
    empty = run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)
    assert empty.records_in == 0 and cfg.target.ref.read(spark).count() == 0
    send(bootstrap, topic, [(b"only", event("only-one"))])
    one = run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)
    assert one.inserted == 1
    rows = [r["event_id"] for r in cfg.target.ref.read(spark).select("event_id").collect()]
    verdict = Verdict(lost=int(rows != ["only-one"]), duplicated=0, unexpected=0,
                      quarantine_lost=0, quarantine_duplicated=0)
    record("7 empty topic, then a 1-record topic", profile, verdict, "")
    assert rows == ["only-one"]


@pytest.mark.parametrize("profile", PROFILES)
def test_event_time_outside_years_1000_to_9999_is_quarantined(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path, topic: str,
        profile: Profile) -> None:
    bootstrap = broker.bootstrap_servers
    ensure_topic(bootstrap, topic, 1)
    far = send(bootstrap, topic, [(None, event("past-far", event_time="0001-01-01T00:00:00Z")),
                                  (None, event("future-far", event_time="99999-01-01T00:00:00Z")),
                                  (None, event("after-far"))])
    cfg = make_config(lake, bootstrap, topic)
    run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)
    reasons = {r["kafka_offset"]: r["reason"]
               for r in cfg.target.quarantine_ref.read(spark).collect()}
    assert all(reasons.get(o, "").startswith("bad_timestamp:event_time") for o in far[:2]), reasons
    landed = [r["event_id"] for r in cfg.target.ref.read(spark).select("event_id").collect()]
    verdict = Verdict(lost=int(landed != ["after-far"]), duplicated=0, unexpected=0,
                      quarantine_lost=sum(1 for o in far[:2] if o not in reasons),
                      quarantine_duplicated=0)
    record("7 event_time in year 1 / 99999", profile, verdict, "bad_timestamp, job alive")
    assert landed == ["after-far"]
