"""``python -m bench.hot_day``: the target MERGE on a hot day, next to an empty table.

One topic (3 partitions) holds ``--events`` events plus 10% exact copies (same id and event time,
sent again up to a batch later), timed in order through 12:00-12:20 UTC of today, as a live
stream's are. Each cell drains it with deltasink, once per ``target.dedup_window``, into a fresh
copy of a target whose today (the hot day) holds N rows spread over 24 h, written in event-time
order as files of ~500k rows, each a narrow time range (what time-ordered batches, or ``OPTIMIZE
ZORDER BY event_time``, leave). The figure: deltasink's ``merge_commit`` stage (Delta's own time
for the target MERGE and its commit), median over the batches after the first, and its ratio to
the window's empty-table cell. The window ``default`` leaves ``target.dedup_window`` out of the
config (what a user who never set it gets). ``--rounds N`` repeats every cell N times, the sizes
interleaved within each round, and pairs each cell with the same round's empty-table cell (the
two run back to back, under the same load); the report adds each pair's ratio and their median.
``--cluster-by COLS`` makes every target a liquid-clustered table (``target.cluster_by``) instead
of a partitioned one, built the same way (issue 62's busy-day cell).
Writes ``bench/results/hot_day.{md,json}`` (``hot_day-quick.*`` with ``--quick``).
"""

from __future__ import annotations

import argparse
import platform
import random
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from bench import configs, env
from bench.hot_day_report import DUP_RATE, PARTITIONS, ROWS_PER_FILE, summarize, write
from bench.targets import copy_target
from pipelines.config.model import PipelineConfig
from pipelines.kafka.produce import make_event
from pipelines.kafka.topics import client_config, ensure_topic
from pipelines.storage.tables import TableRef
from schemas import get_schema

RESULTS = Path(__file__).resolve().parent / "results"
HOUR = 12  #: the "current hour" of the hot day: 12:00-13:00 UTC
SPAN_S = 20 * 60  #: produced event times run in order through the hour's first 20 minutes
WARMUP_EVENTS = 20_000
SIZES, QUICK_SIZES = "0,10000000,50000000", "0,1000000"


def say(text: str) -> None:
    """Print one progress line."""
    print(f"[hot_day {time.strftime('%H:%M:%S')}] {text}", flush=True)


