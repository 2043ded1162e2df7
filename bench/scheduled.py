"""``python -m bench.scheduled``: the scheduled run as users run it, side by side, each cold.

On one topic per size (50k, 1M and 5M events by default), three processes are timed from start
to exit, each a fresh interpreter and JVM as every scheduled trigger is:

- **plain**: ``bench/plain_append.py``, the Kafka -> ``from_json`` -> Delta append script a user
  would write instead (same Spark settings and jars, ``availableNow``);
- **deltasink**: ``deltasink run`` (validation included), from a config with the required keys
  and the same batch size;
- **no-validate**: ``deltasink run --no-validate``.

``--tables existing`` (the default) times what a scheduled job pays on every trigger but the
first: each process first runs once, untimed, on a small backlog, which creates its tables and
checkpoint; then each timed pass produces the size's events anew and every process drains them.
``--tables new`` times first runs instead: each pass writes fresh targets from the topic's start.
With ``--passes 2`` the second pass runs the processes in reverse order. The report gives the
ratio to the plain script and, from each process's ``timings:`` line, where deltasink's extra
seconds go phase by phase (``launch`` is interpreter start and imports: the process's wall time
minus what it timed itself). Writes
``bench/results/scheduled.{md,json}``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from bench import env
from pipelines.kafka.produce import produce_events
from pipelines.runtime.phases import PREFIX, parse_line

RESULTS = Path(__file__).resolve().parent / "results"
KINDS = ("plain", "deltasink", "no-validate")
#: The phases reported, in order (``launch`` = wall time the process did not time itself).
PHASES = ("launch", "spark", "source", "preflight", "tables", "lease", "resume", "stream",
          "validate", "other")


def say(text: str) -> None:
    """Print one progress line."""
    print(f"[scheduled {time.strftime('%H:%M:%S')}] {text}", flush=True)


def _command(kind: str, bootstrap: str, topic: str, work: Path, batch: int) -> list[str]:
    if kind == "plain":
        return [sys.executable, "-m", "bench.plain_append", bootstrap, topic,
                str(work / "target"), str(work / "checkpoint"), str(batch)]
    config = work / "pipeline.yml"  # the required keys, and the batch size of the plain script
    config.write_text(yaml.safe_dump({
        "name": "scheduled", "checkpoint": str(work / "checkpoint"),
        "source": {"bootstrap_servers": bootstrap, "topics": [topic],
                   "max_records_per_batch": batch},
        "target": {"path": str(work / "target")}}))
    deltasink = str(Path(sys.executable).with_name("deltasink"))
    return [deltasink, "run", "--config", str(config),
            *(["--no-validate"] if kind == "no-validate" else [])]


def run_once(kind: str, bootstrap: str, topic: str, work: Path, batch: int,
             event_log: Path | None = None) -> dict[str, float]:
    """One cold process; its wall seconds and its phases (``launch`` derived).

    With ``event_log``, the process's Spark writes its event log into that folder
    (``python -m bench.eventlog`` reads it), set where PySpark launches the JVM, so the plain
    script and ``deltasink run`` get it the same way.
    """
    work.mkdir(parents=True, exist_ok=True)
    # The process runs in its own folder, where the plain script's ``bench`` is not importable.
    extra = {"PYTHONPATH": str(Path(__file__).resolve().parent.parent)} if kind == "plain" else {}
    if event_log is not None:
        event_log.mkdir(parents=True, exist_ok=True)
        extra["PYSPARK_SUBMIT_ARGS"] = (f"--conf spark.eventLog.enabled=true "
                                        f"--conf spark.eventLog.dir={event_log} pyspark-shell")
    return time_process(kind, _command(kind, bootstrap, topic, work, batch), work, extra)


def time_process(kind: str, command: list[str], work: Path,
                 extra_env: dict[str, str] | None = None) -> dict[str, float]:
    """Run ``command`` in ``work`` as a cold process; its wall seconds and the phases of its
    ``timings:`` line (``launch``: the wall time it did not time itself)."""
    environ = {**os.environ, "DELTASINK_SPARK_LOG": str(work / "driver.log"), **(extra_env or {})}
    mark = time.monotonic()
    done = subprocess.run(command, cwd=work, env=environ,
                          capture_output=True, text=True, timeout=3600, check=False)
    wall = time.monotonic() - mark
    if done.returncode != 0:
        raise RuntimeError(f"{kind} exited {done.returncode}: {done.stdout[-1500:]}"
                           f"{done.stderr[-1500:]}")
    line = next(ln for ln in reversed(done.stdout.splitlines()) if ln.startswith(PREFIX))
    phases = parse_line(line)
    phases["launch"] = max(0.0, wall - phases["total"])
    phases["wall"] = wall
    return phases


def _median(rows: list[dict[str, float]], key: str) -> float:
    return statistics.median(r.get(key, 0.0) for r in rows)


def render(results: dict[int, dict[str, list[dict[str, float]]]], meta: dict[str, Any]) -> str:
    """The markdown report: wall seconds and ratios, then deltasink's seconds per phase."""
    tables = ("on existing tables (a first run created them, untimed)"
              if meta.get("tables", "new") == "existing" else "first runs, on new tables")
    lines = ["# deltasink benchmark: the scheduled run, side by side (each process cold)", "",
             f"Runs {tables}.", "",
             f"Run {meta['started']} on {meta['host']}; load average at start "
             f"{meta['load_start']}, at end {meta['load_end']}; {meta['passes']} pass(es), "
             "median per cell. Batch size "
             f"{meta['batch']:,} records for all three. Wall time is process start to exit.", "",
             "| events | plain s | deltasink s | ratio | --no-validate s | ratio "
             "| validate share | events/s per core: plain | deltasink |",
             "|---|---|---|---|---|---|---|---|---|"]
    cores = int(meta.get("cores") or 1)
    for events, runs in sorted(results.items()):
        plain, full, bare = (_median(runs[k], "wall") for k in KINDS)
        share = _median(runs["deltasink"], "validate") / full if full else 0.0
        lines.append(f"| {events:,} | {plain:.1f} | {full:.1f} | {full / plain:.2f}x | "
                     f"{bare:.1f} | {bare / plain:.2f}x | {share:.0%} | "
                     f"{events / plain / cores:,.0f} | {events / full / cores:,.0f} |")
    lines += ["", f"Events/s per core: the size's events over the process's whole wall time "
              f"(start-up, stream, validation) and the {cores} cores of the machine."]
    lines += ["", "Where the seconds go (median seconds per phase; plain's `stream` is its query, "
              "deltasink's `stream` holds its batches):", "",
              "| events | process | " + " | ".join(PHASES) + " | wall |",
              "|---|---|" + "---|" * (len(PHASES) + 1)]
    for events, runs in sorted(results.items()):
        for kind in KINDS:
            cells = [f"{_median(runs[kind], p):.1f}" if any(p in r for r in runs[kind]) else "-"
                     for p in PHASES]
            lines.append(f"| {events:,} | {kind} | " + " | ".join(cells)
                         + f" | {_median(runs[kind], 'wall'):.1f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Produce the topics, time the three processes per size, write the report."""
    parser = argparse.ArgumentParser(prog="python -m bench.scheduled", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="50000,1000000,5000000",
                        help="comma-separated topic sizes in events (default: %(default)s)")
    parser.add_argument("--batch", type=int, default=500_000,
                        help="records per micro-batch for all three (default: %(default)s)")
    parser.add_argument("--passes", type=int, default=2, help="default: %(default)s")
    parser.add_argument("--tables", choices=("existing", "new"), default="existing",
                        help="time runs on tables a first run created (what every trigger but "
                             "the first pays), or first runs on new tables (default: "
                             "%(default)s)")
    parser.add_argument("--prime", type=int, default=1000,
                        help="events of the untimed first run with --tables existing "
                             "(default: %(default)s)")
    parser.add_argument("--event-log", type=Path, metavar="DIR",
                        help="each timed process writes its Spark event log under DIR/<events>-"
                             "<kind>-<pass>/ (read it with python -m bench.eventlog)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="report folder")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    meta: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                            "host": os.uname().nodename, "load_start": env.load(),
                            "passes": args.passes, "batch": args.batch, "sizes": sizes,
                            "tables": args.tables, "cores": os.cpu_count() or 1}
    results: dict[int, dict[str, list[dict[str, float]]]] = {}
    with tempfile.TemporaryDirectory(prefix="deltasink-scheduled-") as tmp:
        work = Path(tmp)
        with env.broker(work / "broker") as node:
            for events in sizes:
                topic = f"scheduled_{events}"
                existing = args.tables == "existing"
                if existing:
                    produce_events(node.bootstrap_servers, topic, args.prime, seed=6,
                                   partitions=4)
                    for kind in KINDS:  # creates the tables and the checkpoint; untimed
                        run_once(kind, node.bootstrap_servers, topic, work / f"{events}-{kind}",
                                 args.batch)
                    say(f"{events:,}: first runs done on {args.prime:,} events")
                results[events] = {k: [] for k in KINDS}
                for n in range(args.passes):
                    if existing or n == 0:
                        produce_events(node.bootstrap_servers, topic, events, seed=7 + n,
                                       partitions=4)
                        say(f"produced {events:,} events to {topic}")
                    for kind in (KINDS if n % 2 == 0 else tuple(reversed(KINDS))):
                        folder = f"{events}-{kind}" if existing else f"{events}-{kind}-{n}"
                        log = (args.event_log.resolve() / f"{events}-{kind}-{n + 1}"
                               if args.event_log else None)
                        took = run_once(kind, node.bootstrap_servers, topic, work / folder,
                                        args.batch, log)
                        results[events][kind].append(took)
                        say(f"{events:,} events, {kind} (pass {n + 1}): {took['wall']:.1f}s "
                            f"(load {env.load()})")
    env.publish(args.out, "scheduled", meta, results, render)
    return 0


if __name__ == "__main__":
    sys.exit(main())
