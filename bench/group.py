"""``python -m bench.group``: many pipelines, as one group run, as separate runs, and plain.

For 1, 4 and 8 pipelines (``--counts``) of ``--events`` events each (one topic per pipeline),
three cold processes (or process sequences) are timed from start to exit, on tables a first,
untimed run created (what every scheduled trigger but the first pays):

- **plain**: ``bench/plain_group.py``, one process with one plain append query per topic;
- **group**: one ``deltasink run --config ... --config ...`` (validation included);
- **separate**: one ``deltasink run --config`` per pipeline, one after another.

With ``--passes 2`` the second pass runs them in reverse order. Writes
``bench/results/group.{md,json}``; the goals (issue 35 §4) are a group of 8 within 1.3x the
plain job of 8, and a single cold run within 1.5x the plain job of 1.

The pipelines' configs lie in one folder, as a team's ``notebooks/pipelines.d`` does, so they
share the default bookkeeping tables (run metrics, verdicts) as they would in a workspace.
``--baseline DELTASINK`` adds a fourth kind, **baseline**: the group run by another build's
``deltasink`` (an older clone's ``.venv/bin/deltasink``), timed in turn with the others, for
an A/B of a change; ``--kinds`` picks the kinds (the output is then not the published report:
give ``--out``).
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

RESULTS = Path(__file__).resolve().parent / "results"
KINDS = ("plain", "group", "separate")
BASELINE = "baseline"
ROOT = Path(__file__).resolve().parent.parent


def say(text: str) -> None:
    """Print one progress line."""
    print(f"[group {time.strftime('%H:%M:%S')}] {text}", flush=True)


def _config(work: Path, bootstrap: str, topic: str, batch: int) -> Path:
    """A config with the required keys (and the plain job's batch size) for ``topic``, in
    ``work/pipelines.d``: the quality tables' default paths are relative to it, so shared."""
    folder = work / topic
    folder.mkdir(parents=True, exist_ok=True)
    path = work / "pipelines.d" / f"{topic}.yml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(yaml.safe_dump({
        "name": topic, "checkpoint": str(folder / "checkpoint"),
        "source": {"bootstrap_servers": bootstrap, "topics": [topic],
                   "max_records_per_batch": batch},
        "target": {"path": str(folder / "target")}}))
    return path


def _timed(command: list[str], work: Path, extra_env: dict[str, str] | None = None) -> float:
    """Run ``command`` cold in ``work``; its wall seconds. A failure stops the bench."""
    environ = {**os.environ, "DELTASINK_SPARK_LOG": str(work / "driver.log"), **(extra_env or {})}
    mark = time.monotonic()
    done = subprocess.run(command, cwd=work, env=environ, capture_output=True, text=True,
                          timeout=3600, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{command[:3]} exited {done.returncode}: {done.stdout[-1500:]}"
                           f"{done.stderr[-1500:]}")
    return time.monotonic() - mark


def run_kind(kind: str, bootstrap: str, topics: list[str], work: Path, batch: int,
             baseline: str | None = None) -> float:
    """Wall seconds of one cell: the plain job, the group run (``baseline``'s build for the
    baseline kind), or the separate runs in turn."""
    deltasink = str(Path(sys.executable).with_name("deltasink"))
    if kind == BASELINE:
        deltasink, kind = str(baseline), "group-baseline"
    folder = work / kind
    folder.mkdir(parents=True, exist_ok=True)
    if kind == "plain":
        return _timed([sys.executable, "-m", "bench.plain_group", bootstrap, str(folder),
                       str(batch), *topics], folder, {"PYTHONPATH": str(ROOT)})
    configs = [str(_config(folder, bootstrap, topic, batch)) for topic in topics]
    if kind.startswith("group"):
        return _timed([deltasink, "run", *[a for c in configs for a in ("--config", c)]],
                      folder)
    return sum(_timed([deltasink, "run", "--config", c], folder) for c in configs)


