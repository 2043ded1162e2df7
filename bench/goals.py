"""``python -m bench.goals``: every goal of issue 60 §1, both sides of each, in one run.

One embedded broker for the whole run; the cells in order, each on its own topics and folders:

1. a cold scheduled run, a backlog in arrival order over six hours, random UUIDv4 ids, 6% copies,
   onto an existing table: ``deltasink run`` against the plain append script (``bench.goal_cold``);
2. the same two processes on events spread over 3 days, sequential ids and random ids (two rows);
3. the same on fresh tables; 4. the same with a small backlog on existing tables;
5. a warm batch of 5,000 events: a continuous deltasink against a continuous plain append
   (``bench.warm_batch``);
6. and 7. the p99 latency of ``--interval 5s`` and ``1s`` at 1,000 events/s
   (``bench.latency.run_variant``, its as-configured variant);
8. 1M events over 60 days: deltasink's events/s over the raw confluent-kafka consume's.

``--connect`` adds a Spark Connect row to the cells it names (default 3, 4 and 5, where it is
cheap); the server starts before the first of them and stops after the last. Each cell records
the load average at its start and end and its seconds. Writes ``bench/results/goals.{md,json}``
(``goals-quick.*`` with ``--quick``) after every cell, so a stopped run keeps what it measured.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bench import env, goals_report, latency, warm_batch
from bench.goal_cold import ColdCell, run_cold
from pipelines.kafka.produce import IdKind
from pipelines.runtime.connect_server import ConnectServer

RESULTS = Path(__file__).resolve().parent / "results"
CELLS = (1, 2, 3, 4, 5, 6, 7, 8)
#: Cell 2's two rows: the ids, and how the report names them.
ID_KINDS: tuple[tuple[IdKind, str], ...] = (("seq", "sequential"), ("uuid", "random UUIDv4"))


@dataclass(frozen=True)
class Sizes:
    """Every size of a run: the full one, or ``--quick``'s."""

    backlog: int = 2_000_000
    spread: int = 5_000_000
    fresh: int = 300_000
    small: int = 50_000
    wide: int = 1_000_000
    batch: int = 500_000
    prime: int = 1000
    plan: warm_batch.Plan = field(default_factory=warm_batch.Plan)
    rate: int = 1000
    warmup: float = 90.0
    seconds: float = 120.0


QUICK = Sizes(backlog=20_000, spread=20_000, fresh=5_000, small=2_000, wide=20_000,
              batch=10_000, prime=200, plan=warm_batch.Plan(events=500, rounds=4, warm=1),
              rate=100, warmup=15.0, seconds=20.0)


def cold_cells(s: Sizes) -> dict[int, list[ColdCell]]:
    """The cold cells' rows and data, at the run's sizes."""
    return {1: [ColdCell("1", 1, f"{s.backlog:,} backlog, arrival order over 6 h, UUIDv4 ids, "
                         "6% copies, existing table", s.backlog, ids="uuid", times="arrival",
                         span_hours=6.0, dup_rate=0.06)],
            2: [ColdCell(f"2-{ids}", 2, f"{s.spread:,} events over 3 days, {name} ids, existing "
                         "table", s.spread, ids=ids) for ids, name in ID_KINDS],
            3: [ColdCell("3", 3, f"{s.fresh:,} events over 3 days, fresh tables", s.fresh,
                         tables="new")],
            4: [ColdCell("4", 4, f"{s.small:,} events over 3 days, existing tables", s.small)],
            8: [ColdCell("8", 8, f"{s.wide:,} events over 60 days, existing table", s.wide,
                         days=60, floor=True)]}


class LazyServer:
    """The Spark Connect server, started on first use."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.server: ConnectServer | None = None

    def url(self) -> str:
        """The server's ``sc://`` address (starting it the first time)."""
        if self.server is None:
            self.server = ConnectServer.start(self.log)
        return self.server.url

    def stop(self) -> None:
        """Stop the server if it was started."""
        if self.server is not None:
            self.server.stop()
            self.server = None


def run_cell(n: int, s: Sizes, args: argparse.Namespace, bootstrap: str, work: Path,
             remote: Callable[[], str] | None) -> list[dict[str, Any]]:
    """Cell ``n``'s entries (its Connect row too, when ``remote`` gives the server)."""
    if n in (1, 2, 3, 4, 8):
        passes = args.small_passes if n in (3, 4) else args.passes
        return [e for c in cold_cells(s)[n] for e in run_cold(
            c, bootstrap, work / c.row, batch=s.batch, prime=s.prime, passes=passes,
            remote=remote() if remote else None, say=say)]
    if n == 5:
        label = f"{s.plan.events:,} events a round, warm (`--interval {s.plan.interval}`)"
        plain = warm_batch.plain_side(work / "plain", bootstrap, s.plan)
        say(f"cell 5: plain {warm_batch.seconds(plain, 'add_batch_s')}")
        rows = [warm_batch.entry("5", label, warm_batch.deltasink_side(
            work / "deltasink", bootstrap, s.plan), plain)]
        if remote:
            rows.append({**warm_batch.entry("5-connect", label + " (Spark Connect)",
                                            warm_batch.deltasink_side(work / "connect", bootstrap,
                                                                      s.plan, remote()), plain),
                         "mode": "connect"})
        return rows
    interval = "5s" if n == 6 else "1s"
    options = argparse.Namespace(rate=s.rate, interval=interval, warmup=s.warmup,
                                 seconds=s.seconds, cadence="1m", event_log=None)
    r = latency.run_variant("as-configured", work / "latency", bootstrap, options,
                            topic=f"goal_latency_{n}")
    once = r["exactly_once"]
    clean = once["missing"] == 0 and once["extra"] == 0 and once["rows"] == once["distinct"]
    return [{"cell": n, "row": str(n), "kind": "latency", "raw": r, "p50": r["p50"],
             "label": f"`--interval {interval}`, {s.rate:,} events/s, {s.seconds:g} s measured "
                      f"after {s.warmup:g} s warm-up, as configured (cadence 1m)",
             "deltasink": [r["p99"]] if r["count"] else [], "other": [],
             **({} if clean else {"invalid": f"not exactly once: {once}"})}]


