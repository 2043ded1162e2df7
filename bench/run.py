"""``python -m bench.run [--quick]``: measure the five configurations on the same produced data.

One run starts its own embedded Kafka broker on a free port in a temp folder, produces one topic
per duplicate rate, builds the existing targets once with Spark, then measures each cell of the
preset's matrix (see ``bench.spec``) and writes ``bench/results/latest.{md,json}``.
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import configs, env, report
from bench.measure import combine, summarize
from bench.spec import DEFAULT, QUICK, BenchSpec, Cell
from bench.targets import build_target, copy_target
from pipelines.config.model import PipelineConfig
from pipelines.kafka.produce import produce_events

RESULTS = Path(__file__).resolve().parent / "results"


def pipeline_config(cell: Cell, bootstrap: str, topic: str,
                    where: configs.Target) -> PipelineConfig:
    """The deltasink config of one cell (quality suites off: they are not the sink)."""
    window: dict[str, object] = ({} if cell.dedup_window is None
                                 else {"dedup_window": cell.dedup_window})
    if cell.upsert:
        window = {"mode": "upsert", "sequence_by": "event_time", "dedup_window": 0}
    return PipelineConfig.model_validate({
        "name": f"bench_{cell.config}",
        "source": {"bootstrap_servers": bootstrap, "topics": [topic],
                   "max_records_per_batch": cell.batch},
        "schema": "events_v1",
        "target": {"path": str(where.table), "quarantine_path": str(where.quarantine), **window},
        "checkpoint": str(where.checkpoint),
        "quality": {"enabled": False},
    })


def measure(cell: Cell, spark: Any, bootstrap: str, work: Path, bases: dict[int, Path],
            pids: list[int], topic: str | None = None) -> dict[str, Any]:
    """Run one cell (on ``topic``, default: the cell's duplicate-rate topic); return its figures."""
    topic = topic or env.topic_name(cell.dup_rate)
    folder = work / cell.label
    where = configs.Target(folder / "target", folder / "quarantine", folder / "checkpoint")
    folder.mkdir(parents=True)
    if cell.target_rows:
        copy_target(bases[cell.target_rows], where.table)
    elif cell.config in ("append", "watermark"):
        build_target(spark, where.table, 0, 1)
    before = env.parquet_files(where.table, where.quarantine)
    config = pipeline_config(cell, bootstrap, topic, where)
    load = env.load().split("/")[0]
    first_job = env.last_job_id(spark)
    with env.PeakRss(pids) as rss:
        start = time.monotonic()
        if cell.config == "floor":
            batches, records = configs.floor(bootstrap, topic)
        elif cell.config == "deltasink":
            batches, records = configs.deltasink(spark, config)
        else:
            batches, records = getattr(configs, cell.config)(spark, config, where)
        wall = time.monotonic() - start
    jobs = env.last_job_id(spark) - first_job - 1
    files = None if cell.config == "floor" else \
        env.parquet_files(where.table, where.quarantine) - before
    return {"config": cell.name, "target_rows": cell.target_rows, "batch": cell.batch,
            "dup_rate": cell.dup_rate, **summarize(batches, records, wall),
            "peak_rss_bytes": rss.peak, "peak_rss_gib": round(rss.peak / 1024**3, 2),
            "files_written": files, "spark_jobs": jobs,
            "jobs_per_batch": round(jobs / len(batches), 1) if batches else None,
            "load": load, "per_batch": batches}


def say(text: str) -> None:
    """Print one progress line."""
    print(f"[bench {time.strftime('%H:%M:%S')}] {text}", flush=True)


def main(argv: list[str] | None = None) -> int:
    """Run the preset and write the report."""
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for a smoke test")
    parser.add_argument("--only", default="", help="comma-separated configs to keep")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where to write the report")
    parser.add_argument("--windows", action="store_true",
                        help="only the cells that set target.dedup_window")
    parser.add_argument("--upsert", action="store_true",
                        help="only the upsert cells and the insert-only deltasink cells at their "
                             "sizes (add --max-target-rows to skip the large one)")
    parser.add_argument("--max-target-rows", type=int, default=None,
                        help="leave out cells with a larger target")
    args = parser.parse_args(argv)
    spec: BenchSpec = QUICK if args.quick else DEFAULT
    upsert_sizes = {c.target_rows for c in spec.cells if c.upsert}
    cells = [c for c in spec.cells if (not args.only or c.config in args.only.split(","))
             and (not args.windows or c.dedup_window is not None)
             and (not args.upsert or c.upsert or (
                 c.config == "deltasink" and c.dedup_window is None and c.dup_rate == 0.2
                 and c.target_rows in upsert_sizes and c.batch == spec.cells[0].batch))
             and (args.max_target_rows is None or c.target_rows <= args.max_target_rows)]
    started, t0, load_start = datetime.now(UTC), time.monotonic(), env.load()
    say(f"preset {spec.name}: {len(cells)} cells; load {load_start}")
    with tempfile.TemporaryDirectory(prefix="deltasink-bench-") as tmp:
        work = Path(tmp)
        with env.broker(work / "broker") as node:
            for rate in sorted({c.dup_rate for c in cells}):
                sent = env.produce(node.bootstrap_servers, rate, spec.events, spec.partitions)
                say(f"produced {sent:,} records to {env.topic_name(rate)}")
            from pipelines.runtime.spark import get_spark

            mark = time.monotonic()
            spark = get_spark("deltasink-bench")
            startup = round(time.monotonic() - mark, 1)
            pids = env.driver_pids(int(spark._jvm.ProcessHandle.current().pid()))  # type: ignore[union-attr]
            say(f"spark up in {startup}s")
            bases: dict[int, Path] = {}
            for rows in sorted({c.target_rows for c in cells if c.target_rows}):
                mark = time.monotonic()
                bases[rows] = work / f"base_{rows}"
                build_target(spark, bases[rows], rows, spec.target_days)
                say(f"built a {rows:,}-row target in {time.monotonic() - mark:.0f}s")
            produce_events(node.bootstrap_servers, "bench_warmup", spec.warmup_events,
                           partitions=spec.partitions, id_prefix="warm")
            for config in ("append", "deltasink"):
                measure(Cell(config, 0, max(1, spec.warmup_events // 2), 0.0), spark,
                        node.bootstrap_servers, work / "warmup", bases, pids, "bench_warmup")
            say("warm-up done (append and deltasink on a small topic, not reported)")
            meta: dict[str, Any] = {"preset": spec.name, "spec": spec.as_dict(),
                                    "started": started.isoformat(timespec="seconds"),
                                    "host": f"{platform.node()} ({platform.machine()})",
                                    "load_start": load_start, "spark_startup_s": startup,
                                    "events": spec.events, "python": sys.version.split()[0]}
            done: dict[Cell, dict[str, Any]] = {}
            results: list[dict[str, Any]] = []
            order = cells if spec.passes == 1 else cells + cells[::-1]
            for n, cell in enumerate(order):
                run = n // len(cells)
                result = measure(cell, spark, node.bootstrap_servers, work / f"pass{run}", bases,
                                 pids)
                done[cell] = combine(done[cell], result) if cell in done else result
                meta["passes_done"] = f"{n + 1}/{len(order)} measurements"
                say(f"{cell.label} (pass {run + 1}): {result['events_per_s']:,} "
                    f"events/s, {result['batches']} batches, load {result['load']}")
                results = [done[c] for c in cells if c in done]
                _write(args.out, spec, meta, results, t0)  # partial results survive a kill
            spark.stop()
    md = _write(args.out, spec, meta, results, t0)
    say(f"wrote {md}")
    print(md.read_text())
    return 0


def _write(out: Path, spec: BenchSpec, meta: dict[str, Any], results: list[dict[str, Any]],
           t0: float) -> Path:
    batch = next(c.batch for c in spec.cells)
    small = next(c.target_rows for c in spec.cells)
    large = max(c.target_rows for c in spec.cells)
    meta = {**meta, "load_end": env.load(), "total_s": round(time.monotonic() - t0),
            "cells_done": f"{len(results)}/{len(spec.cells)}"}
    return report.write(out, meta, results, report.goals(results, small, large, batch))


if __name__ == "__main__":
    sys.exit(main())
