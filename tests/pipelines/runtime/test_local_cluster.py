"""A pipeline on Spark's ``local-cluster`` master: two executor JVMs (killed, in chaos).

``local-cluster[2,1,1024]`` runs a standalone master and two workers inside the driver JVM;
each worker launches its executor as a separate JVM (``CoarseGrainedExecutorBackend``), a child of
the driver. Nothing in the data path may live only in the driver; and when an executor dies with
a batch's materialized blocks, deltasink re-runs the batch itself (``pipelines/sink/retry.py``).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.config.loader import load_config
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import produce_events
from tests.support.checker import check
from tests.support.configs import write_config
from tests.support.runner import COLD_JVM_OPTS, run

MASTER = "local-cluster[2,1,1024]"
EXECUTOR = "CoarseGrainedExecutorBackend"


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            kids.append(int(entry.name))
    return kids


def executor_pids(root: int) -> list[int]:
    """The executor JVMs below process ``root`` (the CLI and its driver JVM)."""
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        for kid in _children(pid):
            todo.append(kid)
            try:
                cmdline = (Path("/proc") / str(kid) / "cmdline").read_bytes()
            except OSError:
                continue
            if EXECUTOR.encode() in cmdline:
                found.append(kid)
    return found


def _kill_executors_when_ready(pause: Path, killed: list[int], stop: threading.Event) -> None:
    """Wait for the paused batch, SIGKILL every executor JVM, then let the batch go on.

    Every one, so the batch surely loses blocks: with one killed, which blocks die depends on
    where the tasks ran. The standalone master starts new executors; the batch's blocks are gone
    with the old ones, and the next job over them fails until deltasink re-runs the batch.
    """
    while not stop.is_set():
        ready = sorted(pause.glob("ready-*"))
        if ready:
            pids = executor_pids(int(ready[0].read_text()))
            if len(pids) >= 2:
                for pid in pids:
                    os.kill(pid, signal.SIGKILL)
                killed.extend(pids)
                time.sleep(3)  # let the driver see the executors (and their blocks) gone
                (pause / "go").write_text("")
                return
        time.sleep(0.5)


def _cluster_config(lake: Path, bootstrap: str, topic: str, batch: int) -> Path:
    """A pipeline config whose session runs on ``local-cluster`` with two small executors."""
    return write_config(lake, bootstrap, topic, source={"max_records_per_batch": batch},
                        spark={"master": MASTER,
                               "conf": {"spark.executor.memory": "512m",
                                        "spark.sql.shuffle.partitions": "4",
                                        # short-lived executors: the driver's test options
                                        "spark.executor.extraJavaOptions": COLD_JVM_OPTS}})


def _cli_env() -> dict[str, str]:
    """The executors run this interpreter (pyspark's workers need the same Python)."""
    return {**os.environ, "PYSPARK_PYTHON": sys.executable}


@pytest.mark.extended
def test_local_cluster_run_lands_every_event_exactly_once(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path) -> None:
    """The whole CLI run on two executor JVMs: every event once, the poison pills quarantined."""
    topic = f"cluster-{uuid.uuid4().hex[:8]}"
    sent = produce_events(broker.bootstrap_servers, topic, 600, duplicate_rate=0.1,
                          poison_rate=0.02, seed=22, partitions=4)
    path = _cluster_config(lake, broker.bootstrap_servers, topic, batch=400)
    seen: set[int] = set()  # executor JVMs below this process: only the CLI's cluster has any
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(0.5):
            seen.update(executor_pids(os.getpid()))

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        done = run(path, env=_cli_env(), timeout=600)
    finally:
        stop.set()
        watcher.join(timeout=10)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    assert len(seen) >= 2, f"the run did not use two executor JVMs: {sorted(seen)}"
    verdict = check(spark, load_config(path, environ={}), sent.event_ids,
                    sum(sent.poison.values()))
    assert verdict.clean, verdict


@pytest.mark.chaos  # long (an executor lost and the batch re-run): in `make chaos` only
def test_local_cluster_run_survives_its_executors_sigkilled_mid_batch(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path) -> None:
    topic = f"cluster-{uuid.uuid4().hex[:8]}"
    sent = produce_events(broker.bootstrap_servers, topic, 2000, duplicate_rate=0.1,
                          poison_rate=0.01, seed=21, partitions=4)
    path = _cluster_config(lake, broker.bootstrap_servers, topic, batch=1500)
    cfg = load_config(path, environ={})
    pause = lake / "pause"
    pause.mkdir()
    killed: list[int] = []
    stop = threading.Event()
    killer = threading.Thread(target=_kill_executors_when_ready, args=(pause, killed, stop),
                              daemon=True)
    killer.start()
    try:
        done = run(path, fault=f"pause_in_batch={pause}", env=_cli_env(), timeout=600)
    finally:
        stop.set()
        killer.join(timeout=10)
    assert killed, ("no executor JVM was found to kill", sorted(p.name for p in pause.iterdir()),
                    done.returncode, done.stdout[-1500:], done.stderr[-1500:])
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    # The retry's line comes back in the batch's commit, just before its progress line.
    assert "an executor was lost with the batch's blocks" in done.stdout, done.stdout[-3000:]
    verdict = check(spark, cfg, sent.event_ids, sum(sent.poison.values()))
    assert verdict.clean, verdict

