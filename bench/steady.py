"""A continuous ``deltasink run`` watched from outside: a steady feed, the log, the process.

Shared by ``bench.latency`` and ``bench.soak``. Nothing here runs inside the deltasink process:

- :class:`Feeder` sends ``events_v1`` events at a steady rate (ids ``s<n>``, event time = now)
  and keeps each one's send time;
- :class:`LogWatcher` polls the target's ``_delta_log`` (every 0.25 s), reads the ``event_id``
  column of every file a data-changing commit adds, and notes when each event was first seen;
  it also counts data files, to check exactly-once at the end from the files themselves;
- :func:`deltasink_process` runs the command and stops it as a user does; :func:`catch_up`
  lands what a stopped run had not reached. The process and folder probes are :mod:`bench.probes`.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import probes
from pipelines.kafka.topics import client_config, ensure_topic

#: How often the target's log is polled.
POLL_EVERY = 0.25


class Feeder:
    """Sends ``rate`` events a second to ``topic`` from a thread, until stopped."""

    def __init__(self, bootstrap: str, topic: str, rate: int, partitions: int = 3) -> None:
        from confluent_kafka import Producer

        ensure_topic(bootstrap, topic, partitions)
        self.rate, self.topic = rate, topic
        self.sent_at: list[float] = []
        self._base = (time.time(), 0)
        self._producer = Producer({**client_config(bootstrap), "enable.idempotence": True,
                                   "linger.ms": 5})
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def set_rate(self, rate: int) -> None:
        """Send ``rate`` events a second from now on."""
        self._base = (time.time(), len(self.sent_at))
        self.rate = rate

    def _loop(self) -> None:
        while not self._stop.is_set():
            since, sent = self._base
            due = sent + int((time.time() - since) * self.rate)
            while len(self.sent_at) < due:
                n = len(self.sent_at)
                now = time.time()
                value = json.dumps({
                    "event_id": f"s{n}", "event_type": "order_placed",
                    "event_time": datetime.fromtimestamp(now, UTC).isoformat()
                    .replace("+00:00", "Z"),
                    "payload": {"amount": 1.0, "currency": "EUR"}}).encode()
                self._producer.produce(self.topic, value=value, key=f"s{n}".encode())
                self.sent_at.append(now)
            self._producer.poll(0)
            self._stop.wait(0.01)
        self._producer.flush(30)

    def start(self) -> Feeder:
        """Start sending."""
        self._base = (time.time(), len(self.sent_at))
        self._thread.start()
        return self

    def stop(self) -> int:
        """Stop sending, flush, and return the number of events sent."""
        self._stop.set()
        self._thread.join()
        return len(self.sent_at)


class LogWatcher:
    """Polls a Delta table's ``_delta_log`` and notes when each event first became visible."""

    def __init__(self, table: Path) -> None:
        self.table = table
        self.seen_at: dict[int, float] = {}
        self.commits: list[dict[str, Any]] = []
        self.live: set[str] = set()
        self.duplicates = 0
        self._next = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.poll()
            self._stop.wait(POLL_EVERY)

    def poll(self) -> None:
        """Read every commit file that appeared since the last poll, in version order."""
        while True:
            path = self.table / "_delta_log" / f"{self._next:020d}.json"
            try:
                text = path.read_text()
            except OSError:
                return
            seen = time.time()
            self._read_commit(self._next, text, seen)
            self._next += 1

    def _read_commit(self, version: int, text: str, seen: float) -> None:
        import pyarrow.parquet as pq  # type: ignore[import-untyped]

        actions = [json.loads(line) for line in text.splitlines() if line.strip()]
        info: dict[str, Any] = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
        new = 0
        for action in actions:
            if "remove" in action:
                self.live.discard(action["remove"]["path"])
            if "add" not in action:
                continue
            self.live.add(action["add"]["path"])
            if not action["add"].get("dataChange", True):
                continue  # a compaction's rewrite: rows already seen
            ids = pq.read_table(self.table / urllib.parse.unquote(action["add"]["path"]),
                                columns=["event_id"]).column("event_id").to_pylist()
            for event_id in ids:
                seq = int(str(event_id)[1:])
                if seq in self.seen_at:
                    self.duplicates += 1
                else:
                    self.seen_at[seq] = seen
                    new += 1
        self.commits.append({"version": version, "seen": seen, "rows": new,
                             "operation": info.get("operation", "?"), **probes.batch_timing(info)})

    def start(self) -> LogWatcher:
        """Start polling."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop polling, after one last poll."""
        self._stop.set()
        self._thread.join()
        self.poll()

    def live_ids(self) -> list[str]:
        """Every event id in the table's live files (as the log says), read from the files."""
        import pyarrow.parquet as pq  # type: ignore[import-untyped]

        ids: list[str] = []
        for rel in self.live:
            ids += [str(v) for v in pq.read_table(self.table / urllib.parse.unquote(rel),
                                                  columns=["event_id"]).column("event_id")
                    .to_pylist()]
        return ids


