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


@contextmanager
def single_writer(spark: SparkSession, location: str, pipeline: str) -> Iterator[Lease]:
    """Hold the checkpoint for one run: the local lock (local folders) and the lease.

    Raises:
        CheckpointError: another run holds the checkpoint.
    """
    with _local_lock(location, pipeline):
        lease = Lease(location, pipeline)
        lease.acquire(spark)
        stop = threading.Event()
        renewing = own_session(spark)  # never a commit inside the caller's txn settings

        def renew() -> None:
            while not stop.wait(RENEW_EVERY):
                try:
                    lease.renew(renewing)
                except Exception:  # a store hiccup: the next renewal or verify() decides
                    continue

        thread = threading.Thread(target=renew, name="deltasink-lease", daemon=True)
        thread.start()
        try:
            yield lease
        finally:
            stop.set()
            thread.join(RENEW_EVERY)
            try:
                lease.release(spark)
            except Exception:  # the lease then expires by itself
                pass
