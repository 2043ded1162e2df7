"""``python -m bench.eventlog LOG``: where a run's Spark time went, job by job, from its event log.

Write the log with ``python -m bench.profile --event-log DIR`` (or any session with
``spark.eventLog.enabled=true``). Each line is one Spark job: when it started, its wall time,
and per stage the task count, wall time, task run time and CPU time. A stage that scans the
Kafka source (``DataSourceRDD``) is flagged ``KAFKA``: in a deltasink batch only the first job
may read Kafka; a later one doing so means the batch is being recomputed. This is how the
MERGE's re-read of every batch was found (see bench/README.md, "Profile").
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Stage:
    """One completed stage."""

    tasks: int
    wall_s: float
    run_s: float
    cpu_s: float
    reads_kafka: bool


@dataclass
class Job:
    """One Spark job and its stages."""

    job_id: int
    start_ms: int
    end_ms: int = 0
    description: str = ""
    stage_ids: list[int] = field(default_factory=list)


def _events(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON events of a log file, or of every events file under a rolling-log folder."""
    files = sorted(path.rglob("events_*")) if path.is_dir() else [path]
    for f in files:
        text = (subprocess.run(["zstd", "-dc", str(f)], check=True, capture_output=True).stdout
                .decode() if f.suffix == ".zstd" else f.read_text())
        for line in text.splitlines():
            if line.strip():
                yield json.loads(line)


def _metric(stage: dict[str, Any], name: str) -> float:
    return float(sum(a.get("Value", 0) for a in stage.get("Accumulables", [])
                     if a.get("Name") == f"internal.metrics.{name}"))


def read(path: Path) -> tuple[list[Job], dict[int, Stage]]:
    """Parse a Spark event log into jobs and stages."""
    jobs: dict[int, Job] = {}
    stages: dict[int, Stage] = {}
    for e in _events(path):
        kind = e["Event"]
        if kind == "SparkListenerJobStart":
            props = e.get("Properties") or {}
            desc = props.get("spark.job.description") or props.get("callSite.short") or ""
            jobs[e["Job ID"]] = Job(e["Job ID"], e["Submission Time"],
                                    description=desc.splitlines()[0][:48] if desc else "",
                                    stage_ids=list(e["Stage IDs"]))
        elif kind == "SparkListenerJobEnd" and e["Job ID"] in jobs:
            jobs[e["Job ID"]].end_ms = e["Completion Time"]
        elif kind == "SparkListenerStageCompleted":
            info = e["Stage Info"]
            stages[info["Stage ID"]] = Stage(
                tasks=info["Number of Tasks"],
                wall_s=(info.get("Completion Time", 0) - info.get("Submission Time", 0)) / 1000,
                run_s=_metric(info, "executorRunTime") / 1000,
                cpu_s=_metric(info, "executorCpuTime") / 1e9,
                reads_kafka=any(r.get("Name") == "DataSourceRDD" for r in info["RDD Info"]))
    return sorted(jobs.values(), key=lambda j: j.job_id), stages


def render(jobs: list[Job], stages: dict[int, Stage]) -> str:
    """One line per job, with its stages."""
    if not jobs:
        return "no jobs in the log"
    t0 = jobs[0].start_ms
    lines = []
    for job in jobs:
        parts = []
        for sid in job.stage_ids:
            s = stages.get(sid)
            if s is not None:  # skipped stages (reused shuffle output) never complete
                flag = " KAFKA" if s.reads_kafka else ""
                parts.append(f"{s.tasks}t {s.wall_s:.2f}s run {s.run_s:.2f} cpu {s.cpu_s:.2f}"
                             f"{flag}")
        wall = max(0, job.end_ms - job.start_ms) / 1000
        lines.append(f"{(job.start_ms - t0) / 1000:8.2f}s job {job.job_id:4d} {wall:6.2f}s "
                     f"{job.description!r:50} {' | '.join(parts)}")
    cpu = sum(s.cpu_s for s in stages.values())
    lines.append(f"{len(jobs)} jobs, {cpu:.1f} s task CPU in all")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Print the summary of one event log (a file, or a rolling-log folder)."""
    parser = argparse.ArgumentParser(prog="python -m bench.eventlog", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("log", type=Path, help="event log file or folder")
    args = parser.parse_args(argv)
    print(render(*read(args.log)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