def latencies(sent_at: list[float], seen_at: dict[int, float], since: float = 0.0,
              until: float = float("inf")) -> list[float]:
    """Seconds from send to first visibility, for the events sent in ``[since, until)`` that
    were seen."""
    return [seen_at[n] - t for n, t in enumerate(sent_at) if since <= t < until and n in seen_at]


def summary(values: list[float]) -> dict[str, float]:
    """p50, p99 and max of ``values`` (zeros for none)."""
    if not values:
        return {"count": 0, "p50": 0.0, "p99": 0.0, "max": 0.0}
    ordered = sorted(values)
    return {"count": len(ordered), "p50": statistics.median(ordered),
            "p99": ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))],
            "max": ordered[-1]}


def exactly_once(watcher: LogWatcher, sent: int) -> dict[str, int]:
    """What the target holds against what was sent: every ``s<n>`` once, nothing else."""
    ids = watcher.live_ids()
    distinct = set(ids)
    expected = {f"s{n}" for n in range(sent)}
    return {"sent": sent, "rows": len(ids), "distinct": len(distinct),
            "missing": len(expected - distinct), "extra": len(distinct - expected),
            "duplicate_adds": watcher.duplicates}


#: Seconds :func:`deltasink_process` waits for a Ctrl-C'd run to exit before it kills the
#: run's process group.
STOP_WAIT = 120.0


@contextmanager
def deltasink_process(command: list[str], log: Path, env: dict[str, str] | None = None,
                      stacks: Path | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``deltasink`` with its output in ``log``; on exit, Ctrl-C it (as a user stops a
    continuous run) and wait for it (SIGKILL of its group after :data:`STOP_WAIT` s).

    A run that has not exited by then has its Python and JVM threads written to ``stacks``
    (when given) before the kill: what it was waiting for.
    """
    with log.open("ab") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT,
                                env={**os.environ, **(env or {})}, start_new_session=True)
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.send_signal(2)
                try:
                    proc.wait(STOP_WAIT)
                except subprocess.TimeoutExpired:
                    if stacks is not None:
                        dump_stacks(proc.pid, stacks)
                    os.killpg(proc.pid, 9)
                    proc.wait()


def dump_stacks(pid: int, path: Path) -> None:
    """Write the threads of ``pid`` (``py-spy dump``, when installed on the PATH or beside this
    interpreter; not a dependency) and of its driver JVM (``jcmd Thread.print``) to ``path``; a
    tool that is missing or fails is noted, not raised."""
    jvm = probes.jvm_child(pid)
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    commands = [[spy, "dump", "--pid", str(pid)],
                *([["jcmd", str(jvm), "Thread.print"]] if jvm is not None else [])]
    parts = []
    for cmd in commands:
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
            parts.append(f"$ {' '.join(cmd)}\n{done.stdout}{done.stderr}")
        except (OSError, subprocess.TimeoutExpired) as exc:
            parts.append(f"$ {' '.join(cmd)}\n(not run: {exc})")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(parts))


def catch_up(config: Path, log: Path, watcher: LogWatcher, sent: int) -> bool:
    """If some sent events are not in the target yet (the stopped run had not reached them),
    land them with one ``deltasink run --no-validate`` (available-now) before the check, so a
    missing event means a lost one. Whether a catch-up run was needed."""
    if len(watcher.seen_at) >= sent:
        return False
    with log.open("ab") as out:
        subprocess.run([str(Path(sys.executable).with_name("deltasink")), "run", "--config",
                        str(config), "--no-validate"], stdout=out, stderr=subprocess.STDOUT,
                       timeout=1800, check=False)
    watcher.poll()
    return True


def batch_seconds(log: Path) -> list[tuple[int, float]]:
    """``(batch id, seconds)`` of each ``batch N: ... 1.23s`` progress line in ``log``."""
    rows = []
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("batch ") and line.rstrip().endswith("s") and ":" in line:
            try:
                rows.append((int(line.split()[1].rstrip(":")),
                             float(line.rstrip().rsplit(" ", 1)[1].rstrip("s"))))
            except ValueError:
                continue
    return rows
