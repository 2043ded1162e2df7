"""A sample event generator: valid events, producer duplicates and every kind of poison pill."""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Literal, get_args

from pipelines.kafka.topics import client_config, ensure_topic

#: Poison kinds, each a function of (rng, index) -> (key, value).
POISON_KINDS: dict[str, Callable[[random.Random, int], tuple[bytes | None, bytes | None]]] = {
    "invalid_json": lambda r, i: (None, b'{"event_id": "broken-%d", ' % i),
    "not_an_object": lambda r, i: (None, b'["event_id", 1]'),
    "missing_key": lambda r, i: (None, b'{"event_type":"x","event_time":"2026-01-01T00:00:00Z"}'),
    "null_key": lambda r, i: (None, b'{"event_id":null,"event_type":"x",'
                                    b'"event_time":"2026-01-01T00:00:00Z"}'),
    "empty_key": lambda r, i: (None, b'{"event_id":"  ","event_type":"x",'
                                     b'"event_time":"2026-01-01T00:00:00Z"}'),
    "wrong_type": lambda r, i: (None, b'{"event_id":%d,"event_type":"x",'
                                      b'"event_time":"2026-01-01T00:00:00Z"}' % i),
    "bad_timestamp": lambda r, i: (None, b'{"event_id":"bad-ts-%d","event_type":"x",'
                                         b'"event_time":"yesterday"}' % i),
    "invalid_utf8": lambda r, i: (None, b'{"event_id":"\xff\xfe-%d"}' % i),
    "tombstone": lambda r, i: (b"tombstone-%d" % i, None),
    "oversized": lambda r, i: (None, b'{"event_id":"big-%d","event_type":"x","event_time":'
                                     b'"2026-01-01T00:00:00Z","payload":{"blob":"%s"}}'
                                     % (i, b"x" * 1_100_000)),
}


@dataclass(frozen=True)
class ProduceSummary:
    """What was sent: the valid event ids (once each), and the extra copies and poison pills."""

    topic: str
    sent: int
    event_ids: tuple[str, ...]
    duplicates: int
    poison: dict[str, int] = field(default_factory=dict)
    legacy_ids: tuple[str, ...] = ()

    def describe(self) -> str:
        """One line for the user."""
        legacy = (f", {len(self.legacy_ids)} legacy-format events (events_v2 reads them)"
                  if self.legacy_ids else "")
        return (f"sent {self.sent} records to {self.topic}: {len(self.event_ids)} events, "
                f"{self.duplicates} duplicate copies, {sum(self.poison.values())} poison pills"
                f"{legacy}")


def make_event(event_id: str, when: datetime, rng: random.Random) -> bytes:
    """One valid ``events_v1`` record value."""
    return json.dumps({
        "event_id": event_id, "event_type": rng.choice(["order_placed", "order_paid",
                                                        "order_shipped"]),
        "event_time": when.isoformat().replace("+00:00", "Z"),
        "payload": {"amount": round(rng.uniform(1, 500), 2), "currency": "EUR"},
    }).encode()


def make_legacy_event(event_id: str, when: datetime) -> bytes:
    """One record as an old producer writes it: no ``event_type``, and the event time as
    ``dd.MM.yyyy HH:mm:ss+01:00``. ``events_v1`` quarantines it; ``events_v2`` reads it."""
    local = when.astimezone(timezone(timedelta(hours=1)))
    return json.dumps({"event_id": event_id,
                       "event_time": local.strftime("%d.%m.%Y %H:%M:%S+01:00"),
                       "payload": {"source": "legacy-pos"}}).encode()


Record = tuple[bytes | None, bytes | None]

#: How event ids look: ``seq`` (``<prefix>-<seed>-<n>``, sorted in the order they are sent) or
#: ``uuid`` (random UUIDv4, as most producers mint them: no order, no shared prefix).
IdKind = Literal["seq", "uuid"]
#: Where event times fall: ``spread`` (uniformly over the ``days`` before today's UTC midnight,
#: in no order) or ``arrival`` (rising with the send order over ``span``, ending at ``end``: a
#: backlog that built up while a consumer was down, or a live stream).
TimeLayout = Literal["spread", "arrival"]


def event_ids(count: int, *, kind: IdKind, seed: int, id_prefix: str) -> list[str]:
    """``count`` distinct event ids of ``kind``, deterministically from ``seed``.

    UUIDs come from their own generator (seeded from ``seed``), so choosing them leaves every
    other random draw of :func:`plan_records` (times, copies, payloads) as it is.
    """
    if kind == "seq":
        return [f"{id_prefix}-{seed}-{i:09d}" for i in range(count)]
    if kind != "uuid":
        raise ValueError(f"ids must be one of {get_args(IdKind)}, not {kind!r}")
    draw = random.Random(f"uuid-{seed}")
    return [str(uuid.UUID(int=draw.getrandbits(128), version=4)) for _ in range(count)]


