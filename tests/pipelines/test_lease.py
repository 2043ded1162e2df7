"""The single-writer guard across machines: the checkpoint lease, through Hadoop's FileSystem.

A second machine is simulated with the fault hook ``lease_host=<name>`` (the lease's host) and
a ``file:`` URI checkpoint, which the local ``flock`` does not guard: only the lease does.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.config.loader import load_config
from pipelines.errors import CheckpointError
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import produce_events
from pipelines.lease import LEASE_TTL, Lease
from pipelines.run import run_pipeline
from pipelines.runtime.hadoop import HadoopFS
from tests.support import runner
from tests.support.checker import check
from tests.support.configs import write_config


def plant(location: Path, host: str, pid: int, age: float) -> Path:
    """Write another run's lease, last renewed ``age`` seconds ago."""
    file = location / "_deltasink" / "lease"
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(json.dumps({"token": "other", "pipeline": "p", "host": host, "pid": pid}))
    stamp = time.time() - age
    os.utime(file, (stamp, stamp))
    return file


def test_a_live_lease_of_another_machine_is_refused_and_an_expired_one_taken(
        spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DELTASINK_FAULT", "lease_host=machine-b")
    location = tmp_path / "ckpt"
    plant(location, "machine-a", 12345, age=5)
    with pytest.raises(CheckpointError, match=r"already running.*host machine-a"):
        Lease(spark, f"file://{location}", "p").acquire()
    plant(location, "machine-a", 12345, age=LEASE_TTL + 5)
    lease = Lease(spark, f"file://{location}", "p")
    lease.acquire()  # expired: the run that held it is gone
    lease.verify(0)
    assert json.loads((location / "_deltasink" / "lease").read_text())["host"] == "machine-b"
    lease.release()
    assert not (location / "_deltasink" / "lease").exists()


def test_a_dead_process_on_this_host_releases_its_lease_at_once(
        spark: SparkSession, tmp_path: Path) -> None:
    location = tmp_path / "ckpt"
    proc = subprocess.Popen(["true"])
    proc.wait()  # a pid that has exited (a run killed with SIGKILL)
    plant(location, Lease(spark, str(location), "p").host, proc.pid, age=1)
    lease = Lease(spark, str(location), "p")
    lease.acquire()
    lease.verify(0)


def damage(spark: SparkSession, location: Path, how: str) -> Path:
    """Leave another machine's fresh lease as a kill in the middle of its write would."""
    file = location / "_deltasink" / "lease"
    body = json.dumps({"token": "other", "pipeline": "p", "host": "machine-a", "pid": 1})
    assert HadoopFS(spark).write_text(f"file://{file}", body, overwrite=True)  # with its .crc
    if how == "empty":
        file.write_text("")
    elif how == "cut short":
        file.write_text(body[: len(body) // 2])
    else:  # "stale checksum": whole JSON that no longer matches the .crc beside it
        file.write_text(body.replace("other", "other-run"))
    return file


@pytest.mark.parametrize("how", ["empty", "cut short", "stale checksum"])
def test_a_lease_left_damaged_by_a_kill_is_taken_over_at_once(
        spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    # Fresh (modified now) and from another machine: only its being unreadable frees it. Before,
    # every later start failed with "JSONDecodeError: Expecting value" (make chaos, seed 310309).
    monkeypatch.setenv("DELTASINK_FAULT", "lease_host=machine-b")
    location = tmp_path / "ckpt"
    file = damage(spark, location, how)
    lease = Lease(spark, f"file://{location}", "p")
    lease.acquire()
    lease.verify(0)
    assert json.loads(file.read_text())["token"] == lease.token


def test_a_run_whose_lease_became_unreadable_stops_before_committing(
        spark: SparkSession, tmp_path: Path) -> None:
    location = tmp_path / "ckpt"
    lease = Lease(spark, f"file://{location}", "p")
    lease.acquire()
    (location / "_deltasink" / "lease").write_text("")
    with pytest.raises(CheckpointError, match=r"lease file .* is unreadable.*"
                                              r"before committing batch 3"):
        lease.verify(3)
    lease.renew()  # not its own any more: left for the next run to take over
    assert (location / "_deltasink" / "lease").read_text() == ""


class RacingWriter:
    """A DataStreamWriter whose ``start`` fails as Spark's does for a second query racing it."""

    def __init__(self, error: str) -> None:
        self.error = error

    def start(self) -> None:
        raise RuntimeError(self.error)


def test_a_query_started_at_the_same_moment_is_a_checkpoint_error(
        spark: SparkSession, tmp_path: Path) -> None:
    lease = Lease(spark, str(tmp_path / "ckpt"), "p")
    race = ("An error occurred while calling o41250.start.\n: org.apache.spark."
            "SparkConcurrentModificationException: Multiple streaming queries are concurrently "
            "using metadata.")  # seen in make chaos: machine c started as the first run did
    with pytest.raises(CheckpointError, match=r"another run is starting a query on checkpoint "
                                              r".*ckpt at the same moment"):
        lease.start(RacingWriter(race))  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="something else"):
        lease.start(RacingWriter("something else"))  # type: ignore[arg-type]


@pytest.mark.chaos  # long: in `make chaos`, kept out of the 25-minute `make test`
def test_two_writers_on_one_checkpoint_from_two_machines(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    topic = f"lease-{uuid.uuid4().hex[:8]}"
    checkpoint = f"file://{lake}/_checkpoints/shared"
    path = write_config(lake, broker.bootstrap_servers, topic, checkpoint=checkpoint,
                        source={"max_records_per_batch": 50})
    cfg = load_config(path, environ={})
    sent = produce_events(broker.bootstrap_servers, topic, 900, duplicate_rate=0.1,
                          poison_rate=0.01, seed=31)
    lease_file = lake / "_checkpoints" / "shared" / "_deltasink" / "lease"
    first = subprocess.Popen([runner.DELTASINK, "run", "--config", str(path), "--no-validate"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        # Its lease taken and its query started (batch 0 planned): an intruder starting while
        # the first query creates the checkpoint's metadata is refused by Spark instead, which
        # test_a_query_started_at_the_same_moment_is_a_checkpoint_error covers.
        planned = lake / "_checkpoints" / "shared" / "offsets" / "0"
        while not (lease_file.exists() and f'"pid": {first.pid}' in lease_file.read_text()
                   and planned.exists()):
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "the first run never took its lease and started"
            time.sleep(0.5)
        # Machine b sees the lease: refused before anything starts.
        monkeypatch.setenv("DELTASINK_FAULT", "lease_host=machine-b")
        with pytest.raises(CheckpointError, match="already running on checkpoint"):
            run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)
        assert first.poll() is None, "the refusal must not disturb the running pipeline"
        # Machine c cannot see it (a store without atomic create): stopped before its commit.
        monkeypatch.setenv("DELTASINK_FAULT", "lease_host=machine-c,skip_lease_acquire")
        with pytest.raises(CheckpointError, match="another run is writing with checkpoint"):
            run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)
        monkeypatch.delenv("DELTASINK_FAULT")
        _out, err = first.communicate(timeout=600)
    finally:
        runner.killpg(first)
    # The first run either finished, or stopped with a one-line error (its checkpoint log was
    # written to by the intruder's query): never a traceback, never exit 0 with a loss.
    assert first.returncode in (0, 1), (first.returncode, err)
    assert "Traceback" not in err, err
    run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)
    verdict = check(spark, cfg, sent.event_ids, sum(sent.poison.values()))
    assert verdict.clean, verdict


@pytest.mark.chaos  # two cold runs: in `make chaos`; the unit cases above run in `make test`
def test_a_kill_in_the_middle_of_a_lease_renewal_does_not_block_the_next_run(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path) -> None:
    topic = f"renew-{uuid.uuid4().hex[:8]}"
    path = write_config(lake, broker.bootstrap_servers, topic,
                        source={"max_records_per_batch": 100})
    cfg = load_config(path, environ={})
    sent = produce_events(broker.bootstrap_servers, topic, 1500, duplicate_rate=0.1,
                          poison_rate=0.01, seed=47)
    killed = runner.run(path, fault="during_lease_renewal")
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert "injected fault at during_lease_renewal" in killed.stderr
    assert (Path(cfg.checkpoint) / "_deltasink" / "lease").read_text() == ""
    done = runner.run(path)
    assert done.returncode == 0, done.stderr[-2000:]
    verdict = check(spark, cfg, sent.event_ids, sum(sent.poison.values()))
    assert verdict.clean, verdict
