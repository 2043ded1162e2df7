"""``python -m bench.merge_shapes``: the target write of one batch, four ways, warm (issue 60 §2).

The MERGE on the event id is the product's contract; this asks how close a tuned MERGE comes to
an append before anything else is tried. One session, one existing target per way (the same rows,
``events_v1``'s target columns, partitioned by ``event_date``, event times spread over 3 days),
then rounds of one deduplicated, materialized batch each, the ways in alternating order, each
under its own txn (app id, version), as a batch commits:

- **merge**: the sink's insert-only MERGE as it was (``merge_settings`` without ``insert_only``:
  Delta repartitions the inserted rows by date before it writes);
- **merge_tuned**: the same MERGE, ``insert_only`` (no repartition before the write);
- **antijoin_append**: what Delta's ``InsertOnlyMergeExecutor`` runs, written by hand: the
  batch left-anti-joined with the target's slice (the same predicates), then a plain append;
- **append**: a plain append of the batch, no check at all (at-least-once): the floor.

Ids are random UUIDv4 (``--ids uuid``, the default) or sequential (``--ids seq``). Writes
``bench/results/merge-shapes.{md,json}``; each figure is the median of the rounds after the
first two. Every way must end with the same row count, which the run asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.sink.commit import txn
from pipelines.sink.merge import insert_only_merge, merge_settings
from pipelines.storage.tables import TableRef

RESULTS = Path(__file__).resolve().parent / "results"
WAYS = ("merge", "merge_tuned", "antijoin_append", "append")
_NEAR = "abs(unix_micros(t.event_time) - unix_micros(s.event_time)) <= 900000000L"  # 15m


def rows(spark: SparkSession, count: int, start: int, ids: str) -> DataFrame:
    """``count`` target rows numbered from ``start``, event times spread over 3 days."""
    key = F.expr("uuid()") if ids == "uuid" else F.format_string("evt-%012d", "id")
    return (spark.range(start, start + count).select(
        key.alias("event_id"), F.lit("click").alias("event_type"),
        (F.lit(1764547200) + (F.col("id") * 37) % (3 * 86400)).cast("timestamp")
        .alias("event_time"), F.lit("{}").alias("payload"),
        F.current_timestamp().alias("kafka_timestamp"))
        .withColumn("event_date", F.to_date("event_time")))


def write(spark: SparkSession, way: str, path: str, batch: DataFrame, version: int) -> None:
    """Land ``batch`` in the table at ``path`` the ``way`` way, under txn ``(way, version)``."""
    dates = [r[0] for r in batch.select("event_date").distinct().collect()]
    low, high = batch.agg(F.min("event_time"), F.max("event_time")).first() or (None, None)
    prune = (f"t.event_date IN ({','.join(repr(str(d)) for d in dates)}) AND "
             f"t.event_time >= TIMESTAMP'{low}' - INTERVAL 15 MINUTES AND "
             f"t.event_time <= TIMESTAMP'{high}' + INTERVAL 15 MINUTES")
    with txn(spark, f"bench-{way}", version, None), \
            merge_settings(spark, insert_only=way == "merge_tuned"):
        if way.startswith("merge"):
            insert_only_merge(TableRef(path=path), batch, ("event_id",), prune, _NEAR)
            return
        out = batch
        if way == "antijoin_append":
            target = (spark.read.format("delta").load(path).alias("t")
                      .where(prune.replace("t.", "")).select("event_id", "event_time"))
            out = batch.alias("s").join(target.alias("t"), F.expr(
                f"s.event_id = t.event_id AND {_NEAR}"), "left_anti")
        out.write.format("delta").mode("append").partitionBy("event_date").save(path)


def measure(spark: SparkSession, batch_rows: int, target_rows: int, rounds: int, ids: str
            ) -> dict[str, Any]:
    """Time each way over ``rounds`` batches of ``batch_rows`` into ``target_rows``."""
    work = Path(tempfile.mkdtemp(prefix="merge-shapes-"))
    base = rows(spark, target_rows, 0, ids).localCheckpoint(eager=True)
    paths = {way: str(work / way) for way in WAYS}
    for path in paths.values():
        base.write.format("delta").partitionBy("event_date").save(path)
    seconds: dict[str, list[float]] = {way: [] for way in WAYS}
    start = 10 ** 9
    for r in range(rounds):
        batch = rows(spark, batch_rows, start, ids).localCheckpoint(eager=True)
        start += batch_rows
        for way in WAYS if r % 2 == 0 else WAYS[::-1]:
            began = time.monotonic()
            write(spark, way, paths[way], batch, r + 1)
            seconds[way].append(time.monotonic() - began)
    counts = {way: spark.read.format("delta").load(p).count() for way, p in paths.items()}
    assert len(set(counts.values())) == 1, counts
    return {"batch_rows": batch_rows, "target_rows": target_rows, "ids": ids, "rounds": rounds,
            "median_s": {w: statistics.median(s[2:] or s) for w, s in seconds.items()},
            "seconds": seconds, "rows_after": counts["merge"]}


def report(cells: list[dict[str, Any]], load: tuple[float, float]) -> str:
    """The results as Markdown."""
    lines = ["# One batch's target write, four ways, warm (`python -m bench.merge_shapes`)", "",
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average "
             f"{load[0]:.1f} at the start, {load[1]:.1f} at the end, on 2 cores. Medians of "
             "the rounds after the first two, seconds per batch.", "",
             "| ids | batch rows | target rows | " + " | ".join(WAYS) + " | tuned / append |",
             "|---|---|---|" + "---|" * (len(WAYS) + 1)]
    for c in cells:
        m = c["median_s"]
        lines.append(f"| {c['ids']} | {c['batch_rows']:,} | {c['target_rows']:,} | "
                     + " | ".join(f"{m[w]:.2f}" for w in WAYS)
                     + f" | {m['merge_tuned'] / m['append']:.2f}x |")
    return "\n".join(lines) + "\n"


def main() -> None:
    """Run the cells and write the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[5_000, 500_000])
    parser.add_argument("--target-rows", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--ids", nargs="+", default=["uuid", "seq"])
    args = parser.parse_args()
    from pipelines.runtime.spark import get_spark

    spark = get_spark("bench-merge-shapes")
    before = os.getloadavg()[0]
    cells = [measure(spark, b, args.target_rows, args.rounds, ids)
             for ids in args.ids for b in args.batches]
    text = report(cells, (before, os.getloadavg()[0]))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "merge-shapes.md").write_text(text)
    (RESULTS / "merge-shapes.json").write_text(json.dumps(cells, indent=1, default=str))
    print(text)


if __name__ == "__main__":
    main()
