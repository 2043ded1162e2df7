"""The benchmark's environment: its own broker, the produced topics, memory and file probes."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any

from pyspark.sql import SparkSession

from pipelines.kafka.broker import EmbeddedBroker, free_port_pair
from pipelines.kafka.produce import produce_events


@contextmanager
def broker(data_dir: Path) -> Iterator[EmbeddedBroker]:
    """A fresh embedded Kafka broker on a free port, stopped on exit."""
    node = EmbeddedBroker.at(data_dir, port=free_port_pair()).start()
    try:
        yield node
    finally:
        node.stop()


def topic_name(dup_rate: float) -> str:
    """The topic holding the events produced with ``dup_rate``."""
    return f"bench_d{int(dup_rate * 100)}"


def produce(bootstrap: str, dup_rate: float, events: int, partitions: int) -> int:
    """Produce ``events`` distinct events plus ``dup_rate`` copies; return the records sent.

    Event times fall in the 3 days before today (``plan_records``' default), so every batch
    touches at most 3 ``event_date`` partitions.
    """
    summary = produce_events(bootstrap, topic_name(dup_rate), events, duplicate_rate=dup_rate,
                             seed=42, partitions=partitions, id_prefix="bench")
    return summary.sent


def rss_bytes(pid: int) -> int:
    """The resident set size of a process (0 if it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class PeakRss:
    """Samples the summed RSS of the driver processes (python + JVM) in a background thread."""

    def __init__(self, pids: list[int], every: float = 0.2) -> None:
        self.pids, self.every, self.peak = pids, every, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, sum(rss_bytes(p) for p in self.pids))
            self._stop.wait(self.every)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, sum(rss_bytes(p) for p in self.pids))


def driver_pids(jvm_pid: int) -> list[int]:
    """This python process and the driver JVM."""
    return [os.getpid(), jvm_pid]


def parquet_files(*folders: Path) -> int:
    """The number of data files under the given table folders."""
    return sum(1 for f in folders if f.exists() for _ in f.rglob("*.parquet"))


def load() -> str:
    """The 1/5/15-minute load averages and the core count, for the report."""
    one, five, fifteen = os.getloadavg()
    return f"{one:.1f}/{five:.1f}/{fifteen:.1f} on {os.cpu_count()} cores"


def now() -> float:
    """A monotonic clock reading."""
    return time.monotonic()


def last_job_id(spark: SparkSession) -> int:
    """Run a one-task probe job and return its id: Spark job ids are global and increasing,
    so the difference of two probes counts the jobs that ran in between (plus one)."""
    sc = spark.sparkContext
    sc.setJobGroup("bench-probe", "job-id probe")
    try:
        sc.parallelize([1], 1).count()
        return max(sc.statusTracker().getJobIdsForGroup("bench-probe"))
    finally:  # setJobGroup also set the description: it would name every later job "probe"
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        sc.setLocalProperty("spark.job.description", None)  # type: ignore[arg-type]


def publish(out: Path, name: str, meta: dict[str, Any], results: Any,
            render: Callable[[Any, dict[str, Any]], str]) -> None:
    """Record the end load in ``meta``, write ``out/<name>.json`` (meta and results) and
    ``out/<name>.md`` (``render(results, meta)``), and print the report."""
    meta["load_end"] = load()
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps({"meta": meta, "results": results}, indent=2))
    report = render(results, meta)
    (out / f"{name}.md").write_text(report)
    print(report)