def render(results: dict[int, dict[str, list[float]]], meta: dict[str, Any]) -> str:
    """The markdown report: wall seconds, ratios to plain, events/s per core, the goals."""
    cores = int(meta.get("cores") or 1)
    lines = ["# deltasink benchmark: many pipelines (issue 35)", "",
             f"Run {meta['started']} on {meta['host']}; load average at start "
             f"{meta['load_start']}, at end {meta['load_end']}; {meta['passes']} pass(es), "
             f"median per cell; {meta['events']:,} events per pipeline, batch "
             f"{meta['batch']:,}; existing tables. Wall time is process start to exit "
             "(separate: the sum of its processes).", "",
             "| pipelines | plain s | group s | ratio | separate s | ratio "
             "| events/s per core: plain | group | separate |",
             "|---|---|---|---|---|---|---|---|---|"]
    for count, runs in sorted(results.items()):
        med = {k: statistics.median(v) for k, v in runs.items() if v}
        plain, group, separate = (med.get(k) for k in KINDS)
        cells = [f"{count}", _seconds(plain), _seconds(group), _ratio(group, plain),
                 _seconds(separate), _ratio(separate, plain)]
        cells += [f"{count * meta['events'] / med[k] / cores:,.0f}" if k in med else "-"
                  for k in KINDS]
        lines.append("| " + " | ".join(cells) + " |")
    if any(runs.get(BASELINE) for runs in results.values()):
        lines += ["", f"Group run against the baseline build ({meta.get('baseline')}), the "
                  "ratio taken pass by pass:", "",
                  "| pipelines | group s | baseline s | group / baseline per pass |",
                  "|---|---|---|---|"]
        for count, runs in sorted(results.items()):
            pairs = list(zip(runs.get("group", []), runs.get(BASELINE, []), strict=False))
            if pairs:
                lines.append(f"| {count} | {statistics.median(a for a, _ in pairs):.1f} | "
                             f"{statistics.median(b for _, b in pairs):.1f} | "
                             + ", ".join(f"{a / b:.2f}" for a, b in pairs) + " |")
    lines += ["", "Goals (issue 35 §4):", ""]
    for count, goal, what in ((8, 1.3, "a group of 8 within 1.3x the plain job of 8"),
                              (1, 1.5, "a single cold run within 1.5x the plain job of 1")):
        cell = results.get(count)
        if not cell or not cell.get("group") or not cell.get("plain"):
            lines.append(f"- {what}: not measured")
            continue
        ratio = statistics.median(cell["group"]) / statistics.median(cell["plain"])
        lines.append(f"- {what}: {ratio:.2f}x, {'met' if ratio <= goal else 'missed'}")
    return "\n".join(lines) + "\n"


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _ratio(value: float | None, plain: float | None) -> str:
    return "-" if value is None or not plain else f"{value / plain:.2f}x"


def main(argv: list[str] | None = None) -> int:
    """Produce the topics, time the three kinds per pipeline count, write the report."""
    parser = argparse.ArgumentParser(prog="python -m bench.group", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--counts", default="1,4,8",
                        help="comma-separated pipeline counts (default: %(default)s)")
    parser.add_argument("--events", type=int, default=50_000,
                        help="events per pipeline per pass (default: %(default)s)")
    parser.add_argument("--batch", type=int, default=500_000, help="default: %(default)s")
    parser.add_argument("--passes", type=int, default=2, help="default: %(default)s")
    parser.add_argument("--prime", type=int, default=1000,
                        help="events of the untimed first runs (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="report folder")
    parser.add_argument("--kinds", default=",".join(KINDS),
                        help="comma-separated kinds to time (default: %(default)s)")
    parser.add_argument("--baseline", metavar="DELTASINK",
                        help="also time the group run with this deltasink executable")
    args = parser.parse_args(argv)
    counts = [int(c) for c in args.counts.split(",")]
    kinds = tuple(k for k in args.kinds.split(",") if k)
    if args.baseline:
        kinds = (*kinds, BASELINE)
    unknown = set(kinds) - {*KINDS, BASELINE}
    if unknown:
        parser.error(f"--kinds: unknown {', '.join(sorted(unknown))}; choose from "
                     f"{', '.join(KINDS)}")
    meta: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                            "host": os.uname().nodename, "load_start": env.load(),
                            "passes": args.passes, "batch": args.batch, "events": args.events,
                            "counts": counts, "cores": os.cpu_count() or 1,
                            "baseline": args.baseline}
    results: dict[int, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory(prefix="deltasink-group-") as tmp:
        work = Path(tmp)
        with env.broker(work / "broker") as node:
            bootstrap = node.bootstrap_servers
            for count in counts:
                topics = [f"group{count}_{i}" for i in range(count)]
                for i, topic in enumerate(topics):
                    produce_events(bootstrap, topic, args.prime, seed=100 + i, partitions=4)
                for kind in kinds:  # creates the tables and checkpoints; untimed
                    run_kind(kind, bootstrap, topics, work / str(count), args.batch,
                             args.baseline)
                say(f"{count} pipelines: first runs done on {args.prime:,} events each")
                results[count] = {k: [] for k in kinds}
                for n in range(args.passes):
                    for i, topic in enumerate(topics):
                        produce_events(bootstrap, topic, args.events, seed=200 + 10 * n + i,
                                       partitions=4)
                    for kind in (kinds if n % 2 == 0 else tuple(reversed(kinds))):
                        took = run_kind(kind, bootstrap, topics, work / str(count), args.batch,
                                        args.baseline)
                        results[count][kind].append(took)
                        say(f"{count} pipelines, {kind} (pass {n + 1}): {took:.1f}s "
                            f"(load {env.load()})")
    env.publish(args.out, "group", meta, results, render)
    return 0


if __name__ == "__main__":
    sys.exit(main())
