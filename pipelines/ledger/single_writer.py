"""Hold a checkpoint for one run: the local ``flock`` (local folders) and the Delta lease.

The lease itself (``pipelines/ledger/lease.py``) is the guard across machines; a local folder
also gets a ``flock``, which the kernel releases the moment a process dies.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from pyspark.sql import SparkSession

from pipelines.config.paths import is_local
from pipelines.errors import CheckpointError
from pipelines.ledger.lease import RENEW_EVERY, Lease
from pipelines.runtime.spark import own_session


@contextmanager
def _local_lock(location: str, pipeline: str) -> Iterator[IO[str] | None]:
    if not is_local(location):
        yield None
        return
    Path(location).mkdir(parents=True, exist_ok=True)
    with open(Path(location) / ".deltasink.lock", "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise CheckpointError(
                f"pipeline {pipeline} is already running on checkpoint {location} "
                "(another process holds its lock); wait for it to finish.") from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        yield handle


class Claim:
    """A run's hold on a checkpoint's lease, taken on a side thread while the run starts.

    The thread takes the lease (``Lease.acquire``: one cold ``UPDATE`` when the last run released
    it) while the caller goes on with work that needs no lease, then renews it every
    ``RENEW_EVERY`` seconds until it is released. :meth:`wait` is the point after which the caller
    holds it. Nothing of the lease's guarantee changes: what needs it (resuming, the query's
    start, every batch commit with its ``verify``) comes after :meth:`wait`.

    Args:
        spark: the session that takes and releases the lease (the client's side session).
        location: the checkpoint.
        pipeline: the pipeline name, for messages.
    """

    def __init__(self, spark: SparkSession, location: str, pipeline: str) -> None:
        self.lease = Lease(location, pipeline)
        self._spark = spark
        self._error: BaseException | None = None
        self._held = False
        self._decided = threading.Event()
        self._stop = threading.Event()
        self._releasing: threading.Thread | None = None
        self._thread = threading.Thread(target=self._hold, name="deltasink-lease", daemon=True)
        self._thread.start()

    def _hold(self) -> None:
        try:
            self.lease.acquire(self._spark)
            self._held = True
        except BaseException as exc:  # re-raised by wait(), on the caller's thread
            self._error = exc
        finally:
            self._decided.set()
        if not self._held:
            return
        renewing = own_session(self._spark)  # never a commit inside the caller's txn settings
        while not self._stop.wait(RENEW_EVERY):
            try:
                self.lease.renew(renewing)
            except Exception:  # a store hiccup: the next renewal or verify() decides
                continue

    def wait(self) -> Lease:
        """Wait until the lease is taken, and return it.

        Raises:
            CheckpointError: another run holds the checkpoint (or an error of the store).
        """
        self._decided.wait()
        if self._error is not None:
            raise self._error
        return self.lease

    def release_soon(self) -> None:
        """Release the lease on a side thread: the run has nothing left to write under it
        (its validation only reads, at a version it names). :meth:`close` waits for it."""
        if self._held and self._releasing is None:
            self._releasing = threading.Thread(target=self._release, daemon=True,
                                               name="deltasink-lease-release")
            self._releasing.start()

    def _release(self) -> None:
        self._stop.set()
        self._thread.join(RENEW_EVERY)
        try:
            self.lease.release(self._spark)
        except Exception:  # the lease then expires by itself
            pass

    def close(self) -> None:
        """Wait for the taking thread, and release the lease if it was taken."""
        self._decided.wait()
        self.release_soon()
        if self._releasing is not None:
            self._releasing.join()


@contextmanager
def claim_checkpoint(spark: SparkSession, location: str, pipeline: str) -> Iterator[Claim]:
    """Take the local lock (local folders) now and start taking the lease on a side thread;
    release both on exit.

    Raises:
        CheckpointError: another process of this host holds the local lock.
    """
    with _local_lock(location, pipeline):
        claim = Claim(spark, location, pipeline)
        try:
            yield claim
        finally:
            claim.close()


@contextmanager
def single_writer(spark: SparkSession, location: str, pipeline: str) -> Iterator[Lease]:
    """Hold the checkpoint for one operation: the local lock (local folders) and the lease.

    Raises:
        CheckpointError: another run holds the checkpoint.
    """
    with claim_checkpoint(spark, location, pipeline) as claim:
        yield claim.wait()
