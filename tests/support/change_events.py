"""Debezium change events of a small table, built like the real ones (JSON converter, schemas
on), and the Python models a replica and a history must converge to.

The table is ``items (id int PRIMARY KEY, name text, qty int)``; a :class:`Change` is one event
of it at a source position (Postgres's LSN). The schemas and the envelope are the corpus's
(tests/data/debezium/), cut down to these columns.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from tests.support.topic_records import TopicRecord

TOPIC = "shop.public.items"
_ROW = {"type": "struct", "optional": True, "name": "shop.public.items.Value", "fields": [
    {"type": "int32", "optional": False, "field": "id"},
    {"type": "string", "optional": True, "field": "name"},
    {"type": "int32", "optional": True, "field": "qty"}]}
_SOURCE = {"type": "struct", "optional": False, "name": "io.debezium.connector.postgresql.Source",
           "field": "source", "fields": [
               {"type": "string", "optional": False, "field": "connector"},
               {"type": "int64", "optional": False, "field": "ts_ms"},
               {"type": "string", "optional": True, "field": "snapshot"},
               {"type": "int64", "optional": True, "field": "txId"},
               {"type": "int64", "optional": True, "field": "lsn"}]}
VALUE_SCHEMA = {"type": "struct", "optional": False, "name": "shop.public.items.Envelope",
                "fields": [{**_ROW, "field": "before"}, {**_ROW, "field": "after"}, _SOURCE,
                           {"type": "string", "optional": False, "field": "op"},
                           {"type": "int64", "optional": True, "field": "ts_ms"}]}
KEY_SCHEMA = {"type": "struct", "optional": False, "name": "shop.public.items.Key",
              "fields": [{"type": "int32", "optional": False, "field": "id"}]}


@dataclass(frozen=True)
class Change:
    """One change of row ``id`` at ``lsn``: ``op`` r, c, u, d or t (a truncate: no ``id``)."""

    op: str
    id: int | None
    lsn: int
    name: str | None = None
    qty: int | None = None

    def row(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "qty": self.qty}

    def records(self) -> list[TopicRecord]:
        """The Kafka records Debezium sends: the event, and a tombstone after a delete."""
        key = None if self.id is None else json.dumps(
            {"schema": KEY_SCHEMA, "payload": {"id": self.id}}, separators=(",", ":"))
        source = {"connector": "postgresql", "ts_ms": 1_700_000_000_000 + self.lsn,
                  "snapshot": "true" if self.op == "r" else "false", "txId": self.lsn,
                  "lsn": self.lsn}
        payload = {"before": {"id": self.id, "name": None, "qty": None} if self.op == "d"
                   else None,
                   "after": self.row() if self.op in ("r", "c", "u") else None,
                   "source": source, "op": self.op, "ts_ms": 1_700_000_000_000 + self.lsn}
        value = json.dumps({"schema": VALUE_SCHEMA, "payload": payload}, separators=(",", ":"))
        out = [TopicRecord(key, value, TOPIC, 0, 0)]
        if self.op == "d":
            out.append(TopicRecord(key, None, TOPIC, 0, 0))
        return out


def records(changes: Iterable[Change]) -> list[TopicRecord]:
    """Every change's records, in order."""
    return [r for c in changes for r in c.records()]


def history(keys: int, steps: int, rng: random.Random) -> list[Change]:
    """A random life of ``keys`` rows over ``steps`` positions each, as a database would make it:
    a snapshot, then updates, deletes and re-inserts, each at a position of its own (rising per
    key), some updates changing nothing."""
    out: list[Change] = []
    lsn = 100
    alive: dict[int, tuple[str, int]] = {}
    for k in range(1, keys + 1):
        alive[k] = (f"n{k}", k)
        out.append(Change("r", k, lsn, f"n{k}", k))
    for _ in range(steps):
        for k in range(1, keys + 1):
            lsn += rng.randint(1, 50)
            if k not in alive:
                alive[k] = (f"back{lsn}", lsn)
                out.append(Change("c", k, lsn, *alive[k]))
            elif rng.random() < 0.2:
                del alive[k]
                out.append(Change("d", k, lsn))
            elif rng.random() < 0.2:  # an update of another column: the same values here
                out.append(Change("u", k, lsn, *alive[k]))
            else:
                alive[k] = (f"v{lsn}", lsn % 97)
                out.append(Change("u", k, lsn, *alive[k]))
    return out


def replica(changes: Iterable[Change]) -> dict[int, tuple[str | None, int | None]]:
    """The table the changes leave: per key its latest change, deletes and truncates applied."""
    latest: dict[int, Change] = {}
    cut = -1
    for c in changes:
        if c.op == "t":
            cut = max(cut, c.lsn)
        elif c.id is not None and (c.id not in latest or c.lsn > latest[c.id].lsn):
            latest[c.id] = c
    return {k: (c.name, c.qty) for k, c in latest.items() if c.op != "d" and c.lsn > cut}


Version = tuple[int, str | None, int | None, int, int | None]


def versions(changes: Iterable[Change]) -> list[Version]:
    """The history the changes make: (id, name, qty, start, end) per version, every column
    tracked; a change that alters nothing is no version."""
    distinct = {(c.id, c.lsn): c for c in changes}
    cuts = sorted(c.lsn for c in distinct.values() if c.op == "t")
    keys = {c.id for c in distinct.values() if c.id is not None}
    out: list[Version] = []
    for k in sorted(keys):
        events = sorted([c for c in distinct.values() if c.id == k]
                        + [Change("d", k, t) for t in cuts], key=lambda c: c.lsn)
        current: list[Any] | None = None
        for c in events:
            if c.op == "d":
                if current is not None:
                    current[4] = c.lsn
                    out.append(tuple(current))  # type: ignore[arg-type]
                    current = None
            elif current is None or (current[1], current[2]) != (c.name, c.qty):
                if current is not None:
                    current[4] = c.lsn
                    out.append(tuple(current))  # type: ignore[arg-type]
                current = [k, c.name, c.qty, c.lsn, None]
        if current is not None:
            out.append(tuple(current))  # type: ignore[arg-type]
    return sorted(out)


def batches(items: Sequence[Any], size: int) -> list[list[Any]]:
    """``items`` in consecutive chunks of ``size``."""
    return [list(items[i:i + size]) for i in range(0, len(items), size)]