def say(text: str) -> None:
    """Print one progress line."""
    print(f"[goals {time.strftime('%H:%M:%S')}] {text}", flush=True)


def build() -> str:
    """The commit this run measures (``+dirty`` with uncommitted changes)."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def notes(s: Sizes, entries: list[dict[str, Any]]) -> list[str]:
    """What each cell ran, under the tables."""
    out = [f"- Cells 1-4 and 8: each side a cold process (`bench.scheduled.run_once`), batch "
           f"size {s.batch:,} for both; an existing table is one that a first, untimed run of "
           f"{s.prime:,} events created. Copies only in cell 1; ids sequential unless named.",
           f"- Cell 5: rounds of {s.plan.events:,} events (UUIDv4, arrival order), "
           f"{s.plan.rounds} rounds of which {s.plan.warm} warm up; only batches holding a whole "
           "round count; deltasink's batch time from its commits (`BatchMetrics.duration_s`), "
           "the plain stream's from Spark's `addBatch`.",
           f"- Cells 6 and 7: `bench.latency`'s as-configured variant, {s.rate:,} events/s, "
           f"{s.warmup:g} s warm-up from the first commit, {s.seconds:g} s measured."]
    for e in entries:
        if e.get("kind") == "share" and e.get("deltasink_stream") and e.get("other"):
            share = goals_report._median(e["deltasink_stream"]) or 0.0
            out.append(f"- Row {e['row']}: deltasink's stream phase alone (no start-up, no "
                       f"validation) reaches {share / (goals_report._median(e['other']) or 1):.3f}"
                       " of the raw consume rate.")
    return out


def write(out: Path, name: str, meta: dict[str, Any], entries: list[dict[str, Any]],
          s: Sizes, t0: float) -> Path:
    """Write ``name.json`` (every raw figure) and ``name.md``; the report's path."""
    meta = {**meta, "load_end": env.load(), "total_s": round(time.monotonic() - t0),
            "notes": notes(s, entries)}
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps({"meta": meta, "results": entries}, indent=1,
                                                 default=str))
    (md := out / f"{name}.md").write_text(goals_report.render(entries, meta))
    return md


def main(argv: list[str] | None = None) -> int:
    """Run the chosen cells in order and write the report; 1 if a cell failed."""
    parser = argparse.ArgumentParser(prog="python -m bench.goals", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cells", default=",".join(map(str, CELLS)), help="default: all")
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke test")
    parser.add_argument("--passes", type=int, default=1, help="cells 1, 2, 8 (default: 1)")
    parser.add_argument("--small-passes", type=int,
                        help="cells 3, 4 (default: 3; 1 with --quick)")
    parser.add_argument("--connect", default="3,4,5",
                        help="cells with a Spark Connect row too (default: %(default)s; '' none)")
    parser.add_argument("--batch", type=int, help="records per batch, cold cells (500000)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="report folder")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else Sizes()
    args.small_passes = args.small_passes or (1 if args.quick else 3)
    sizes = replace(sizes, batch=args.batch or sizes.batch)
    cells = [int(c) for c in args.cells.split(",") if c]
    connect = {int(c) for c in args.connect.split(",") if c} & set(cells)
    name = "goals-quick" if args.quick else "goals"
    t0 = time.monotonic()
    meta: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                            "host": f"{platform.node()} ({platform.machine()})",
                            "build": build(), "load_start": env.load(), "quick": args.quick,
                            "cells": cells, "connect": sorted(connect), "passes": args.passes,
                            "small_passes": args.small_passes, "sizes": repr(sizes)}
    entries: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="deltasink-goals-") as tmp:
        work = Path(tmp)
        server = LazyServer(work / "connect-server.log")
        try:
            with env.broker(work / "broker") as node:
                for n in sorted(cells):
                    start, mark = env.load(), time.monotonic()
                    say(f"cell {n}: start (load {start})")
                    try:
                        rows = run_cell(n, sizes, args, node.bootstrap_servers, work / f"cell{n}",
                                        server.url if n in connect else None)
                    except Exception as exc:  # a failed cell is reported; the others still run
                        rows = [{"cell": n, "row": str(n), "label": "", "error": str(exc)[-300:]}]
                    if not connect & {c for c in cells if c > n}:
                        server.stop()
                    for row in rows:
                        row.update(load_start=start, load_end=env.load(),
                                   seconds=round(time.monotonic() - mark))
                    entries += rows
                    say(f"cell {n}: done in {rows[0]['seconds']} s: "
                        + "; ".join(goals_report.judge(r).verdict for r in rows))
                    write(args.out, name, meta, entries, sizes, t0)
        finally:
            server.stop()
    md = write(args.out, name, meta, entries, sizes, t0)
    print(md.read_text())
    return 1 if any(e.get("error") for e in entries) else 0


if __name__ == "__main__":
    sys.exit(main())
