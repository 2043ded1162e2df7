"""``python -m bench.memory``: a large backlog through deltasink in bounded batches, and its RSS.

The goal it checks: a 5M-record backlog is processed in batches of ``--batch`` records with the
driver's peak RSS (python + driver JVM) under 3 GiB. The records are produced by a separate
process first, so the generator's memory is not counted as the driver's. Writes
``bench/results/memory.{md,json}``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import configs, env
from bench.run import RESULTS, pipeline_config, say
from bench.spec import Cell

GIB = 1024**3
TOPIC = "bench_backlog"
#: Records are produced in chunks of this many distinct events (each chunk its own id prefix),
#: so the producer process holds one chunk's plan at a time.
CHUNK = 500_000


def produce_backlog(bootstrap: str, records: int, dup_rate: float, partitions: int) -> None:
    """Produce about ``records`` records (distinct events plus ``dup_rate`` copies), chunked."""
    from pipelines.kafka.produce import produce_events

    distinct = round(records / (1 + dup_rate))
    done = 0
    while done < distinct:
        count = min(CHUNK, distinct - done)
        produce_events(bootstrap, TOPIC, count, duplicate_rate=dup_rate, seed=done,
                       partitions=partitions, id_prefix=f"backlog{done}")
        done += count
        say(f"produced {done:,}/{distinct:,} distinct events (+{dup_rate:.0%} copies)")


def main(argv: list[str] | None = None) -> int:
    """Produce the backlog in a child process, then run deltasink over it and record the RSS."""
    parser = argparse.ArgumentParser(prog="python -m bench.memory", description=__doc__)
    parser.add_argument("--records", type=int, default=5_000_000, help="backlog size")
    parser.add_argument("--batch", type=int, default=500_000, help="max_records_per_batch")
    parser.add_argument("--dup-rate", type=float, default=0.2)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--produce-only", metavar="BOOTSTRAP", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.produce_only:
        produce_backlog(args.produce_only, args.records, args.dup_rate, 3)
        return 0
    started, load_start = datetime.now(UTC), env.load()
    with tempfile.TemporaryDirectory(prefix="deltasink-memory-") as tmp:
        work = Path(tmp)
        with env.broker(work / "broker") as node:
            mark = time.monotonic()
            subprocess.run([sys.executable, "-m", "bench.memory", "--records", str(args.records),
                            "--dup-rate", str(args.dup_rate), "--produce-only",
                            node.bootstrap_servers], check=True)
            produced_s = time.monotonic() - mark
            from pipelines.runtime.spark import get_spark

            spark = get_spark("deltasink-memory")
            pids = env.driver_pids(int(spark._jvm.ProcessHandle.current().pid()))  # type: ignore[union-attr]
            where = configs.Target(work / "target", work / "quarantine", work / "checkpoint")
            config = pipeline_config(Cell("deltasink", 0, args.batch, args.dup_rate),
                                     node.bootstrap_servers, TOPIC, where)
            say(f"spark up; running deltasink over the backlog, {args.batch:,} per batch")
            with env.PeakRss(pids) as rss:
                mark = time.monotonic()
                batches, records = configs.deltasink(spark, config)
                wall = time.monotonic() - mark
            rows = spark.read.format("delta").load(str(where.table)).count()
            spark.stop()
    result: dict[str, Any] = {
        "started": started.isoformat(timespec="seconds"), "load_start": load_start,
        "load_end": env.load(), "records": records, "batch": args.batch,
        "batches": len(batches), "largest_batch": max((b["rows"] for b in batches), default=0),
        "rows_in_target": rows, "wall_s": round(wall, 1), "produce_s": round(produced_s, 1),
        "events_per_s": round(records / wall) if wall else 0,
        "peak_rss_gib": round(rss.peak / GIB, 2), "met": rss.peak < 3 * GIB,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "memory.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "memory.md").write_text(_markdown(result))
    say(json.dumps(result))
    return 0 if result["met"] else 1


def _markdown(r: dict[str, Any]) -> str:
    verdict = "met" if r["met"] else "**not met**"
    return (
        "# deltasink memory check: a large backlog in bounded batches\n\n"
        f"Run {r['started']}; load {r['load_start']} at start, {r['load_end']} at end.\n\n"
        "| records | max per batch | batches | largest batch | rows in target | wall s | "
        "events/s | driver peak RSS GiB | goal (< 3 GiB) |\n|---|---|---|---|---|---|---|---|---|\n"
        f"| {r['records']:,} | {r['batch']:,} | {r['batches']} | {r['largest_batch']:,} | "
        f"{r['rows_in_target']:,} | {r['wall_s']} | {r['events_per_s']:,} | "
        f"{r['peak_rss_gib']} | {verdict} |\n")


if __name__ == "__main__":
    sys.exit(main())
