"""Hold a checkpoint for one run: the local ``flock`` (local folders) and the lease.

The lease itself (``pipelines/ledger/lease.py``; on S3 with open-source Spark an S3 object,
``pipelines/ledger/s3_lease.py``) is the guard across machines; a local folder also gets a
``flock``, which the kernel releases the moment a process dies.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO

from pyspark.sql import SparkSession

from pipelines.config.paths import is_local
from pipelines.errors import CheckpointError
from pipelines.ledger.lease import RENEW_EVERY, TIDY_EVERY, Lease
from pipelines.ledger.s3_lease import lease_for
from pipelines.runtime.sessions import own_session


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
    """A run's hold on a checkpoint, taken on a side thread while the run starts.

    A side thread tries :meth:`Lease.take_free` at once (one ``UPDATE``; it creates nothing)
    while the caller goes on with checks that need no lease. Anything that would create (a new
    checkpoint's folder, lock file or lease table) or read and take over another run's lease
    waits for :meth:`wait`, so a run that fails its start-up checks leaves no checkpoint behind.
    Once taken, the same thread renews the lease every ``RENEW_EVERY`` seconds until it is
    released. Nothing of the lease's guarantee changes: what needs it (resuming, the query's
    start, every batch commit with its ``verify``) comes after :meth:`wait`.

    Args:
        spark: the session that takes and releases the lease (the client's side session).
        location: the checkpoint.
        pipeline: the pipeline name, for messages.
    """

    def __init__(self, spark: SparkSession, location: str, pipeline: str) -> None:
        self.lease = lease_for(spark, location, pipeline)
        self._spark = spark
        self._locks = ExitStack()  # the local flock, taken now if the folder exists
        # A new local folder: no lock, no lease to take before wait() (it would create them).
        self._early = not (is_local(location) and not Path(location).is_dir())
        if self._early:
            self._locks.enter_context(_local_lock(location, pipeline))
        self._error: BaseException | None = None
        self._held = self._cancelled = False
        self._go = threading.Event()  # wait() was called: the run may create and take over
        self._decided = threading.Event()
        self._stop = threading.Event()
        self._releasing: threading.Thread | None = None
        self._thread = threading.Thread(target=self._hold, name="deltasink-lease", daemon=True)
        self._thread.start()

    def _hold(self) -> None:
        try:
            taken = self._early and self.lease.take_free(self._spark)
            if not taken:
                self._go.wait()
                if self._cancelled:
                    return
                self.lease.take_over(self._spark)
            self._held = True
        except BaseException as exc:  # re-raised by wait(), on the caller's thread
            self._error = exc
        finally:
            self._decided.set()
        if not self._held:
            return
        renewing = own_session(self._spark)  # never a commit inside the caller's txn settings
        renewals = 0
        while not self._stop.wait(RENEW_EVERY):
            try:
                self.lease.renew(renewing)
                renewals += 1
                if renewals % TIDY_EVERY == 0:  # the table's replaced files (lease.TIDY_EVERY)
                    self.lease.tidy(renewing)
            except Exception:  # a store hiccup: the next renewal or verify() decides
                continue

    def wait(self) -> Lease:
        """Wait until the lease is taken, and return it.

        Raises:
            CheckpointError: another run holds the checkpoint (its lease, or on this host its
                lock), or an error of the store.
        """
        if not self._early and not self._go.is_set():  # the lock deferred by __init__
            try:
                self._locks.enter_context(_local_lock(self.lease.location, self.lease.pipeline))
            except BaseException:
                self._cancel()
                raise
        self._go.set()
        self._decided.wait()
        if self._error is not None:
            raise self._error
        return self.lease

    def _cancel(self) -> None:
        if not self._go.is_set():
            self._cancelled = True
            self._go.set()

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
        """Stop a claim :meth:`wait` never confirmed, release a lease that was taken, and drop
        the local lock."""
        self._cancel()  # a run that failed before wait() creates and takes over nothing
        self._decided.wait()
        self.release_soon()
        if self._releasing is not None:
            self._releasing.join()
        self._locks.close()


@contextmanager
def claim_checkpoint(spark: SparkSession, location: str, pipeline: str) -> Iterator[Claim]:
    """Start taking the checkpoint (:class:`Claim`); release it on exit.

    Raises:
        CheckpointError: another process of this host holds the local lock.
    """
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
