"""``python -m bench.soak`` (``make soak``): a continuous run for half an hour, watched for growth.

Issue 46 §2, "a week, compressed": ``deltasink run --trigger continuous --interval 1s`` on the
embedded broker, fed a steady ``--rate`` events a second for ``--minutes``, with validation and
the run-metrics writes as configured by default. Every ``--every`` seconds it records, from
outside the process (``bench/steady.py``):

- the driver's RSS (python and JVM) and the JVM's heap right after a full GC;
- the target's live data files (from its log) and its ``_delta_log`` entries;
- the checkpoint folder's files and bytes;
- each bookkeeping table's commits (lease, run metrics, verdicts);
- the median batch duration and the events' latency (send → first commit holding them) over
  the last interval.

At the end it stops the run with Ctrl-C, as a user would, and checks exactly-once from the
target's files: every event sent is there once, nothing else. Writes
``bench/results/soak.{md,json}``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from bench import env, probes, steady
from bench.charts import xychart
from bench.latency import render_parts, stage_figures
from bench.soak_goals import judge, render_goals

RESULTS = Path(__file__).resolve().parent / "results"
#: A sample whose heap after a full GC is this many times the first one's also records the
#: classes that hold the most of it (``jcmd GC.class_histogram``).
JUMP = 1.5
TOPIC = "soak"


def config(work: Path, bootstrap: str) -> dict[str, Any]:
    """The soak's pipeline: only the required keys, as a new user writes it."""
    return {"name": "soak", "checkpoint": str(work / "checkpoint"),
            "source": {"bootstrap_servers": bootstrap, "topics": [TOPIC]},
            "target": {"path": str(work / "target")}}


def sample(work: Path, proc_pid: int, watcher: steady.LogWatcher, feeder: steady.Feeder,
           log: Path, since: float, start: float) -> dict[str, Any]:
    """One row of the soak's figures."""
    jvm = probes.jvm_child(proc_pid)
    now = time.time()
    files, size = probes.folder(work / "checkpoint")
    batches = steady.batch_seconds(log)
    recent = [s for _, s in batches[-60:]]
    lat = steady.summary(steady.latencies(feeder.sent_at, watcher.seen_at, since, now - 15))
    return {
        "minute": round((now - start) / 60, 1), "load1": probes.load1(),
        "rss_python_mib": round(probes.rss_mib(proc_pid)),
        "rss_jvm_mib": round(probes.rss_mib(jvm)),
        "heap_after_gc_mib": round(probes.heap_after_gc_mib(jvm) or 0),
        "target_live_files": len(watcher.live),
        "target_log_entries": probes.log_entries(work / "target"),
        "target_commits": probes.newest_version(work / "target") + 1,
        "checkpoint_files": files, "checkpoint_mib": round(size / 2**20, 2),
        "spark_checkpoint_files": sum(probes.names(work / "checkpoint" / sub)
                                      for sub in ("offsets", "commits")),
        "lease_commits": probes.newest_version(work / "checkpoint/_deltasink/lease_table") + 1,
        "metrics_commits": probes.newest_version(work / "lake/_quality/run_metrics") + 1,
        "verdicts_commits": probes.newest_version(work / "lake/_quality/results") + 1,
        "batches": len(batches),
        "batch_median_s": round(statistics.median(recent), 2) if recent else None,
        # None: none of the interval's events was visible yet when sampled
        "latency_p50_s": round(lat["p50"], 2) if lat["count"] else None,
        "latency_p99_s": round(lat["p99"], 2) if lat["count"] else None,
        "sent": len(feeder.sent_at)}


COLUMNS = ("minute", "load1", "rss_python_mib", "rss_jvm_mib", "heap_after_gc_mib",
           "target_live_files", "target_log_entries", "target_commits", "checkpoint_files",
           "checkpoint_mib", "spark_checkpoint_files", "lease_commits", "metrics_commits",
           "verdicts_commits", "batches", "batch_median_s", "latency_p50_s", "latency_p99_s")