def plan_records(count: int, *, duplicate_rate: float, poison_rate: float, seed: int,
                 id_prefix: str, days: int = 3, legacy_rate: float = 0.0, ids: IdKind = "seq",
                 times: TimeLayout = "spread", span: timedelta = timedelta(hours=6),
                 end: datetime | None = None) -> tuple[list[Record], ProduceSummary]:
    """Build the records to send, deterministically from ``seed`` (pure; no Kafka).

    With ``times="spread"`` (the default) event times fall in the ``days`` before today's UTC
    midnight, so producing the same seed again the same day re-sends identical events (same id,
    same event_time), as a producer retry or an upstream replay would. With ``times="arrival"``
    the n-th event's time is ``end - span + n * span / count`` (``end``: now, unless given), so
    times rise in send order and the newest is just before ``end``; the same seed and ``end``
    give the same records. Copies are sent again up to the end of the topic either way, with
    their original's time; legacy events keep the spread layout.
    """
    if times not in get_args(TimeLayout):
        raise ValueError(f"times must be one of {get_args(TimeLayout)}, not {times!r}")
    rng = random.Random(seed)
    now = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    last = end or datetime.now(UTC)
    names = event_ids(count, kind=ids, seed=seed, id_prefix=id_prefix)
    records: list[Record] = []
    for i, eid in enumerate(names):
        spread = now - timedelta(seconds=rng.uniform(0, days * 86400))  # drawn in both layouts
        when = spread if times == "spread" else last - span + span * i / count
        records.append((eid.encode(), make_event(eid, when, rng)))
    n_dup = round(count * duplicate_rate)
    for i in sorted(rng.sample(range(count), n_dup) if count else [], reverse=True):
        key, value = records[i]
        later = rng.randint(i + 1, len(records))  # same batch or a later one
        records.insert(later, (key if rng.random() < 0.7 else None, value))
    poison: dict[str, int] = {}
    kinds = list(POISON_KINDS)
    for j in range(round(count * poison_rate)):
        kind = kinds[j % len(kinds)]
        poison[kind] = poison.get(kind, 0) + 1
        records.insert(rng.randint(0, len(records)), POISON_KINDS[kind](rng, j))
    legacy = [f"{id_prefix}-{seed}-legacy-{j:06d}" for j in range(round(count * legacy_rate))]
    for eid in legacy:
        when = now - timedelta(seconds=rng.randint(0, days * 86400))
        records.insert(rng.randint(0, len(records)), (None, make_legacy_event(eid, when)))
    summary = ProduceSummary("", len(records), tuple(names), n_dup, poison, tuple(legacy))
    return records, summary


def produce_events(bootstrap: str, topic: str, count: int, *, duplicate_rate: float = 0.0,
                   poison_rate: float = 0.0, seed: int = 0, partitions: int = 3,
                   id_prefix: str = "evt", progress: Callable[[str], None] | None = None,
                   legacy_rate: float = 0.0, days: int = 3, ids: IdKind = "seq",
                   times: TimeLayout = "spread", span: timedelta = timedelta(hours=6)
                   ) -> ProduceSummary:
    """Send ``count`` distinct valid events, plus duplicate copies and poison pills.

    Args:
        bootstrap: Kafka bootstrap servers.
        topic: created with ``partitions`` partitions if missing.
        count: distinct valid events.
        duplicate_rate: extra copies, as a share of ``count`` (0.1 = 10% sent twice).
        poison_rate: poison pills, as a share of ``count``, cycling through every kind.
        seed: the same seed produces the same event ids (a replay of the same events).
        partitions: partitions for a new topic.
        id_prefix: sequential event ids are ``<prefix>-<seed>-<n>``.
        progress: receives a line every 100k records.
        legacy_rate: events in an old producer's format (see :func:`make_legacy_event`), as a
            share of ``count``, with ids ``<prefix>-<seed>-legacy-<n>``.
        days: with ``times="spread"``, event times fall in the ``days`` before today.
        ids: ``seq`` (``<prefix>-<seed>-<n>``) or ``uuid`` (random UUIDv4 drawn from ``seed``).
        times: ``spread`` over ``days`` in no order, or ``arrival``: rising in send order over
            ``span``, ending now (see :func:`plan_records`).
        span: with ``times="arrival"``, how far the oldest event lies before now.

    Returns:
        What was sent.
    """
    from confluent_kafka import Producer

    ensure_topic(bootstrap, topic, partitions)
    records, summary = plan_records(count, duplicate_rate=duplicate_rate,
                                    poison_rate=poison_rate, seed=seed, id_prefix=id_prefix,
                                    legacy_rate=legacy_rate, days=days, ids=ids, times=times,
                                    span=span)
    producer = Producer({**client_config(bootstrap), "enable.idempotence": True,
                         "linger.ms": 20, "compression.type": "lz4",
                         "message.max.bytes": 16_000_000, "queue.buffering.max.messages": 500_000})
    for n, (key, value) in enumerate(records, 1):
        while True:
            try:
                producer.produce(topic, key=key, value=value)
                break
            except BufferError:
                producer.poll(0.1)
        if n % 100_000 == 0:
            producer.poll(0)
            if progress:
                progress(f"  produced {n}/{len(records)}")
    remaining = producer.flush(120)
    if remaining:
        raise RuntimeError(f"{remaining} records were not delivered to {topic}")
    return ProduceSummary(topic, summary.sent, summary.event_ids, summary.duplicates,
                          summary.poison, summary.legacy_ids)
