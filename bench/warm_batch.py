"""A warm small batch, deltasink next to the plain append (cell 5 of ``bench.goals``).

Issue 60 §1: "a batch of ≤ 5,000 events, warm, classic: ≤ 1 s". Each side is one long-lived
process with a processing-time trigger, fed rounds of ``Plan.events`` events (random UUIDv4 ids,
event times in arrival order ending at the send, no copies): a round is sent at once, then the
feeder waits until its records have landed and pauses ``Plan.gap`` seconds, so every round is
its own batch and no batch queues behind another. The first ``Plan.warm`` rounds warm the JVM up
and are not measured.

- **deltasink**: ``deltasink run --trigger continuous --interval`` from a config with the
  required keys (as users run it; over Spark Connect with ``remote``). A batch's seconds come
  from its own target commit, from outside the process: ``BatchMetrics.duration_s``, the commit's
  timestamp minus the batch's ``started_at`` (``probes.batch_timing``).
- **plain**: ``bench/plain_stream.py``, the plain append's query as a stream; a batch's seconds
  are Spark's ``addBatch`` (its read, parse and Delta write and commit: what deltasink's
  ``foreachBatch`` covers), with ``triggerExecution`` kept beside it.

Only batches that hold a whole round count (a trigger that fires while a round is being sent
splits it in two; such batches are kept in the raw figures, marked).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import yaml

from bench import plain_stream, probes, steady
from pipelines.kafka.produce import produce_events
from pipelines.kafka.topics import ensure_topic

Batches = list[dict[str, Any]]


@dataclass(frozen=True)
class Plan:
    """How a side is fed: events per round, rounds in all and how many warm up, the trigger."""

    events: int = 5000
    rounds: int = 13
    warm: int = 3
    interval: str = "5s"
    gap: float = 3.0
    first_timeout: float = 300.0  #: the JVM's start is in the first round's wait
    timeout: float = 120.0


def batch_commit(text: str) -> dict[str, Any] | None:
    """A deltasink target commit's batch (records read, seconds and stage seconds), from the
    commit file's ``text``; None for any other commit (table creation, a compaction)."""
    actions = [json.loads(line) for line in text.splitlines() if line.strip()]
    info: dict[str, Any] = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
    timing = probes.batch_timing(info)
    if not timing:
        return None
    counts = json.loads(info["userMetadata"])["deltasink"]["batch"]
    return {"rows": int(counts["records_in"]),
            "duration_s": round(timing["committed"] - timing["start"], 3),
            **{k: timing[k] for k in ("read_parse", "merge") if k in timing}}


class CommitReader:
    """The batch commits of a deltasink target, read from its ``_delta_log`` as they appear."""

    def __init__(self, table: Path) -> None:
        self.table = table
        self.batches: Batches = []
        self._next = 0

    def __call__(self) -> Batches:
        """Read the commit files written since the last call; every batch so far."""
        while True:
            try:
                text = (self.table / "_delta_log" / f"{self._next:020d}.json").read_text()
            except OSError:
                return self.batches
            if (row := batch_commit(text)) is not None:
                self.batches.append({"version": self._next, **row})
            self._next += 1


def feed(bootstrap: str, topic: str, plan: Plan, landed: Callable[[], Batches],
         alive: Callable[[], bool]) -> list[Batches]:
    """Send ``plan.rounds`` rounds to ``topic``; after each, wait until its records landed
    (``landed``: every batch so far), then pause. The batches of each round, in order."""
    rounds: list[Batches] = []
    seen = 0
    for n in range(plan.rounds):
        produce_events(bootstrap, topic, plan.events, seed=500 + n, partitions=3,
                       id_prefix=f"round{n}", ids="uuid", times="arrival",
                       span=timedelta(seconds=plan.gap))
        deadline = time.monotonic() + (plan.first_timeout if n == 0 else plan.timeout)
        while sum(b["rows"] for b in landed()) < (n + 1) * plan.events:
            if not alive() or time.monotonic() > deadline:
                raise RuntimeError(f"round {n} of {topic} did not land "
                                   f"({sum(b['rows'] for b in landed())} records so far)")
            time.sleep(0.25)
        batches = landed()
        rounds.append([dict(b) for b in batches[seen:]])
        seen = len(batches)
        time.sleep(plan.gap)
    return rounds


def _side(command: list[str], work: Path, topic: str, bootstrap: str, plan: Plan,
          landed: Callable[[Path], Callable[[], Batches]], env: dict[str, str] | None = None
          ) -> dict[str, Any]:
    log = work / "run.log"
    ensure_topic(bootstrap, topic, 3)  # deltasink's preflight refuses a missing topic
    with steady.deltasink_process(command, log, env) as proc:
        rounds = feed(bootstrap, topic, plan, landed(log), lambda: proc.poll() is None)
    text = log.read_text(errors="replace")
    return {"rounds": rounds, "exit_code": proc.returncode, "plan": asdict(plan),
            "log_tail": text.splitlines()[-6:]}


def deltasink_side(work: Path, bootstrap: str, plan: Plan, remote: str | None = None
                   ) -> dict[str, Any]:
    """One continuous ``deltasink run`` fed the plan's rounds; each round's batch commits."""
    work.mkdir(parents=True)
    topic = f"warm_{work.name.replace('-', '_')}"
    body: dict[str, Any] = {"name": "warm_batch", "checkpoint": str(work / "checkpoint"),
                            "source": {"bootstrap_servers": bootstrap, "topics": [topic]},
                            "target": {"path": str(work / "target")}}
    if remote:
        body["spark"] = {"remote": remote}
    (work / "pipeline.yml").write_text(yaml.safe_dump(body))
    command = [str(Path(sys.executable).with_name("deltasink")), "run", "--config",
               str(work / "pipeline.yml"), "--trigger", "continuous", "--interval",
               plan.interval]
    return _side(command, work, topic, bootstrap, plan,
                 lambda _log: CommitReader(work / "target"))


def plain_side(work: Path, bootstrap: str, plan: Plan) -> dict[str, Any]:
    """One plain append stream (``bench/plain_stream.py``) fed the plan's rounds."""
    work.mkdir(parents=True)
    topic = f"warm_{work.name.replace('-', '_')}"
    command = [sys.executable, "-m", "bench.plain_stream", bootstrap, topic,
               str(work / "target"), str(work / "checkpoint"), plan.interval]
    root = str(Path(__file__).resolve().parent.parent)
    extra = {"PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p),
             "DELTASINK_SPARK_LOG": str(work / "driver.log")}

    def reader(log: Path) -> Callable[[], Batches]:
        return lambda: plain_stream.parse(log.read_text(errors="replace"))

    return _side(command, work, topic, bootstrap, plan, reader, extra)


def seconds(side: dict[str, Any], key: str) -> list[float]:
    """``key`` of each measured batch that holds a whole round (the rounds after the warm-up)."""
    plan = side["plan"]
    return [float(b[key]) for batches in side["rounds"][plan["warm"]:] for b in batches
            if b["rows"] == plan["events"]]


def entry(row: str, label: str, deltasink: dict[str, Any], plain: dict[str, Any]
          ) -> dict[str, Any]:
    """Cell 5's figures for ``bench.goals_report``: deltasink's batch seconds, the plain
    append's ``addBatch`` seconds, and both sides' raw rounds."""
    return {"cell": 5, "row": row, "label": label, "kind": "batch",
            "deltasink": seconds(deltasink, "duration_s"), "other": seconds(plain, "add_batch_s"),
            "other_trigger_s": seconds(plain, "trigger_s"),
            "raw": {"deltasink": deltasink, "plain": plain}}
