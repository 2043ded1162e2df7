"""Probes of a running ``deltasink`` process and its folders, read from outside it.

Used by ``bench.soak`` (every few minutes) and ``bench.latency`` (the load): the process's and
its JVM's resident set, the JVM heap after a full GC, files and bytes under a folder, and a
Delta table's log entries and newest version, read from its ``_delta_log`` files, and a
batch's own timings from its commit.
"""

from __future__ import annotations

import json
import os
import subprocess
from datetime import datetime
from pathlib import Path
from typing import Any


def jvm_child(pid: int) -> int | None:
    """The java process started by ``pid`` (the driver JVM), if any."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmd = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid and b"java" in cmd.split(b"\0")[0]:
            return int(entry.name)
    return None


def rss_mib(pid: int | None) -> float:
    """A process's resident set, in MiB (0 if gone)."""
    if pid is None:
        return 0.0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def heap_after_gc_mib(jvm: int | None) -> float | None:
    """The JVM's used heap right after a full GC (``jcmd GC.run``, then ``jstat -gc``)."""
    if jvm is None:
        return None
    try:
        subprocess.run(["jcmd", str(jvm), "GC.run"], capture_output=True, timeout=60, check=True)
        out = subprocess.run(["jstat", "-gc", str(jvm)], capture_output=True, text=True,
                             timeout=60, check=True).stdout.split("\n")
    except (OSError, subprocess.SubprocessError):
        return None
    row = dict(zip(out[0].split(), out[1].split(), strict=False))
    used = sum(float(row.get(k, 0) or 0) for k in ("S0U", "S1U", "EU", "OU"))
    return used / 1024


def heap_top(jvm: int | None, count: int = 8) -> list[str]:
    """The ``count`` classes holding the most live heap (``jcmd GC.class_histogram``, which
    runs a full GC first), as ``"<MiB> MiB <class>"``; empty when it cannot be read."""
    if jvm is None:
        return []
    try:
        out = subprocess.run(["jcmd", str(jvm), "GC.class_histogram"], capture_output=True,
                             text=True, timeout=120, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return top_classes(out, count)


def top_classes(histogram: str, count: int = 8) -> list[str]:
    """The first ``count`` rows of a class histogram (``num: #instances #bytes class``)."""
    rows = []
    for line in histogram.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[0].rstrip(":").isdigit() and parts[2].isdigit():
            rows.append(f"{int(parts[2]) / 2**20:.0f} MiB {parts[3]}")
        if len(rows) == count:
            break
    return rows


def folder(path: Path) -> tuple[int, int]:
    """Files and bytes under ``path``."""
    files = size = 0
    for root, _dirs, names in os.walk(path):
        for name in names:
            try:
                size += (Path(root) / name).stat().st_size
                files += 1
            except OSError:
                pass
    return files, size


def names(folder: Path) -> int:
    """Files directly in ``folder`` but Hadoop's ``.crc`` checksums (0 when it is missing)."""
    return sum(1 for p in folder.iterdir() if not p.name.endswith(".crc")) \
        if folder.is_dir() else 0


def log_entries(table: Path) -> int:
    """Entries in a Delta table's ``_delta_log`` folder (commits, checkpoints, checksums)."""
    log = table / "_delta_log"
    return sum(1 for _ in log.iterdir()) if log.exists() else 0


def newest_version(table: Path) -> int:
    """A Delta table's newest commit version, from its commit files (-1 for none)."""
    log = table / "_delta_log"
    names = [p.name for p in log.glob("*.json")] if log.exists() else []
    return max((int(n.split(".")[0]) for n in names if n.split(".")[0].isdigit()), default=-1)


def load1() -> float:
    """The 1-minute load average."""
    return round(os.getloadavg()[0], 2)


def batch_timing(info: dict[str, Any]) -> dict[str, float]:
    """A deltasink commit's own timings, from its ``commitInfo``: ``start`` (the batch's start,
    epoch s, from the userMetadata), ``committed`` (the commit's timestamp), ``read_parse`` and
    ``quarantine`` (the sink's stage seconds) and ``merge`` (Delta's ``executionTimeMs`` of the
    MERGE and its commit). Empty for a commit that is not a deltasink batch's, an auto-compaction's
    ``OPTIMIZE`` included (Delta copies the batch's userMetadata into it)."""
    if info.get("operation") == "OPTIMIZE":
        return {}
    try:
        body = json.loads(info.get("userMetadata") or "{}").get("deltasink", {})
        counts = body["batch"]
        start = datetime.fromisoformat(str(counts["started_at"])).timestamp()
    except (ValueError, KeyError, TypeError, AttributeError):
        return {}
    stages = counts.get("stage_seconds", {})
    merge_ms = (info.get("operationMetrics") or {}).get("executionTimeMs")
    return {"start": start, "committed": float(info.get("timestamp", 0)) / 1000,
            **{k: float(stages[k]) for k in ("read_parse", "quarantine") if k in stages},
            **({"merge": float(merge_ms) / 1000} if merge_ms is not None else {})}
