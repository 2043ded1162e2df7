"""``python -m bench.startup``: start-up cost of reading the log, 10,000 commits vs a fresh table.

Two costs are timed apart, each with Delta's in-process log cache cleared first, as in a new
process:

- **deltasink's read**: ``state.recorded_offsets``, what run.py reads from the target's log
  before streaming. It opens the newest commit files by name (``pipelines/ledger/deltalog.py``). The
  goal: the long table costs at most 1.2x the fresh one.
- **Delta's snapshot load** (``DeltaTable.forPath``), which every Delta reader and writer pays,
  deltasink or not. On a local disk Delta lists the whole ``_delta_log`` folder to find the
  files after the last checkpoint, so it grows with the history; on S3 it can start the listing
  at a name (``spark.hadoop.delta.enableFastS3AListFrom=true``). Reported, not deltasink's goal.

Building the long table: a real Spark commit costs about 1 s on the shared 2-core machine, so
10,000 would take hours. The first and last commits are real deltasink MERGE-free appends made
with the sink's own ``txn``/``commit_metadata``; the ones in between are written as commit files
holding a ``commitInfo`` (deltasink userMetadata) and a ``txn`` action, like a batch that had
nothing to insert. Delta then writes a real checkpoint, and the build checks that Delta reads it
(``history()`` lists every version, the rows and txn version are right). Writes
``bench/results/startup.{md,json}``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from bench.run import RESULTS, say
from pipelines.ledger import state
from pipelines.ledger.record import commit_metadata
from pipelines.sink.commit import txn
from pipelines.storage.tables import TableRef

PIPELINE = "bench_startup"
APP = f"deltasink:{PIPELINE}:q"
GOAL = 1.2


def _real_commit(spark: SparkSession, ref: TableRef, batch: int) -> None:
    with txn(spark, APP, batch, commit_metadata(PIPELINE, APP, batch, "r", {"t": {0: batch}})):
        spark.range(batch, batch + 1).coalesce(1).write.format("delta").mode("append") \
            .save(ref.path)


def build(spark: SparkSession, ref: TableRef, commits: int, real: int = 3) -> None:
    """A table with ``commits`` + 1 versions; the first and last ``real`` written by Spark."""
    spark.range(0).write.format("delta").save(ref.path)
    for batch in range(real):
        _real_commit(spark, ref, batch)
    log = Path(str(ref.path)) / "_delta_log"
    stamp = int(time.time() * 1000)
    for version in range(real + 1, commits - real + 1):
        batch = version - 1
        info = {"timestamp": stamp, "operation": "MERGE", "operationParameters": {},
                "isBlindAppend": False, "readVersion": version - 1, "isolationLevel":
                "Serializable", "engineInfo": "bench.startup",
                "userMetadata": commit_metadata(PIPELINE, APP, batch, "r", {"t": {0: batch}})}
        lines = [{"commitInfo": info}, {"txn": {"appId": APP, "version": batch,
                                                "lastUpdated": stamp}}]
        (log / f"{version:020d}.json").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    jvm: Any = spark._jvm
    jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()
    delta_log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, ref.path)  # type: ignore[attr-defined]
    delta_log.checkpoint()
    for batch in range(commits - real, commits):
        _real_commit(spark, ref, batch)
    versions = ref.history(spark).count()
    assert versions == commits + 1, f"Delta lists {versions} versions, wanted {commits + 1}"
    assert ref.read(spark).count() == 2 * real, "the table's rows are wrong"
    assert state.recorded_offsets(spark, ref, PIPELINE) == {"t": {0: commits - 1}}


def _cold_seconds(spark: SparkSession, repeat: int, work: Callable[[], object]) -> float:
    """Median time of ``work`` with Delta's in-process log cache cleared before each run."""
    jvm: Any = spark._jvm
    times = []
    for _ in range(repeat):
        jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()
        mark = time.monotonic()
        work()
        times.append(time.monotonic() - mark)
    return statistics.median(times)


def read_seconds(spark: SparkSession, ref: TableRef, repeat: int) -> float:
    """deltasink's read: ``state.recorded_offsets`` from a cold start."""
    return _cold_seconds(spark, repeat, lambda: state.recorded_offsets(spark, ref, PIPELINE))


def snapshot_seconds(spark: SparkSession, ref: TableRef, repeat: int) -> float:
    """Delta's own cold snapshot load, which every reader and writer of the table pays."""
    return _cold_seconds(spark, repeat, lambda: ref.read(spark).schema)


def full_scan_seconds(spark: SparkSession, ref: TableRef) -> float:
    """The old way: Delta's whole ``history()``, read once."""
    jvm: Any = spark._jvm
    jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()
    mark = time.monotonic()
    ref.history(spark).select("version", "operation", "userMetadata").collect()
    return time.monotonic() - mark


def main(argv: list[str] | None = None) -> int:
    """Build both tables, time them, and write the report."""
    parser = argparse.ArgumentParser(prog="python -m bench.startup", description=__doc__)
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    from pipelines.runtime.spark import get_spark

    spark = get_spark("deltasink-bench-startup")
    with tempfile.TemporaryDirectory(prefix="deltasink-startup-") as tmp:
        fresh, long = TableRef(path=f"{tmp}/fresh"), TableRef(path=f"{tmp}/long")
        mark = time.monotonic()
        build(spark, fresh, 6)
        build(spark, long, args.commits)
        say(f"built tables of 7 and {args.commits + 1} versions in {time.monotonic() - mark:.0f}s")
        read_seconds(spark, fresh, 2)  # warm-up
        result: dict[str, Any] = {"commits": args.commits, "repeat": args.repeat}
        for name, ref in (("fresh", fresh), ("long", long)):
            result[f"{name}_read_s"] = round(read_seconds(spark, ref, args.repeat), 3)
            result[f"{name}_snapshot_s"] = round(snapshot_seconds(spark, ref, args.repeat), 3)
        result["long_full_history_s"] = round(full_scan_seconds(spark, long), 3)
    result["ratio"] = round(result["long_read_s"] / result["fresh_read_s"], 2)
    result["snapshot_ratio"] = round(result["long_snapshot_s"] / result["fresh_snapshot_s"], 2)
    result["goal"] = GOAL
    result["met"] = result["ratio"] <= GOAL
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "startup.json").write_text(json.dumps(result, indent=2) + "\n")
    md = (f"| start-up, median of {args.repeat}, cold log cache | fresh table | "
          f"{args.commits:,} commits | ratio |\n|---|---|---|---|\n"
          f"| deltasink's read (recorded offsets, commit files by name) | "
          f"{result['fresh_read_s']} s | {result['long_read_s']} s | {result['ratio']} "
          f"(goal <= {GOAL}: {'met' if result['met'] else 'missed'}) |\n"
          f"| Delta's snapshot load (lists `_delta_log` on a local disk) | "
          f"{result['fresh_snapshot_s']} s | {result['long_snapshot_s']} s | "
          f"{result['snapshot_ratio']} (Delta's, not deltasink's) |\n"
          f"| the old way: the whole `history()` | | {result['long_full_history_s']} s | |\n")
    (args.out / "startup.md").write_text(md)
    say(md)
    return 0 if result["met"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
