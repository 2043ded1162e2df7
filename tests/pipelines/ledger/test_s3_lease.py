"""The checkpoint lease on S3 with open-source Spark: an object changed only by S3's conditional
writes (``pipelines/ledger/s3_lease.py``), against moto's S3 API on loopback (``s3_server``).

What these tests prove, and what they cannot:

* They prove **our protocol**: given a store whose conditional writes are atomic (each
  ``If-None-Match``/``If-Match`` checked and applied before the next request is seen), the lease
  lets exactly one of many simultaneous takers win, refuses a live holder, takes over a dead or
  expired one, and stops a run whose lease was taken. The ``s3_server`` fixture serves moto one
  request at a time, so its checks are atomic, as S3 documents its own to be.
* They cannot prove **S3's own atomicity**: that is AWS's guarantee, and no loopback server
  tests it. Nor would they be meaningful against moto's own threaded server, which checks the
  conditions without a lock (two writes at once could both pass there).

No Spark here: the lease reads and writes with boto3 (the session argument is unused), so
these tests start no JVM. The run that uses it end to end: ``test_s3_two_drivers.py``.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pipelines.errors import CheckpointError, EnvironmentSetupError
from pipelines.ledger import lease as lease_module
from pipelines.ledger.lease import Lease
from pipelines.ledger.s3_lease import S3Lease
from pipelines.storage import conditional
from pipelines.storage.conditional import S3Place
from tests.support.s3 import REGION, S3Server, client_env

#: How many runs race in each round of the parallel tests (boto3's pool holds 10 connections).
RACERS = 8
ROUNDS = 2
NO_SPARK: Any = None  # the S3 lease never uses its session argument


@pytest.fixture
def place(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> S3Place:
    """The server's place, and its credentials in this process's environment (AWS's chain)."""
    for name, value in client_env(s3_server.endpoint).items():
        monkeypatch.setenv(name, value)
    return S3Place(s3_server.endpoint, REGION, path_style=True)


@pytest.fixture
def checkpoint(s3_server: S3Server) -> str:
    """A fresh checkpoint URI in the test bucket."""
    return f"s3a://{s3_server.bucket('lease-tests')}/ckpt-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def dead_pid() -> Iterator[int]:
    """The pid of a process of this host that has ended."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    yield proc.pid


def race(runs: list[S3Lease], attempt: Callable[[S3Lease], object]) -> list[S3Lease]:
    """Run ``attempt`` for every run at the same moment (a barrier); the runs it did not fail
    with a CheckpointError for."""
    gate = threading.Barrier(len(runs))
    won: list[S3Lease] = []
    errors: list[BaseException] = []

    def one(run: S3Lease) -> None:
        gate.wait()
        try:
            if attempt(run) is not False:
                won.append(run)
        except CheckpointError:
            pass
        except BaseException as exc:  # anything else fails the test
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(run,)) for run in runs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors, errors
    return won


def test_of_many_runs_taking_the_lease_at_once_exactly_one_wins_each_round(
        place: S3Place, checkpoint: str, dead_pid: int) -> None:
    """Our compare-and-set under contention, on an atomic conditional-write store (see the
    module docstring for what this does and does not prove). Each round, RACERS runs of other
    machines take the lease at one barrier: a new checkpoint's (``If-None-Match``), a released
    one's, and a dead holder's (``If-Match`` on the version each read). Exactly one wins, and
    the object names it."""
    kinds = ("new", "released", "dead holder") * ROUNDS
    for round_, kind in enumerate(kinds):
        location = f"{checkpoint}/r{round_}"
        if kind == "dead holder":  # a run of this host that died holding it
            S3Lease(location, "p", host="this-host", pid=dead_pid, place=place).acquire(NO_SPARK)
        elif kind == "released":
            first = S3Lease(location, "p", host="machine-0", place=place)
            first.acquire(NO_SPARK)
            first.release(NO_SPARK)
        host = "this-host" if kind == "dead holder" else None
        runs = [S3Lease(location, "p", host=host or f"machine-{n}", place=place)
                for n in range(RACERS)]
        won = race(runs, lambda run: run.acquire(NO_SPARK))
        assert len(won) == 1, f"round {round_} ({kind}): {len(won)} winners"
        held = won[0].read(NO_SPARK)
        assert held is not None and held.token == won[0].token, kind
        for run in runs:
            if run is not won[0]:
                with pytest.raises(CheckpointError, match="another run is writing"):
                    run.verify(NO_SPARK, round_)
        won[0].verify(NO_SPARK, round_)


def test_of_many_conditional_writes_of_one_version_exactly_one_is_applied(
        place: S3Place, checkpoint: str) -> None:
    """The primitive itself: RACERS ``If-Match`` writes of the version all read, then RACERS
    ``If-None-Match`` creations of one key; one of each succeeds, several rounds."""
    for round_ in range(ROUNDS):
        url = f"{checkpoint}/cas-{round_}.json"
        runs = [S3Lease(url, "p", place=place) for _ in range(RACERS)]
        created = race(runs, lambda run: conditional.create(place, url, {"token": run.token}))
        assert len(created) == 1
        version = conditional.get(place, url)
        assert version is not None and version.body["token"] == created[0].token
        replaced = race(runs, lambda run: conditional.replace(
            place, url, {"token": run.token}, version.etag))
        assert len(replaced) == 1
        after = conditional.get(place, url)
        assert after is not None and after.body["token"] == replaced[0].token


def test_a_live_holder_is_refused_and_an_expired_one_taken_by_s3s_clock(
        place: S3Place, checkpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    first = S3Lease(checkpoint, "p", host="machine-a", pid=12345, place=place)
    first.acquire(NO_SPARK)
    held = first.read(NO_SPARK)
    assert held is not None and held.token == first.token and 0 <= held.age_s < 5
    second = S3Lease(checkpoint, "p", host="machine-b", place=place)
    with pytest.raises(CheckpointError, match=r"already running.*host machine-a, pid 12345"):
        second.acquire(NO_SPARK)
    monkeypatch.setattr(lease_module, "LEASE_TTL", 1.0)  # the age is S3's Date - LastModified
    time.sleep(2.2)
    second.acquire(NO_SPARK)
    now = second.read(NO_SPARK)
    assert now is not None and now.token == second.token and now.host == "machine-b"


def test_a_dead_holder_of_this_host_is_taken_over_at_once_and_its_run_stops(
        place: S3Place, checkpoint: str, dead_pid: int) -> None:
    gone = S3Lease(checkpoint, "p", pid=dead_pid, place=place)
    gone.acquire(NO_SPARK)
    gone.verify(NO_SPARK, 0)
    taker = S3Lease(checkpoint, "p", place=place)
    taker.acquire(NO_SPARK)  # same host, its pid gone: no TTL to wait
    with pytest.raises(CheckpointError, match=rf"pid {taker.pid}.*"
                                              "stopped before committing batch 7"):
        gone.verify(NO_SPARK, 7)
    gone.renew(NO_SPARK)  # the old run's renewal never overwrites the new holder
    gone.release(NO_SPARK)
    held = taker.read(NO_SPARK)
    assert held is not None and held.token == taker.token
    taker.verify(NO_SPARK, 7)


def test_renew_rewrites_and_release_frees_the_lease_for_one_conditional_take(
        place: S3Place, checkpoint: str, s3_server: S3Server) -> None:
    lease = S3Lease(checkpoint, "p", host="machine-a", place=place)
    assert not lease.take_free(NO_SPARK)  # a new checkpoint: take_free creates nothing
    assert conditional.get(place, lease.table) is None
    lease.acquire(NO_SPARK)
    before = lease.read(NO_SPARK)
    lease.renew(NO_SPARK)
    after = lease.read(NO_SPARK)
    assert before is not None and after is not None
    assert after.token == lease.token and after.tag != before.tag
    lease.release(NO_SPARK)
    freed = lease.read(NO_SPARK)
    assert freed is not None and freed.token is None
    mark = s3_server.mark()
    nxt = S3Lease(checkpoint, "p", host="machine-b", place=place)
    assert nxt.take_free(NO_SPARK)
    assert s3_server.requests(mark, bucket="lease-tests") == {"GET": 1, "PUT": 1}
    assert lease.table.endswith("/_deltasink/lease.json")


def test_the_s3_lease_is_a_picklable_value_that_holds_no_client(place: S3Place) -> None:
    lease = S3Lease("s3a://b/ckpt", "p", place=place)
    again = pickle.loads(pickle.dumps(lease))
    assert again == lease and isinstance(again, Lease)
    assert set(vars(lease)) == {"location", "pipeline", "token", "host", "pid", "place", "_seen"}
    assert lease._seen == {}  # the Delta lease's hint (versions), never a client


def test_without_boto3_the_lease_says_which_extra_to_install(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)
    conditional._client.cache_clear()
    try:
        with pytest.raises(EnvironmentSetupError, match=r"pip install deltasink\[s3\]"):
            S3Lease("s3a://b/ckpt", "p", place=S3Place("http://127.0.0.1:9")).read(NO_SPARK)
    finally:
        conditional._client.cache_clear()
