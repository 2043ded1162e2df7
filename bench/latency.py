"""``python -m bench.latency`` (part of ``make bench``): how long an event takes to become visible.

Issue 46 §1. ``deltasink run --trigger continuous --interval 5s`` on the embedded broker, a topic
fed a steady ``--rate`` events a second; after ``--warmup`` seconds of feeding (the first
batches), the events sent during the next ``--seconds`` are measured. The warm-up
counts from the first commit holding an event. An event's
latency runs from its send to the first Delta commit of the target that holds it, read from
outside the process: ``bench/steady.py`` polls the target's ``_delta_log`` every 0.25 s and
reads the ``event_id`` column of the files each commit adds.

Variants, each a fresh target, checkpoint and topic, one process each:

- ``as-configured``: a config with only the required keys: run-metrics rows written every
  minute, validation on its cadence (``quality.validate_every``, 15 minutes by default; with
  ``--cadence`` shorter, so that it falls inside the window);
- ``no-cadence``: the same run with ``--no-validate`` (no cadence validation);
- ``no-quality``: ``quality.enabled: false`` (no run-metrics rows, no validation).

The difference of a variant's tail to the next says what that part adds. Writes
``bench/results/latency.{md,json}``.
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

RESULTS = Path(__file__).resolve().parent / "results"
VARIANTS = ("as-configured", "no-cadence", "no-quality")


def run_variant(variant: str, work: Path, bootstrap: str, args: argparse.Namespace,
                topic: str | None = None) -> dict[str, Any]:
    """One continuous run of ``variant``: its latency figures and exactly-once check.

    ``topic`` (default ``latency_<variant>``) must be new: the feeder's ids start at ``s0``.
    """
    work.mkdir(parents=True)
    topic = topic or f"latency_{variant.replace('-', '_')}"
    config: dict[str, Any] = {"name": f"latency-{variant}", "checkpoint": str(work / "cp"),
                              "source": {"bootstrap_servers": bootstrap, "topics": [topic]},
                              "target": {"path": str(work / "target")}}
    if args.event_log is not None:  # plain JSON, so bench.eventlog needs no zstd
        log_dir = (args.event_log / variant).resolve()
        log_dir.mkdir(parents=True, exist_ok=True)
        config["spark"] = {"conf": {"spark.eventLog.enabled": "true",
                                    "spark.eventLog.compress": "false",
                                    "spark.eventLog.dir": log_dir.as_uri()}}
    if variant == "no-quality":
        config["quality"] = {"enabled": False}
    elif args.cadence:
        config["quality"] = {"validate_every": args.cadence}
    (work / "pipeline.yml").write_text(yaml.safe_dump(config))
    command = [str(Path(sys.executable).with_name("deltasink")), "run", "--config",
               str(work / "pipeline.yml"), "--trigger", "continuous", "--interval",
               args.interval, *(["--no-validate"] if variant == "no-cadence" else [])]
    feeder = steady.Feeder(bootstrap, topic, 10)  # a trickle until the JVM is up
    watcher = steady.LogWatcher(work / "target")
    log = work / "run.log"
    loads: list[float] = []
    with steady.deltasink_process(command, log) as proc:
        feeder.start()
        watcher.start()
        while not watcher.seen_at and proc.poll() is None:  # the JVM's start: not measured
            time.sleep(1)
        feeder.set_rate(args.rate)
        began = time.time()
        while time.time() - began < args.warmup and proc.poll() is None:
            time.sleep(1)
        since = time.time()
        while time.time() - since < args.seconds and proc.poll() is None:
            time.sleep(5)
            loads.append(probes.load1())
        until = time.time()
        sent = feeder.stop()
        deadline = time.time() + 180
        while len(watcher.seen_at) < sent and time.time() < deadline and proc.poll() is None:
            time.sleep(1)
    watcher.stop()
    figures = steady.summary(steady.latencies(feeder.sent_at, watcher.seen_at, since, until))
    unseen = sum(1 for n, t in enumerate(feeder.sent_at)
                 if since <= t < until and n not in watcher.seen_at)
    caught_up = steady.catch_up(work / "pipeline.yml", log, watcher, sent)
    window = [c for c in watcher.commits if since <= c["seen"] <= until + 30]
    text = log.read_text(errors="replace")
    durations = steady.summary([seconds for _batch, seconds in steady.batch_seconds(log)])
    timed = [c for c in window if "start" in c]
    return {**{k: round(v, 2) for k, v in figures.items()},
            "batch_s": {k: round(v, 2) for k, v in durations.items()},
            "stages": stage_figures(timed),
            "sent_in_window": sum(1 for t in feeder.sent_at if since <= t < until),
            "not_visible_when_stopped": unseen,
            "commits_in_window": len(window),
            "validations": sum(1 for line in text.splitlines()  # a cadence's report line
                               if line.startswith("quality cadence ") and ": batches " in line),
            "load1_min": min(loads, default=0.0), "load1_max": max(loads, default=0.0),
            "exactly_once": steady.exactly_once(watcher, sent), "exit_code": proc.returncode,
            "catch_up_run": caught_up,
            "log_tail": text.splitlines()[-8:]}


#: A batch's parts, as its commit records them (``probes.batch_timing``): to its commit, the
#: preparation job, the quarantine's MERGE, Delta's target MERGE and commit, and the rest (the
#: offsets, lease and RESTORE checks, planning); then from a commit to the next batch's start.
PARTS = ("batch", "read_parse", "quarantine", "merge", "other", "idle")
#: The parts a commit records itself; ``other`` is the batch less these.
RECORDED = ("read_parse", "quarantine", "merge")


def stage_figures(commits: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Median and max of each of :data:`PARTS` over the window's batch commits."""
    parts: dict[str, list[float]] = {part: [] for part in PARTS}
    for before, commit in zip([None, *commits], commits, strict=False):
        took = commit["committed"] - commit["start"]
        parts["batch"].append(took)
        for part in RECORDED:
            parts[part].append(commit.get(part, 0.0))
        parts["other"].append(took - sum(commit.get(p, 0.0) for p in RECORDED))
        if before is not None:
            parts["idle"].append(commit["start"] - before["committed"])
    return {part: {"median": round(statistics.median(values), 2), "max": round(max(values), 2)}
            for part, values in parts.items() if values}


