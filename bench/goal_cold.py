"""The cold-process cells of ``bench.goals`` (1-4 and 8): each side a fresh interpreter and JVM.

As ``bench.scheduled`` times them (its :func:`bench.scheduled.run_once`: ``deltasink run`` with
validation, from a config with the required keys and the batch size, against
``bench/plain_append.py`` with the same batch size), on a topic of the cell's own data:

- ``tables="existing"``: each process first runs once, untimed, on a small backlog, which creates
  its tables and checkpoint; each timed pass produces the cell's events anew and every process
  drains them, as every scheduled trigger but the first does;
- ``tables="new"``: the topic is produced once and every pass writes fresh tables from its start.

A cell with ``floor`` (cell 8) has the raw confluent-kafka consume of the whole topic
(``bench.configs.floor``) as its other side instead of the plain script: its figure is
deltasink's events per second, the process's whole wall time, over the consume's. With a Spark
Connect server's ``remote``, a third process per pass runs ``deltasink run`` through it
(:func:`bench.connect.run_once`), against the same other side; on new tables an untimed run on a
small topic warms the server up first, as the first runs do on existing tables. The second pass
runs the processes in reverse order.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from bench import configs, connect, scheduled
from pipelines.kafka.produce import IdKind, TimeLayout, produce_events

#: Events of the untimed first run with existing tables; their own ids, never the cell's.
PRIME_SEED = 6


@dataclass(frozen=True)
class ColdCell:
    """One cold cell: its row in the report and the topic's data."""

    row: str
    cell: int
    label: str
    events: int
    tables: str = "existing"
    ids: IdKind = "seq"
    times: TimeLayout = "spread"
    days: int = 3
    span_hours: float = 6.0
    dup_rate: float = 0.0
    floor: bool = False

    def produce(self, bootstrap: str, topic: str, seed: int) -> float:
        """Send this cell's events to ``topic`` (seed ``seed``); the seconds it took."""
        mark = time.monotonic()
        produce_events(bootstrap, topic, self.events, duplicate_rate=self.dup_rate, seed=seed,
                       partitions=4, ids=self.ids, times=self.times, days=self.days,
                       span=timedelta(hours=self.span_hours))
        return round(time.monotonic() - mark, 1)


def _run(kind: str, folder: Path, bootstrap: str, topic: str, batch: int,
         remote: str | None) -> dict[str, float]:
    if kind == "connect":
        return connect.run_once(folder, bootstrap, topic, batch, remote)
    return scheduled.run_once(kind, bootstrap, topic, folder, batch)


def run_cold(cell: ColdCell, bootstrap: str, work: Path, *, batch: int, prime: int,
             passes: int, remote: str | None = None,
             say: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """Run ``cell``'s passes; its entry for ``bench.goals_report`` (and the Connect row's,
    with ``remote``), every process's wall time and phases in ``raw``."""
    topic = f"goal_{cell.row.replace('-', '_')}"
    kinds = ([] if cell.floor else ["plain"]) + ["deltasink"] + (["connect"] if remote else [])
    existing = cell.tables == "existing"
    runs: dict[str, list[dict[str, float]]] = {k: [] for k in kinds}
    floors: list[dict[str, float]] = []
    produced: list[float] = []
    if existing:
        produce_events(bootstrap, topic, prime, seed=PRIME_SEED, partitions=4)
        for kind in kinds:  # creates the tables and the checkpoint; untimed
            _run(kind, work / kind, bootstrap, topic, batch, remote)
        say(f"cell {cell.row}: first runs done on {prime:,} events")
    elif remote:  # the server's first runs are slow (its JIT): not a cold client's cost
        produce_events(bootstrap, f"{topic}_warm", prime, seed=PRIME_SEED, partitions=4)
        _run("connect", work / "connect-warm-up", bootstrap, f"{topic}_warm", batch, remote)
    for n in range(passes):
        if existing or n == 0:
            produced.append(cell.produce(bootstrap, topic, seed=7 + n))
            say(f"cell {cell.row}: produced {cell.events:,} events in {produced[-1]}s")
        for kind in kinds if n % 2 == 0 else kinds[::-1]:
            folder = work / (kind if existing else f"{kind}-{n}")
            runs[kind].append(took := _run(kind, folder, bootstrap, topic, batch, remote))
            say(f"cell {cell.row}, {kind} (pass {n + 1}): {took['wall']:.1f}s")
        if cell.floor:
            _batches, records = configs.floor(bootstrap, topic)
            floors.append({"records": records, "seconds": _batches[0]["total_s"]})
            say(f"cell {cell.row}, floor (pass {n + 1}): {records:,} records in "
                f"{floors[-1]['seconds']:.1f}s")
    raw = {"data": asdict(cell), "batch": batch, "prime": prime if existing else 0,
           "produce_s": produced, "runs": runs, "floor": floors}
    return [_entry(cell, kind, runs, floors, raw) for kind in kinds if kind != "plain"]


def _entry(cell: ColdCell, kind: str, runs: dict[str, list[dict[str, float]]],
           floors: list[dict[str, float]], raw: dict[str, Any]) -> dict[str, Any]:
    row = cell.row + ("-connect" if kind == "connect" else "")
    label = cell.label + (" (Spark Connect)" if kind == "connect" else "")
    base = {"cell": cell.cell, "row": row, "label": label, "mode": kind, "raw": raw,
            "passes": len(runs[kind])}
    if cell.floor:  # events/s of the whole process against the raw consume's
        return {**base, "kind": "share",
                "deltasink": [cell.events / r["wall"] for r in runs[kind]],
                "deltasink_stream": [cell.events / r["stream"] for r in runs[kind]
                                     if r.get("stream")],
                "other": [f["records"] / f["seconds"] for f in floors if f["seconds"]]}
    return {**base, "kind": "cold", "deltasink": [r["wall"] for r in runs[kind]],
            "deltasink_stream": [r.get("stream", 0.0) for r in runs[kind]],
            "other": [r["wall"] for r in runs["plain"]],
            "other_stream": [r.get("stream", 0.0) for r in runs["plain"]]}
