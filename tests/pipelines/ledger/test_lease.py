"""The single-writer guard across machines: the checkpoint lease, a one-row Delta table.

A second machine is simulated with the fault hook ``lease_host=<name>`` (the lease's host) and
a ``file:`` URI checkpoint, which the local ``flock`` does not guard: only the lease does.
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.config.loader import load_config
from pipelines.errors import CheckpointError, DeltasinkError
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import produce_events
from pipelines.ledger import lease_table
from pipelines.ledger.lease import LEASE_TTL, RENEW_EVERY, TIDY_EVERY, Lease
from pipelines.run import run_pipeline
from pipelines.runtime.sessions import own_session
from pipelines.sink.commit import TXN_APP_ID
from tests.support import runner
from tests.support.checker import check
from tests.support.configs import write_config


def plant(spark: SparkSession, location: str, host: str, pid: int, age: float) -> Lease:
    """Make another run hold the lease, last renewed ``age`` seconds ago."""
    other = Lease(location, "p", token=f"other-{uuid.uuid4().hex[:6]}", host=host, pid=pid)
    held = Lease(location, "p").read(spark)
    if held is not None and held.token:  # hand it over, as an expiry would
        spark.sql(f"UPDATE delta.`{other.table}` SET token = NULL")
    other.acquire(spark)
    spark.sql(f"UPDATE delta.`{other.table}` SET renewed_at = "
              f"current_timestamp() - make_interval(0, 0, 0, 0, 0, 0, {age})")
    return other


@pytest.mark.extended
def test_a_live_lease_of_another_machine_is_refused_and_an_expired_one_taken(
        spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    location = f"file://{tmp_path / 'ckpt'}"
    plant(spark, location, "machine-a", 12345, age=5)
    monkeypatch.setenv("DELTASINK_FAULT", "lease_host=machine-b")
    with pytest.raises(CheckpointError, match=r"already running.*host machine-a, pid 12345"):
        Lease(location, "p").acquire(spark)
    plant(spark, location, "machine-a", 12345, age=LEASE_TTL + 5)
    lease = Lease(location, "p")
    lease.acquire(spark)  # expired: the run that held it is gone
    lease.verify(spark, 0)
    held = lease.read(spark)
    assert held is not None and held.host == "machine-b" and held.token == lease.token
    lease.release(spark)
    released = lease.read(spark)
    assert released is not None and released.token is None


def test_a_lease_table_whose_creation_was_killed_is_created_over_its_leftovers(
        spark: SparkSession, tmp_path: Path) -> None:
    # What a SIGKILL during CREATE TABLE left in make test (2026-11-26): a log with no commit.
    lease = Lease(f"file://{tmp_path / 'ckpt'}", "p")
    log = Path(lease.table.removeprefix("file://")) / "_delta_log"
    (log / "_staged_commits").mkdir(parents=True)
    (log / ".00000000000000000000.json.0b6e2c1f-2f52-4c09-9bd6-3a1f0e9d2a77.tmp").touch()
    assert lease.read(spark) is None

    lease.acquire(spark)

    held = lease.read(spark)
    assert held is not None and held.token == lease.token
    rows = spark.sql(f"SELECT count(*) AS n FROM delta.`{lease.table}`").first()
    assert rows is not None and rows["n"] == 1  # one row: the slot is the lease's


def test_a_dead_process_on_this_host_releases_its_lease_at_once(
        spark: SparkSession, tmp_path: Path) -> None:
    location = str(tmp_path / "ckpt")
    proc = subprocess.Popen(["true"])
    proc.wait()  # a pid that has exited (a run killed with SIGKILL)
    plant(spark, location, Lease(location, "p").host, proc.pid, age=1)
    lease = Lease(location, "p")
    lease.acquire(spark)
    lease.verify(spark, 0)


def race(spark: SparkSession, location: str) -> None:
    """Three runs of three machines take the lease at ``location`` at once: exactly one wins,
    and each other one is refused in one line and may not commit."""
    runs = [Lease(location, "p", host=f"machine-{n}") for n in range(3)]
    outcome: dict[str, str] = {}

    def take(lease: Lease) -> None:
        try:
            lease.acquire(spark)
            outcome[lease.host] = "took"
        except CheckpointError as exc:
            outcome[lease.host] = str(exc)

    threads = [threading.Thread(target=take, args=(lease,)) for lease in runs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    winners = [lease for lease in runs if outcome.get(lease.host) == "took"]
    assert len(winners) == 1, outcome
    held = winners[0].read(spark)
    assert held is not None and held.token == winners[0].token
    for lease in runs:
        if lease is not winners[0]:
            assert "already running" in outcome[lease.host] or \
                "at the same moment" in outcome[lease.host], outcome
            with pytest.raises(CheckpointError):
                lease.verify(spark, 0)


def test_of_three_runs_taking_a_free_lease_at_once_exactly_one_wins(
        spark: SparkSession, tmp_path: Path) -> None:
    location = f"file://{tmp_path / 'ckpt'}"
    Lease(location, "p").acquire(spark)  # the table exists; then its holder dies elsewhere
    spark.sql(f"UPDATE delta.`{Lease(location, 'p').table}` SET token = NULL")
    race(spark, location)


def test_of_three_runs_creating_a_new_checkpoint_s_lease_at_once_exactly_one_wins(
        spark: SparkSession, tmp_path: Path) -> None:
    # The losers of the table's first commit see DELTA_PROTOCOL_CHANGED, then the winner's row.
    race(spark, f"file://{tmp_path / 'ckpt'}")


def test_a_new_checkpoint_s_lease_is_created_already_taken_in_one_commit(
        spark: SparkSession, tmp_path: Path) -> None:
    lease = Lease(str(tmp_path / "ckpt"), "p")
    lease.acquire(spark)

    history = spark.sql(f"DESCRIBE HISTORY delta.`{lease.table}`").collect()
    assert [(r["version"], r["operation"]) for r in history] == \
        [(0, "CREATE TABLE AS SELECT")]  # not CREATE, the row's MERGE and an UPDATE
    held = lease.read(spark)
    assert held is not None and held.token == lease.token and held.age_s < LEASE_TTL
    lease.verify(spark, 0)
    lease.release(spark)  # the created row is an ordinary one: released, then free to take
    released = lease.read(spark)
    assert released is not None and released.token is None
    Lease(str(tmp_path / "ckpt"), "p").acquire(spark)


def test_a_run_whose_lease_was_taken_over_stops_before_committing(
        spark: SparkSession, tmp_path: Path) -> None:
    location = f"file://{tmp_path / 'ckpt'}"
    lease = Lease(location, "p")
    lease.acquire(spark)
    other = plant(spark, location, "machine-a", 1, age=0)  # it stalled past its TTL meanwhile
    with pytest.raises(CheckpointError, match=r"another run is writing with checkpoint .*"
                                              r"host machine-a.*before committing batch 3"):
        lease.verify(spark, 3)
    lease.renew(spark)  # not its own any more: the renewal leaves the other run's lease alone
    held = lease.read(spark)
    assert held is not None and held.token == other.token


def test_the_lease_is_a_picklable_value_that_holds_no_session(tmp_path: Path) -> None:
    import pickle

    lease = Lease(str(tmp_path / "ckpt"), "p")
    copy = pickle.loads(pickle.dumps(lease))  # what the foreachBatch worker of a server gets
    assert copy == lease


def _commit_first_then_release(first: Path, intruder: Path, committed: Path,
                               stop: threading.Event) -> None:
    """Once the intruder is held in batch 0, let the first run commit it, then the intruder."""
    for ready, gate in ((intruder / "ready-0", first), (committed, intruder)):
        while not ready.exists():
            if stop.wait(0.2):
                return
        (gate / "go").touch()


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
    shared = Lease(checkpoint, cfg.name)
    # Both runs are held in their batch 0 (pause_in_batch), so the order is fixed: left to the
    # clock, the first run could finish before machine c started (seen once), or machine c,
    # which sees no lease, could run every batch while the first waited (the first then stops
    # at Spark's commit log instead: the same safety, a different loser).
    first_gate, intruder_gate = lake / "first", lake / "intruder"
    first_gate.mkdir()
    intruder_gate.mkdir()
    first = subprocess.Popen([runner.DELTASINK, "run", "--config", str(path), "--no-validate"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True,
                             env={**runner.cold_env(),
                                  "DELTASINK_FAULT": f"pause_in_batch={first_gate}@0"})
    committed = lake / "_checkpoints" / "shared" / "commits" / "0"
    stop = threading.Event()
    sequencer = threading.Thread(target=_commit_first_then_release, daemon=True,
                                 args=(first_gate, intruder_gate, committed, stop))
    try:
        deadline = time.monotonic() + 300
        # Its lease taken and its query in batch 0: an intruder starting while the first
        # query creates the checkpoint's metadata is refused by Spark instead, which
        # test_a_query_started_at_the_same_moment_is_a_checkpoint_error covers.
        while not ((held := shared.read(spark)) is not None and held.pid == first.pid
                   and (first_gate / "ready-0").exists()):
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "the first run never took its lease and started"
            time.sleep(0.5)
        # Machine b sees the lease: refused before anything starts.
        monkeypatch.setenv("DELTASINK_FAULT", "lease_host=machine-b")
        with pytest.raises(CheckpointError, match="already running on checkpoint"):
            run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)
        assert first.poll() is None, "the refusal must not disturb the running pipeline"
        # Machine c cannot see the lease (a store without atomic create): its query re-runs
        # batch 0, planned but not committed, and is held there while the first run commits it.
        # Its MERGE is then a txn skip, proven, and Spark's commit log stops it in one line.
        monkeypatch.setenv("DELTASINK_FAULT", "lease_host=machine-c,skip_lease_acquire,"
                                              f"pause_in_batch={intruder_gate}@0")
        sequencer.start()
        with pytest.raises(DeltasinkError, match="CONCURRENT_STREAM_LOG_UPDATE"):
            run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)
        monkeypatch.delenv("DELTASINK_FAULT")
        _out, err = first.communicate(timeout=600)
    finally:
        stop.set()
        (first_gate / "go").touch()
        (intruder_gate / "go").touch()
        runner.killpg(first)
    assert first.returncode == 0, err[-2000:]  # the intruder wrote nothing the first run needs
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
    # 30 batches: the run is still streaming at its first renewal, RENEW_EVERY (20 s) in.
    sent = produce_events(broker.bootstrap_servers, topic, 3000, duplicate_rate=0.1,
                          poison_rate=0.01, seed=47)
    killed = runner.run(path, fault="during_lease_renewal")
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert "injected fault at during_lease_renewal" in killed.stderr
    held = Lease(cfg.checkpoint, cfg.name).read(spark)
    assert held is not None and held.token  # the killed run's lease, still held
    done = runner.run(path)
    assert done.returncode == 0, done.stderr[-2000:]
    verdict = check(spark, cfg, sent.event_ids, sum(sent.poison.values()))
    assert verdict.clean, verdict


def test_the_lease_renews_in_a_session_whose_settings_are_its_own(spark: SparkSession) -> None:
    """A renewal commits while the caller may hold a txn (redrive, rewind): in the caller's
    session it would consume the txn, or find it half set (DELTA_INVALID_IDEMPOTENT_WRITES)."""
    renewing = own_session(spark)
    spark.conf.set(TXN_APP_ID, "deltasink:caller")
    try:
        assert renewing.conf.get(TXN_APP_ID, None) is None
    finally:
        spark.conf.unset(TXN_APP_ID)


def test_a_released_lease_is_taken_with_one_update(spark: SparkSession, tmp_path: Path) -> None:
    location = str(tmp_path / "ckpt")
    first = Lease(location, "p")
    first.acquire(spark)
    first.release(spark)
    table = f"delta.`{first.table}`"
    before = spark.sql(f"DESCRIBE HISTORY {table}").first()
    assert before is not None

    lease = Lease(location, "p")
    lease.acquire(spark)

    history = spark.sql(f"DESCRIBE HISTORY {table}").collect()
    assert [r["operation"] for r in history if r["version"] > before["version"]] == ["UPDATE"]
    held = lease.read(spark)
    assert held is not None and held.token == lease.token


@pytest.mark.extended
def test_tidying_the_lease_table_deletes_the_files_renewals_replaced_and_keeps_the_lease(
        spark: SparkSession, tmp_path: Path) -> None:
    """Issue 46: every renewal writes the row's file anew, so a run of weeks would leave one
    file per renewal in the checkpoint; the renewal thread's tidy (a VACUUM) bounds them. Here
    with no retention (the thread keeps ``TIDY_RETAIN_HOURS``), so the replaced files go now."""
    lease = Lease(str(tmp_path / "ckpt"), "p")
    lease.acquire(spark)
    for _ in range(4):
        lease.renew(spark)
    folder = Path(lease.table)

    def data_files() -> int:
        return sum(1 for _ in folder.glob("*.parquet"))

    assert data_files() >= 5  # the created row and four rewrites
    lease_table.tidy(spark, lease.table, 0)
    assert data_files() == 1
    held = lease.read(spark)
    assert held is not None and held.token == lease.token and held.age_s < LEASE_TTL
    lease.renew(spark)  # and the compare-and-set still works on the tidied table
    other = Lease(str(tmp_path / "ckpt"), "p")
    with pytest.raises(CheckpointError):
        other.acquire(spark)
    assert TIDY_EVERY * RENEW_EVERY == 3600  # an hour of renewals between two tidies
    lease.release(spark)
