"""``python -m bench.s3_requests``: what a pipeline on S3 costs in requests (issue 44 §2).

On S3 every request is paid in latency and in money, and a local S3 API's latency is not S3's,
so this counts requests instead of timing them. One pipeline, its four tables and its
checkpoint in one bucket of moto's S3 server (``tests/support/s3.py``: one request at a time,
each logged with its kind and key), is run as users run it, by cold ``deltasink run``
processes (validation included):

- **first run**: an empty bucket; the run creates the tables and drains the topic;
- **scheduled run**: the next trigger, on existing tables, after more events arrived.

Each run's requests are split by kind (LIST, GET, HEAD, PUT, COPY, POST, DELETE) and by key
prefix (the target, the quarantine, the checkpoint, the lease, the quality results and the
run metrics). A **micro-batch** is the requests between two checkpoint commits (the write of
``commits/<n>``, a COPY on S3A: Spark writes a temporary object and renames it); its figures
are the median over a run's batches after the first. The lease is whatever the build does
(``_deltasink/lease.json`` or ``_deltasink/lease_table/`` under the checkpoint); the report
names what it saw.

Writes ``bench/results/s3-requests.{md,json}``.
"""

from __future__ import annotations

import argparse
import importlib
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from bench import env
from pipelines.kafka.produce import produce_events
from pipelines.runtime import jvm

RESULTS = Path(__file__).resolve().parent / "results"
KINDS = ("LIST", "GET", "HEAD", "PUT", "COPY", "POST", "DELETE")
BASE = "bronze"
#: Key prefixes (under the bucket), most specific first: where each request went. The lease is
#: ``_deltasink/lease.json`` (an S3 object) or ``_deltasink/lease_table/`` (a Delta table); the
#: rest of ``_deltasink/`` (the checkpoint's generations) counts as the checkpoint's.
LEASE = f"{BASE}/_checkpoints/orders/_deltasink/lease"
PARTS = (("lease", LEASE),
         ("checkpoint", f"{BASE}/_checkpoints/orders"),
         ("quarantine", f"{BASE}/orders_quarantine"),
         ("target", f"{BASE}/orders"),
         ("quality results", f"{BASE}/_quality/results"),
         ("run metrics", f"{BASE}/_quality/run_metrics"))
BOOKKEEPING = ("lease", "quality results", "run metrics", "checkpoint")


def say(text: str) -> None:
    """Print one progress line."""
    print(f"[s3-requests {time.strftime('%H:%M:%S')}] {text}", flush=True)


def part_of(key: str) -> str:
    """The table (or checkpoint, lease) a key belongs to; ``bucket`` for bucket-level calls."""
    if key.startswith(LEASE):
        return "lease"
    for name, prefix in PARTS:
        if key == prefix or key.startswith(prefix + "/"):
            return name
    return "bucket"


def parse(lines: list[str], bucket: str) -> list[tuple[str, str]]:
    """``(kind, key)`` of each logged request of ``bucket``."""
    out = []
    for line in lines:
        parts = line.split(" ", 3)
        if len(parts) == 4:
            name, _, key = parts[3].lstrip("/").partition("/")
            if name == bucket:
                out.append((parts[1], key))
    return out


def tally(requests: list[tuple[str, str]]) -> dict[str, dict[str, int]]:
    """Requests by part, then by kind (``all`` sums the parts)."""
    table: dict[str, Counter[str]] = {"all": Counter()}
    for kind, key in requests:
        table.setdefault(part_of(key), Counter())[kind] += 1
        table["all"][kind] += 1
    return {part: dict(kinds) for part, kinds in table.items()}