def today() -> datetime:
    """Today's UTC midnight: the start of the hot day."""
    return datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def build_hot_day(spark: SparkSession, path: Path, rows: int,
                  midnight: datetime | None = None, cluster_by: tuple[str, ...] = ()
                  ) -> dict[str, Any]:
    """Create an ``events_v1`` target whose ``rows`` rows all fall on the hot day (the day
    starting at ``midnight``, default today's UTC midnight), event times spread uniformly over
    its 24 hours.

    Rows are written in event-time order as ``rows // 500_000`` files (at least one), each
    covering a narrow time range. Ids (``old-<n>``) never collide with produced ones. An empty
    target (``rows == 0``) is only created, as the sink would: partitioned by ``event_date``, or
    clustered by ``cluster_by``.

    Returns:
        The layout: ``rows``, ``files`` and ``build_s`` (seconds to build).
    """
    mark = time.monotonic()
    midnight = midnight or today()
    schema = get_schema("events_v1").target_schema()
    TableRef(path=str(path)).create_if_missing(
        spark, schema, () if cluster_by else ("event_date",), cluster_by=cluster_by)
    if rows:
        t = F.timestamp_seconds(F.lit(midnight.timestamp()) + F.col("id") * F.lit(86_400 / rows))
        kinds = F.array(*[F.lit(k) for k in ("order_placed", "order_paid", "order_shipped")])
        df = spark.range(rows).select(
            F.concat(F.lit("old-"), F.col("id").cast("string")).alias("event_id"),
            F.element_at(kinds, (F.col("id") % 3 + 1).cast("int")).alias("event_type"),
            t.alias("event_time"), F.to_date(t).alias("event_date"),
            F.format_string('{"amount":%d.5,"currency":"EUR"}', F.col("id") % 500).alias("payload"),
            F.lit("old").alias("kafka_topic"), F.lit(0).cast("long").alias("kafka_partition"),
            F.col("id").alias("kafka_offset"), t.alias("kafka_timestamp"),
            F.current_timestamp().alias("ingested_at"))
        (df.select(*schema.fieldNames())
         .repartitionByRange(rows // ROWS_PER_FILE or 1, "event_time")
         .sortWithinPartitions("event_time")
         .write.format("delta").mode("append").save(str(path)))
    files, took = env.parquet_files(path), round(time.monotonic() - mark, 1)
    say(f"seeded {rows:,} rows on {midnight.date()} in {files} files in {took}s")
    return {"rows": rows, "files": files, "build_s": took}


def produce_hot(bootstrap: str, topic: str, events: int, midnight: datetime, *, batch: int,
                prefix: str = "hot", seed: int = 7) -> int:
    """Produce ``events`` events (ids ``<prefix>-<n>``) timed in order through 12:00-12:20 of
    the day at ``midnight``, plus 10% exact copies each sent up to ``batch`` records later.

    Returns:
        The records sent.
    """
    from confluent_kafka import Producer

    rng = random.Random(seed)
    start = midnight + timedelta(hours=HOUR)
    ids = [f"{prefix}-{i:09d}" for i in range(events)]
    values = [make_event(eid, start + timedelta(seconds=i * SPAN_S / events), rng)
              for i, eid in enumerate(ids)]
    order: list[tuple[float, int]] = [(float(i), i) for i in range(events)]
    order += [(i + rng.randint(1, batch) + 0.5, i)
              for i in rng.sample(range(events), round(events * DUP_RATE))]
    order.sort()
    ensure_topic(bootstrap, topic, PARTITIONS)
    producer = Producer({**client_config(bootstrap), "enable.idempotence": True,
                         "linger.ms": 20, "compression.type": "lz4",
                         "queue.buffering.max.messages": 500_000})
    for _, i in order:
        while True:
            try:
                producer.produce(topic, key=ids[i].encode(), value=values[i])
                break
            except BufferError:
                producer.poll(0.1)
    if remaining := producer.flush(120):
        raise RuntimeError(f"{remaining} records were not delivered to {topic}")
    return len(order)


#: The ``--windows`` value that leaves ``target.dedup_window`` out of the config.
DEFAULT_WINDOW = "default"


def run_cell(spark: SparkSession, bootstrap: str, topic: str, folder: Path, base: Path,
             window: str, batch: int, cluster_by: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Drain ``topic`` with deltasink into a copy of ``base`` (``target.dedup_window`` =
    ``window``, left out for ``default``; quality off); return its per-batch rows, stage
    seconds included.

    ``merge_commit`` is Delta's own ``executionTimeMs`` of each batch's MERGE (read back from
    its commit, as ``deltasink run`` reports every batch), so it is the same in either mode.
    """
    where = configs.Target(folder / "target", folder / "quarantine", folder / "checkpoint")
    folder.mkdir(parents=True)
    copy_target(base, where.table)
    config = PipelineConfig.model_validate({
        "name": "bench_hot_day", "schema": "events_v1", "checkpoint": str(where.checkpoint),
        "source": {"bootstrap_servers": bootstrap, "topics": [topic],
                   "max_records_per_batch": batch},
        "target": {"path": str(where.table), "quarantine_path": str(where.quarantine),
                   **({} if window == DEFAULT_WINDOW else {"dedup_window": window}),
                   **({"cluster_by": list(cluster_by)} if cluster_by else {})},
        "quality": {"enabled": False}})
    try:
        batches, _records = configs.deltasink(spark, config)
        if not batches or any("merge_commit" not in b for b in batches):
            raise RuntimeError(f"a batch of {topic} has no merge_commit time: {batches}")
        return batches
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """Produce the topic, seed each target size once, run every (size, window) cell, report."""
    parser = argparse.ArgumentParser(prog="python -m bench.hot_day", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--windows", default="default,1d,1h,15m,5m",
                        help="comma-separated target.dedup_window values (default: %(default)s)")
    parser.add_argument("--sizes", help="comma-separated rows in the hot day, 0 = an empty "
                        "table (default: 0,10000000,50000000; --quick: 0,1000000)")
    parser.add_argument("--events", type=int, help="distinct events (default: 200000)")
    parser.add_argument("--batch", type=int, help="max_records_per_batch (default: 50000)")
    parser.add_argument("--quick", action="store_true",
                        help="sizes 0,1000000, 100000 events, batches of 25000: a smoke test")
    parser.add_argument("--warmup", type=int, default=WARMUP_EVENTS,
                        help="events of the unreported warm-up cell (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="run every cell this many times, sizes interleaved (default: 1)")
    parser.add_argument("--cluster-by", default="", help="comma-separated clustering columns: "
                        "liquid-clustered targets instead of partitioned ones (default: none)")
    parser.add_argument("--name", help="the report's file name (default: hot_day)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="report folder")
    args = parser.parse_args(argv)
    quick, windows = args.quick, args.windows.split(",")
    sizes = sorted({int(s) for s in (args.sizes or (QUICK_SIZES if quick else SIZES)).split(",")})
    events = args.events or (100_000 if quick else 200_000)
    batch = args.batch or (25_000 if quick else 50_000)
    name = args.name or ("hot_day-quick" if quick else "hot_day")
    midnight, t0, rounds = today(), time.monotonic(), max(1, args.rounds)
    cluster_by = tuple(c for c in args.cluster_by.split(",") if c)
    meta: dict[str, Any] = {"started": datetime.now(UTC).isoformat(timespec="seconds"),
                            "host": f"{platform.node()} ({platform.machine()})",
                            "load_start": env.load(), "hot_day": str(midnight.date()),
                            "events": events, "batch": batch, "windows": windows,
                            "sizes": sizes, "layout": [], "python": sys.version.split()[0],
                            "rounds": rounds, "cluster_by": list(cluster_by)}
    say(f"{len(sizes) * len(windows) * rounds} cells; hot day {midnight.date()}; "
        f"load {meta['load_start']}")
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="deltasink-hotday-") as tmp:
        work = Path(tmp)
        with env.broker(work / "broker") as node:
            bootstrap = node.bootstrap_servers
            meta["records"] = produce_hot(bootstrap, "hot_day", events, midnight, batch=batch)
            say(f"produced {meta['records']:,} records to hot_day")
            produce_hot(bootstrap, "hot_warmup", args.warmup, midnight,
                        batch=args.warmup // 2, prefix="warm", seed=1)
            from pipelines.runtime.spark import get_spark

            spark = get_spark("deltasink-bench")
            build_hot_day(spark, work / "warmup_base", 0, midnight)
            run_cell(spark, bootstrap, "hot_warmup", work / "warmup", work / "warmup_base", "1d",
                     args.warmup // 2)
            say("warm-up done (empty target, window 1d, not reported)")
            for round_ in range(rounds):
                for rows in sizes:
                    base = work / f"base_{rows}"
                    if round_ == 0:  # built once, kept while rounds remain
                        meta["layout"].append(build_hot_day(spark, base, rows, midnight,
                                                            cluster_by))
                    for window in windows:
                        batches = run_cell(spark, bootstrap, "hot_day",
                                           work / f"cell_{rows}_{window}_{round_}", base, window,
                                           batch, cluster_by)
                        results.append(r := summarize(window, rows, batches, results, round_))
                        say(f"round {round_}, window {window}, {rows:,} rows: {r['batches']} "
                            f"batches, warm merge_commit {r['merge_commit_warm_median_s']}s "
                            f"(ratio {r['ratio_vs_empty']}), load {r['load']}")
                        write(args.out, name, meta, results, t0)  # partial results survive
                    if round_ == rounds - 1:
                        shutil.rmtree(base, ignore_errors=True)
            spark.stop()
    md = write(args.out, name, meta, results, t0)
    say(f"wrote {md}")
    print(md.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