def render_parts(timed: dict[str, dict[str, dict[str, float]]]) -> list[str]:
    """A markdown table of :func:`stage_figures`, one row per run."""
    lines = ["| run | " + " | ".join(PARTS) + " |", "|---" * (len(PARTS) + 1) + "|"]
    for run, parts in timed.items():
        lines.append(f"| {run} | " + " | ".join(
            f"{parts[p]['median']} / {parts[p]['max']}" if p in parts else "-"
            for p in PARTS) + " |")
    return lines


def render(results: dict[str, dict[str, Any]], meta: dict[str, Any]) -> str:
    """The report: p50, p99 and max per variant, the goal, and what each part adds."""
    goal = 2 * meta["interval_s"]
    lines = ["# deltasink benchmark: latency of a continuous run", "",
             f"Run {meta['started']} on a 2-core VM (the load average below says what else ran): "
             f"`deltasink run --trigger continuous --interval {meta['interval']}`, "
             f"{meta['rate']:,} events/s, {meta['warmup']} s warm-up, then the events sent in "
             f"the next {meta['seconds']} s measured (send → first target commit holding them, "
             f"read from the `_delta_log` every 0.25 s). Validation cadence: "
             f"{meta['cadence'] or 'the default (15m)'}. Build: {meta['build']}. Load average "
             f"at start {meta['load_start']}, at end {meta['load_end']}.", "",
             "| variant | events measured | p50 s | p99 s | max s "
             "| batch s p50 / p99, whole run | commits | load (1 min) | exactly once "
             "| p99 ≤ 2x interval |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for variant, r in results.items():
        once = r["exactly_once"]
        clean = once["extra"] == 0 and once["rows"] == once["distinct"]
        if once["missing"] and not r.get("catch_up_run"):  # never landed: not a loss proven
            verdict = (f"not checked: {once['missing']:,} not landed, no duplicate"
                       if clean else f"NO {once}")
        else:
            verdict = "yes" if clean and once["missing"] == 0 else f"NO {once}"
        met = ("not measured" if not r["count"]
               else "yes" if r["p99"] <= goal else "no")
        figures = (f"{r['p50']} | {r['p99']} | {r['max']}" if r["count"] else "- | - | -")
        took = r.get("batch_s", {})
        figures += (f" | {took['p50']} / {took['p99']}" if took.get("count") else " | -")
        lines.append(f"| {variant} | {r['count']:,} | {figures} | "
                     f"{r['commits_in_window']} | {r['load1_min']}-{r['load1_max']} | "
                     f"{verdict} | {met} ({goal:g} s) |")
    lines += ["", "The batch column counts every batch of the run, from its progress line, the "
              "first (cold) batch and the warm-up's included: its p99 is usually that first "
              "batch. The table below counts only the window's batches."]
    timed = {v: r["stages"] for v, r in results.items() if r.get("stages")}
    if timed:
        lines += ["", "Where a batch's seconds go, from each batch's own commit (median / max "
                  "over the window's batches): start to commit, the preparation job "
                  "(`read_parse`), the quarantine's MERGE, Delta's target MERGE and commit "
                  "(`merge`), the rest (offsets, lease and RESTORE checks, planning), and `idle`: "
                  "from a commit to the next batch's start in `foreachBatch` (Spark's own "
                  "trigger wait, offset fetch and checkpoint writes).", "",
                  *render_parts(timed)]
    if all(v in results for v in VARIANTS):
        a, b, c = (results[v]["p99"] for v in VARIANTS)
        lines += ["", f"What each part adds to the p99: the cadence validation {a - b:+.2f} s "
                  f"(as-configured minus no-cadence), the run-metrics writes {b - c:+.2f} s "
                  "(no-cadence minus no-quality). Differences within the load's spread are noise."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the variants one after another and publish."""
    parser = argparse.ArgumentParser(prog="python -m bench.latency", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=int, default=1000, help="events/s (default: %(default)s)")
    parser.add_argument("--interval", default="5s", help="default: %(default)s")
    parser.add_argument("--warmup", type=float, default=90.0, help="s (default: %(default)s)")
    parser.add_argument("--seconds", type=float, default=120.0, help="s (default: %(default)s)")
    parser.add_argument("--cadence", default="1m",
                        help="quality.validate_every of the as-configured run (default: "
                             "%(default)s, so it falls in the window; '' for the default)")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="default: all")
    parser.add_argument("--build", default="", help="what build this measures, for the report")
    parser.add_argument("--out", type=Path, default=RESULTS, help="report folder")
    parser.add_argument("--event-log", type=Path, metavar="DIR",
                        help="write each variant's Spark event log under DIR/<variant>, for "
                             "python -m bench.eventlog")
    args = parser.parse_args(argv)
    meta: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                            "load_start": env.load(), "rate": args.rate,
                            "interval": args.interval,
                            "interval_s": float(args.interval.rstrip("s")),
                            "warmup": args.warmup, "seconds": args.seconds,
                            "cadence": args.cadence, "build": args.build}
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="deltasink-latency-") as tmp:
        work = Path(tmp)
        with env.broker(work / "broker") as node:
            for variant in args.variants.split(","):
                results[variant] = run_variant(variant, work / variant, node.bootstrap_servers,
                                               args)
                print(f"[latency {time.strftime('%H:%M:%S')}] {variant}: "
                      f"{ {k: v for k, v in results[variant].items() if k != 'log_tail'} }",
                      flush=True)
    env.publish(args.out, "latency", meta, results, render)
    return 0


if __name__ == "__main__":
    sys.exit(main())