def batch_windows(requests: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """The requests from one checkpoint commit to the next (after the first one's)."""
    commits = f"{BASE}/_checkpoints/orders/commits/"
    ends = [i for i, (kind, key) in enumerate(requests)
            if kind == "COPY" and key.startswith(commits) and key[len(commits):].isdigit()]
    return [requests[a + 1:b + 1] for a, b in itertools.pairwise(ends)]


def median_tally(windows: list[list[tuple[str, str]]]) -> dict[str, dict[str, float]]:
    """The median count per part and kind over ``windows``."""
    tallies = [tally(w) for w in windows]
    parts = {p for t in tallies for p in t}
    return {p: {k: statistics.median(t.get(p, {}).get(k, 0) for t in tallies) for k in KINDS}
            for p in parts}


def run_once(label: str, config: Path, work: Path, environ: dict[str, str],
             server: Any, bucket: str) -> dict[str, Any]:
    """One cold ``deltasink run``; its requests, by part and per batch."""
    mark = server.mark()
    started = time.monotonic()
    done = subprocess.run([str(Path(sys.executable).with_name("deltasink")), "run", "--config",
                           str(config)], cwd=work, env=environ, capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise SystemExit(f"{label}: deltasink run exited {done.returncode}\n"
                         f"{done.stdout[-2000:]}{done.stderr[-2000:]}")
    requests = parse(server.log.read_text().splitlines()[mark:], bucket)
    windows = batch_windows(requests)
    say(f"{label}: {len(requests)} requests, {len(windows) + 1} batches, "
        f"{time.monotonic() - started:.0f}s")
    return {"label": label, "requests": len(requests), "batches": len(windows) + 1,
            "seconds": round(time.monotonic() - started, 1), "run": tally(requests),
            "per_batch": median_tally(windows) if windows else {},
            "lease_keys": sorted({k[len(LEASE) - 5:].split("/")[0] for _, k in requests
                                  if part_of(k) == "lease"})}


def render(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    """The report: requests per run and per micro-batch, by kind and by table."""
    def cells(counts: dict[str, Any]) -> list[str]:
        values = [counts.get(k, 0) for k in KINDS]
        return [f"{v:g}" for v in values] + [f"{sum(values):g}"]

    lines = ["# deltasink on S3: requests per cold run and per micro-batch", "",
             f"Run {meta['started']} on {meta['host']} at commit {meta['commit']}; load "
             "average at start "
             f"{meta['load_start']}, at end {meta['load_end']}. {meta['events']:,} events per "
             f"run (10% duplicate copies), {meta['batch']:,} records a batch; moto "
             f"{meta['moto']} in server mode, one request at a time; Spark's S3A "
             "(hadoop-aws 3.4.1) with its defaults. Lease objects seen: "
             f"{', '.join(rows[0]['lease_keys']) or 'none'}.", "",
             "| | " + " | ".join(KINDS) + " | all |", "|---|" + "---:|" * (len(KINDS) + 1)]
    for row in rows:
        lines.append(f"| {row['label']} ({row['batches']} batches) | "
                     + " | ".join(cells(row["run"]["all"])) + " |")
        if row["per_batch"]:
            lines.append(f"| {row['label']}: one micro-batch (median) | "
                         + " | ".join(cells(row["per_batch"].get("all", {}))) + " |")
    for row in rows:
        lines += ["", f"**{row['label']}, by table** (whole run, then one micro-batch):", "",
                  "| table | " + " | ".join(KINDS) + " | all | share | per batch |",
                  "|---|" + "---:|" * (len(KINDS) + 3)]
        total = sum(row["run"]["all"].values())
        for part in [p for p, _ in PARTS] + ["bucket"]:
            counts = row["run"].get(part, {})
            batch = sum(row["per_batch"].get(part, {}).values())
            lines.append(f"| {part} | " + " | ".join(cells(counts)) +
                         f" | {sum(counts.values()) / total:.0%} | {batch:g} |")
        books = sum(sum(row["run"].get(p, {}).values()) for p in BOOKKEEPING)
        batch_all = sum(row["per_batch"].get("all", {}).values()) or 1
        batch_books = sum(sum(row["per_batch"].get(p, {}).values()) for p in BOOKKEEPING)
        lines += ["", f"Bookkeeping (lease, quality results, run metrics, checkpoint): "
                  f"{books / total:.0%} of the run's requests, {batch_books / batch_all:.0%} "
                  "of a micro-batch's."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Start the S3 server and a broker, run the pipeline twice, write the report."""
    parser = argparse.ArgumentParser(prog="python -m bench.s3_requests", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=2_000, help="per run (%(default)s)")
    parser.add_argument("--batch", type=int, default=500, help="records a batch (%(default)s)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="report folder")
    args = parser.parse_args(argv)
    s3 = importlib.import_module("tests.support.s3")  # the tests' server, not a package API
    from importlib.metadata import version

    meta: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                            "host": os.uname().nodename, "load_start": env.load(),
                            "events": args.events, "batch": args.batch,
                            "moto": version("moto"), "commit": subprocess.run(
                                ["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=False).stdout.strip() or "?"}
    jvm.s3_classpath()  # the runs' S3A jars, which `make install` leaves out (quick when cached)
    rows = []
    with tempfile.TemporaryDirectory(prefix="deltasink-s3-") as tmp:
        work = Path(tmp)
        server = s3.S3Server(work / "s3").start()
        try:
            bucket = server.bucket("lake")
            with env.broker(work / "broker") as node:
                bootstrap = node.bootstrap_servers
                config = work / "orders.yml"
                config.write_text(yaml.safe_dump({
                    "name": "orders",
                    "source": {"bootstrap_servers": bootstrap, "topics": ["orders"],
                               "max_records_per_batch": args.batch},
                    "target": {"path": f"s3a://{bucket}/{BASE}/orders"},
                    "checkpoint": f"s3a://{bucket}/{BASE}/_checkpoints/orders",
                    "quality": {"results_path": f"s3a://{bucket}/{BASE}/_quality/results",
                                "metrics_path": f"s3a://{bucket}/{BASE}/_quality/run_metrics"},
                    "spark": {"conf": s3.s3a_conf(server.endpoint)}}))
                environ = {**os.environ, **s3.client_env(server.endpoint)}
                for n, label in enumerate(("first run", "scheduled run")):
                    produce_events(bootstrap, "orders", args.events, duplicate_rate=0.1,
                                   seed=44 + n, id_prefix=f"r{n}")
                    rows.append(run_once(label, config, work, environ, server, bucket))
        finally:
            server.stop()
    env.publish(args.out, "s3-requests", meta, rows, render)
    return 0


if __name__ == "__main__":
    sys.exit(main())