def render(results: dict[str, Any], meta: dict[str, Any]) -> str:
    """The report: the figures over time, charts, and the exactly-once check."""
    rows = results["samples"]
    lines = ["# deltasink benchmark: a continuous run for half an hour (soak)", "",
             f"Run {meta['started']} on {meta['host']} ({meta['cores']} cores; the load "
             "average says what else ran): "
             f"`deltasink run --trigger continuous --interval {meta['interval']}`, fed "
             f"{meta['rate']:,} events/s for {meta['minutes']} min, sampled every "
             f"{meta['every']} s. Build: {meta['build']}. Load average at start "
             f"{meta['load_start']}, at end {meta['load_end']}.", "",
             "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for row in rows:
        lines.append("| " + " | ".join("" if row.get(c) is None else str(row[c])
                                       for c in COLUMNS) + " |")
    check = results["exactly_once"]
    lines += ["", f"Exactly once, from the target's files after the run stopped: {check} "
              f"(exit code {results['exit_code']}; events not landed when it stopped were "
              f"landed by a catch-up run first: {results.get('catch_up_run')}).", ""]
    for row in rows:
        if row.get("heap_top"):
            lines += [f"Heap after GC {row['heap_after_gc_mib']} MiB at minute {row['minute']}, "
                      f"its largest classes: {', '.join(row['heap_top'])}.", ""]
    lines += ["Goals (`bench/soak_goals.py` states each rule):", "",
              *render_goals(judge(rows, check, exit_code=results['exit_code'])), ""]
    if results.get("stages"):
        lines += ["Where a batch's seconds go, read from each batch's own commit over the last "
                  "two thirds of the run (`bench/latency.py`, `stage_figures`; median / max):",
                  "", *render_parts({"soak": results["stages"]}), ""]
        if results.get("stages_note"):
            lines += [f"({results['stages_note']}.)", ""]
    minutes = [r["minute"] for r in rows]
    for title, keys in (("driver memory (MiB)", ("rss_jvm_mib", "rss_python_mib",
                                                 "heap_after_gc_mib")),
                        ("target: live data files and _delta_log entries",
                         ("target_live_files", "target_log_entries")),
                        ("checkpoint folder: files", ("checkpoint_files",
                                                      "spark_checkpoint_files")),
                        ("bookkeeping commits", ("lease_commits", "metrics_commits",
                                                 "verdicts_commits")),
                        ("latency p50 / p99 and batch median (s)",
                         ("latency_p50_s", "latency_p99_s", "batch_median_s"))):
        lines += xychart(title, minutes, {k: [r.get(k) for r in rows] for k in keys})
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Feed, run, sample, stop, check, publish."""
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=30.0, help="default: %(default)s")
    parser.add_argument("--rate", type=int, default=200, help="events/s (default: %(default)s)")
    parser.add_argument("--interval", default="1s", help="default: %(default)s")
    parser.add_argument("--every", type=float, default=180.0,
                        help="seconds between samples (default: %(default)s)")
    parser.add_argument("--build", default="", help="what build this measures, for the report")
    parser.add_argument("--out", type=Path, default=RESULTS, help="report folder")
    args = parser.parse_args(argv)
    meta: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                            "host": "a 2-core VM", "load_start": env.load(),
                            "cores": 2, "rate": args.rate, "interval": args.interval,
                            "minutes": args.minutes, "every": args.every, "build": args.build}
    samples: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="deltasink-soak-") as tmp:
        work = Path(tmp)
        with env.broker(work / "broker") as node:
            feeder = steady.Feeder(node.bootstrap_servers, TOPIC, 10)  # until the JVM is up
            (work / "pipeline.yml").write_text(yaml.safe_dump(config(work, node.bootstrap_servers)))
            watcher = steady.LogWatcher(work / "target")
            log = work / "run.log"
            command = [str(Path(sys.executable).with_name("deltasink")), "run", "--config",
                       str(work / "pipeline.yml"), "--trigger", "continuous",
                       "--interval", args.interval]
            with steady.deltasink_process(command, log,
                                          stacks=args.out / "soak-stop-stacks.txt") as proc:
                feeder.start()
                watcher.start()
                warm = time.time() + 600  # the first batch pays the JVM's start and warm-up
                while not watcher.seen_at and time.time() < warm and proc.poll() is None:
                    time.sleep(1)
                feeder.set_rate(args.rate)
                start = since = time.time()
                while time.time() - start < args.minutes * 60 and proc.poll() is None:
                    time.sleep(min(args.every, max(1.0, start + args.minutes * 60 - time.time())))
                    row = sample(work, proc.pid, watcher, feeder, log, since, start)
                    first = samples[0]["heap_after_gc_mib"] if samples else None
                    if first and row["heap_after_gc_mib"] > JUMP * first:  # what holds it
                        row["heap_top"] = probes.heap_top(probes.jvm_child(proc.pid))
                    since = time.time()
                    samples.append(row)
                    print(f"[soak {time.strftime('%H:%M:%S')}] {row}", flush=True)
                sent = feeder.stop()
                deadline = time.time() + 120
                while len(watcher.seen_at) < sent and time.time() < deadline \
                        and proc.poll() is None:
                    time.sleep(1)
            watcher.stop()
            caught_up = steady.catch_up(work / "pipeline.yml", log, watcher, sent)
            timed = [c for c in watcher.commits if "start" in c]
            results = {"samples": samples, "exactly_once": steady.exactly_once(watcher, sent),
                       "stages": stage_figures(timed[len(timed) // 3:]),  # past the warm-up
                       "catch_up_run": caught_up,
                       "exit_code": proc.returncode,
                       "log_tail": log.read_text(errors="replace").splitlines()[-20:]}
    env.publish(args.out, "soak", meta, results, render)
    return 0


if __name__ == "__main__":
    sys.exit(main())
