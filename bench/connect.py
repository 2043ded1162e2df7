"""``python -m bench.connect``: ``deltasink run`` through Spark Connect next to classic.

On one topic per size, three cold ``deltasink run`` processes (validation included) drain the same
events into their own tables, from configs with the required keys and one batch size:

- **classic**: the process starts its own Spark driver JVM, as on a dedicated cluster;
- **staged**: classic with local checkpoints refused (each batch staged in a Delta table);
- **connect**: ``spark.remote`` points at Spark's own ``SparkConnectServer``, started once for the
  whole benchmark (as a serverless or standard-mode session is already up when a job starts): the
  process starts no JVM, and its batches run in a Python worker beside the server.

As in ``bench.scheduled --tables existing``, each process first runs once, untimed, on a small
backlog (tables and checkpoint exist), then every pass produces the size's events anew and both
drain them; the second pass runs them in reverse order. The report gives wall seconds, the ratio
connect / classic, and the phases from each process's ``timings:`` line, ``stream`` (the warm
batches) apart from start-up. Writes ``bench/results/connect.{md,json}``.
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
from bench.scheduled import time_process
from pipelines.kafka.produce import produce_events
from pipelines.runtime.connect_server import ConnectServer

RESULTS = Path(__file__).resolve().parent / "results"
KINDS = ("classic", "connect", "staged")
#: ``staged``: classic, with local checkpoints refused (the ``no_local_checkpoint`` hook): the
#: batch is staged in a Delta table, as where a serverless session refuses checkpoints.
STAGED = {"DELTASINK_FAULT": "no_local_checkpoint"}
PHASES = ("launch", "spark", "source", "preflight", "tables", "resume", "stream", "validate")


def say(text: str) -> None:
    """Print one progress line."""
    print(f"[connect {time.strftime('%H:%M:%S')}] {text}", flush=True)


def run_once(work: Path, bootstrap: str, topic: str, batch: int,
             remote: str | None, staged: bool = False) -> dict[str, float]:
    """One cold ``deltasink run``; its wall seconds and phases (``launch`` derived)."""
    work.mkdir(parents=True, exist_ok=True)
    config = work / "pipeline.yml"
    body: dict[str, Any] = {
        "name": "connect_bench", "checkpoint": str(work / "checkpoint"),
        "source": {"bootstrap_servers": bootstrap, "topics": [topic],
                   "max_records_per_batch": batch},
        "target": {"path": str(work / "target")}}
    if remote:
        body["spark"] = {"remote": remote}
    config.write_text(yaml.safe_dump(body))
    command = [str(Path(sys.executable).with_name("deltasink")), "run", "--config", str(config)]
    return time_process("connect" if remote else "classic", command, work,
                        STAGED if staged else None)


def _median(rows: list[dict[str, float]], key: str) -> float:
    return statistics.median(r.get(key, 0.0) for r in rows)


def render(results: dict[int, dict[str, list[dict[str, float]]]], meta: dict[str, Any]) -> str:
    """The markdown report: wall and stream seconds per mode, and their ratios."""
    lines = ["# deltasink benchmark: Spark Connect next to classic (each client process cold)",
             "", f"Run {meta['started']} on {meta['host']}; load average at start "
             f"{meta['load_start']}, at end {meta['load_end']}; {meta['passes']} pass(es), "
             f"median per cell; batch size {meta['batch']:,}; on existing tables. The Connect "
             "server was started once, before the first run, and stays up (as a serverless "
             "session is): its JVM start-up is in no cell.", "",
             "| events | classic s | connect s | ratio | classic stream s | connect stream s "
             "| stream ratio | staged s | staged stream ratio |",
             "|---|---|---|---|---|---|---|---|---|"]
    for events, runs in sorted(results.items()):
        classic, connect, staged = (_median(runs[k], "wall") for k in KINDS)
        s_classic, s_connect, s_staged = (_median(runs[k], "stream") for k in KINDS)
        lines.append(f"| {events:,} | {classic:.1f} | {connect:.1f} | {connect / classic:.2f}x "
                     f"| {s_classic:.1f} | {s_connect:.1f} | {s_connect / s_classic:.2f}x "
                     f"| {staged:.1f} | {s_staged / s_classic:.2f}x |")
    lines += ["", "Where the seconds go (median seconds per phase):", "",
              "| events | mode | " + " | ".join(PHASES) + " | wall |",
              "|---|---|" + "---|" * (len(PHASES) + 1)]
    for events, runs in sorted(results.items()):
        for kind in KINDS:
            cells = [f"{_median(runs[kind], p):.1f}" for p in PHASES]
            lines.append(f"| {events:,} | {kind} | " + " | ".join(cells)
                         + f" | {_median(runs[kind], 'wall'):.1f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Start a broker and a Connect server, time both modes per size, write the report."""
    parser = argparse.ArgumentParser(prog="python -m bench.connect", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="50000,300000",
                        help="comma-separated topic sizes in events (default: %(default)s)")
    parser.add_argument("--batch", type=int, default=50_000,
                        help="records per micro-batch (default: %(default)s)")
    parser.add_argument("--passes", type=int, default=2, help="default: %(default)s")
    parser.add_argument("--prime", type=int, default=1000,
                        help="events of the untimed first runs (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="report folder")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    meta: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                            "host": os.uname().nodename, "load_start": env.load(),
                            "passes": args.passes, "batch": args.batch, "sizes": sizes}
    results: dict[int, dict[str, list[dict[str, float]]]] = {}
    with tempfile.TemporaryDirectory(prefix="deltasink-connect-") as tmp:
        work = Path(tmp)
        server = ConnectServer.start(work / "server.log")
        say(f"Spark Connect server at {server.url}")
        remotes = {"classic": None, "connect": server.url, "staged": None}
        try:
            with env.broker(work / "broker") as node:
                for events in sizes:
                    topic = f"connect_{events}"
                    produce_events(node.bootstrap_servers, topic, args.prime, seed=6,
                                   partitions=4)
                    for kind in KINDS:  # creates the tables and the checkpoint; untimed
                        run_once(work / f"{events}-{kind}", node.bootstrap_servers, topic,
                                 args.batch, remotes[kind], kind == "staged")
                    results[events] = {k: [] for k in KINDS}
                    for n in range(args.passes):
                        produce_events(node.bootstrap_servers, topic, events, seed=7 + n,
                                       partitions=4)
                        for kind in (KINDS if n % 2 == 0 else tuple(reversed(KINDS))):
                            took = run_once(work / f"{events}-{kind}", node.bootstrap_servers,
                                            topic, args.batch, remotes[kind], kind == "staged")
                            results[events][kind].append(took)
                            say(f"{events:,} events, {kind} (pass {n + 1}): "
                                f"{took['wall']:.1f}s, stream {took.get('stream', 0):.1f}s "
                                f"(load {env.load()})")
        finally:
            server.stop()
    env.publish(args.out, "connect", meta, results, render)
    return 0


if __name__ == "__main__":
    sys.exit(main())
