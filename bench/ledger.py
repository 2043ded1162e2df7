"""``python -m bench.ledger``: what the bookkeeping tables cost a cold scheduled run (issue 35 §3).

A run touches five Delta tables: the target, the quarantine, and three of bookkeeping: the
checkpoint's lease, the run metrics and (when it validates) the verdicts. Merging the
bookkeeping into one ledger table can save at most what those tables cost, so this times one
cold ``deltasink run --no-validate`` on existing tables, with each table taken away in turn:

- **all**: the run as users run it (lease, metrics);
- **no-metrics**: ``quality.enabled: false`` (no metrics rows, no staleness read);
- **no-lease**: no metrics, and ``DELTASINK_FAULT=skip_lease_acquire`` (the test hook of a
  writer that cannot see the lease: no acquire and no verify before each commit; the release's
  one ``UPDATE`` still runs).

The difference between two variants is that table's cost in a cold run (its snapshots, its
commits, and the JVM warm-up its statements pay when they come first). Writes
``bench/results/ledger.{md,json}``. The verdicts table is written only by a validation, whose
GX queries would hide it; it is one append, like a metrics flush.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from bench import env
from bench.scheduled import PHASES, time_process
from pipelines.kafka.produce import produce_events

RESULTS = Path(__file__).resolve().parent / "results"
VARIANTS = ("all", "no-metrics", "no-lease")


def say(text: str) -> None:
    """Print one progress line."""
    print(f"[ledger {time.strftime('%H:%M:%S')}] {text}", flush=True)


def run_variant(variant: str, bootstrap: str, topic: str, work: Path,
                batch: int) -> dict[str, float]:
    """One cold ``deltasink run --no-validate`` of ``variant``; its wall time and phases."""
    work.mkdir(parents=True, exist_ok=True)
    config: dict[str, Any] = {
        "name": f"ledger-{variant}", "checkpoint": str(work / "checkpoint"),
        "source": {"bootstrap_servers": bootstrap, "topics": [topic],
                   "max_records_per_batch": batch},
        "target": {"path": str(work / "target")}}
    if variant != "all":
        config["quality"] = {"enabled": False}
    (work / "pipeline.yml").write_text(yaml.safe_dump(config))
    fault = {"DELTASINK_FAULT": "skip_lease_acquire"} if variant == "no-lease" else {}
    command = [str(Path(sys.executable).with_name("deltasink")), "run", "--config",
               str(work / "pipeline.yml"), "--no-validate"]
    return time_process(variant, command, work, fault)


def render(rows: dict[str, list[dict[str, float]]], meta: dict[str, Any]) -> str:
    """The report: median seconds per phase and variant, and what each table costs."""
    def median(variant: str, key: str) -> float:
        return statistics.median(r.get(key, 0.0) for r in rows[variant])

    lines = ["# deltasink benchmark: what the bookkeeping tables cost a cold run", "",
             f"Run {meta['started']} on {meta['host']}; load average at start "
             f"{meta['load_start']}, at end {meta['load_end']}; "
             f"{meta['passes']} pass(es) of {meta['events']:,} events, median per cell. "
             "Each cell is a cold `deltasink run --no-validate` on existing tables.", "",
             "| variant | " + " | ".join(PHASES) + " | wall |",
             "|---|" + "---|" * (len(PHASES) + 1)]
    for variant in VARIANTS:
        cells = [f"{median(variant, p):.1f}" for p in (*PHASES, "wall")]
        lines.append(f"| {variant} | " + " | ".join(cells) + " |")
    metrics = median("all", "wall") - median("no-metrics", "wall")
    lease = median("no-metrics", "wall") - median("no-lease", "wall")
    lines += ["", f"The metrics table costs a cold run {metrics:.1f} s of wall time; the lease "
              f"table {lease:.1f} s; the run with both takes {median('all', 'wall'):.1f} s."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Produce the topic, time the variants, write the report."""
    parser = argparse.ArgumentParser(prog="python -m bench.ledger", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=50_000,
                        help="events per pass (default: %(default)s)")
    parser.add_argument("--batch", type=int, default=500_000, help="default: %(default)s")
    parser.add_argument("--passes", type=int, default=2, help="default: %(default)s")
    parser.add_argument("--out", type=Path, default=RESULTS, help="report folder")
    args = parser.parse_args(argv)
    meta: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                            "host": os.uname().nodename, "load_start": env.load(),
                            "passes": args.passes, "events": args.events,
                            "cores": os.cpu_count() or 1}
    rows: dict[str, list[dict[str, float]]] = {v: [] for v in VARIANTS}
    with tempfile.TemporaryDirectory(prefix="deltasink-ledger-") as tmp:
        work = Path(tmp)
        with env.broker(work / "broker") as node:
            bootstrap = node.bootstrap_servers
            produce_events(bootstrap, "ledger", 1000, seed=1, partitions=4)
            for variant in VARIANTS:  # creates the tables and checkpoints; untimed
                run_variant(variant, bootstrap, "ledger", work / variant, args.batch)
            for n in range(args.passes):
                produce_events(bootstrap, "ledger", args.events, seed=10 + n, partitions=4)
                for variant in (VARIANTS if n % 2 == 0 else tuple(reversed(VARIANTS))):
                    took = run_variant(variant, bootstrap, "ledger", work / variant, args.batch)
                    rows[variant].append(took)
                    say(f"{variant} (pass {n + 1}): {took['wall']:.1f}s (load {env.load()})")
    env.publish(args.out, "ledger", meta, rows, render)
    return 0


if __name__ == "__main__":
    sys.exit(main())
