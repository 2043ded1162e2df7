"""One writer per checkpoint, across processes and machines: a lease file inside the checkpoint.

``flock`` does not cross machines and may not work on FUSE mounts such as UC Volumes, so the
single-writer guard is a file that Spark's own FileSystem API reads and writes
(``<checkpoint>/_deltasink/lease``):

* **acquire:** create the lease with ``overwrite=False`` (atomic on HDFS, local disks and ADLS
  Gen2), then read it back. A live lease of another run is refused: one held by a process of this
  host that is still alive, or one whose file the store modified less than ``LEASE_TTL`` ago.
* **renew:** a daemon thread rewrites the lease every ``RENEW_EVERY`` seconds.
* **verify:** before every Delta commit the sink reads the lease again and stops, before
  committing, if the lease is not its own. On a store where two writers could both believe they
  created the lease, at most one of them finds its own token there when it commits.
* **release:** the lease is deleted when the run ends; a crashed run's lease is taken over at
  once on the same host (its pid is gone), or after ``LEASE_TTL`` from another machine.
* **damaged:** a kill between a write's create and its close leaves the lease empty, half
  written or out of step with its ``.crc``. A lease still unreadable after ``_read``'s retries
  (longer than any write takes) has no live holder: a holder rewrites only a lease it can read
  as its own, and ``verify`` stops it before any commit once it cannot. Such a lease is taken
  over at once, like a dead pid's.

Local folders also keep the ``flock``: it is released by the kernel the moment a process dies.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.streaming.readwriter import DataStreamWriter

from pipelines import faults
from pipelines.checkpoint import is_local
from pipelines.errors import CheckpointError
from pipelines.runtime.hadoop import HadoopFS
from pipelines.runtime.processes import pid_alive

#: A lease not renewed for this long (by the store's clock) belongs to a run that is gone.
LEASE_TTL = 60.0
RENEW_EVERY = 10.0
#: What ``Lease._read`` returns for a lease file that stays empty, cut short or corrupt.
UNREADABLE: dict[str, Any] = {"unreadable": True}


@dataclass
class Lease:
    """This run's claim on a checkpoint.

    Attributes:
        spark: the session (its Hadoop configuration reaches the checkpoint's store).
        location: the checkpoint.
        pipeline: the pipeline name, for messages.
    """

    spark: SparkSession
    location: str
    pipeline: str
    token: str = field(default_factory=lambda: uuid.uuid4().hex)
    host: str = field(default_factory=lambda: faults.setting("lease_host")
                      or socket.gethostname())

    @property
    def file(self) -> str:
        """Where the lease lives."""
        return f"{self.location.rstrip('/')}/_deltasink/lease"

    def _read(self, attempts: int = 6) -> dict[str, Any] | None:
        """The lease's content, None when there is no lease file, or ``UNREADABLE``.

        A renewal rewrites the file in place, so a read may meet it empty, half written or
        with a stale checksum: such a read is retried for 1.5 seconds (a write takes
        milliseconds), never taken for "no lease". A lease still unreadable then was left
        damaged by a killed writer, and ``UNREADABLE`` (no token, no holder) says so.
        """
        for attempt in range(attempts):
            try:
                text = HadoopFS(self.spark).read_text(self.file)
                if text is None:
                    return None
                body = json.loads(text)
                if isinstance(body, dict):
                    return body
            except Exception:  # ValueError, or a ChecksumException from the store
                pass
            if attempt < attempts - 1:
                time.sleep(0.1 * (attempt + 1))
        return UNREADABLE

    def _body(self) -> str:
        return json.dumps({"token": self.token, "pipeline": self.pipeline, "host": self.host,
                           "pid": os.getpid(), "renewed_at": time.time()})

    def _holder(self, body: dict[str, Any]) -> str:
        age = time.time() * 1000 - (HadoopFS(self.spark).modified_ms(self.file) or 0)
        return (f"host {body.get('host')}, pid {body.get('pid')}, lease renewed "
                f"{max(0.0, age / 1000):.0f}s ago")

    def _live(self, body: dict[str, Any]) -> bool:
        if body is UNREADABLE:
            return False  # no holder can verify it: see "damaged" in the module's docstring
        if body.get("host") == self.host:
            return pid_alive(int(body.get("pid") or 0))
        modified = HadoopFS(self.spark).modified_ms(self.file)
        return modified is not None and time.time() * 1000 - modified < LEASE_TTL * 1000

    def acquire(self) -> None:
        """Take the lease, or refuse because another run holds it.

        Raises:
            CheckpointError: another live run holds the lease.
        """
        if faults.setting("skip_lease_acquire"):
            return  # test hook: a writer on a store where it cannot see the other's lease
        fs = HadoopFS(self.spark)
        held = self._read()
        if held is not None and held.get("token") != self.token:
            if self._live(held):
                raise CheckpointError(
                    f"pipeline {self.pipeline} is already running on checkpoint "
                    f"{self.location} ({self._holder(held)}); wait for it to finish. A run that "
                    f"died elsewhere releases it {LEASE_TTL:.0f}s after its last renewal.")
            fs.delete(self.file)
        if not fs.write_text(self.file, self._body(), overwrite=False) or \
                (self._read() or {}).get("token") != self.token:
            raise CheckpointError(
                f"pipeline {self.pipeline}: another run took checkpoint {self.location} at "
                "the same moment; wait for it to finish.")

    def renew(self) -> None:
        """Rewrite the lease if it is still ours (called by the renewal thread)."""
        if (self._read() or {}).get("token") == self.token:
            if faults.armed("during_lease_renewal"):
                # the state a kill between the rewrite's create and its close leaves
                HadoopFS(self.spark).write_text(self.file, "", overwrite=True)
                faults.maybe_crash("during_lease_renewal")
            HadoopFS(self.spark).write_text(self.file, self._body(), overwrite=True)

    def verify(self, batch_id: int) -> None:
        """Stop before committing ``batch_id`` unless the lease is still this run's.

        An unreadable lease is not this run's: another run may take it over at any moment.

        Raises:
            CheckpointError: another run holds the lease (or it is gone).
        """
        held = self._read()
        if held is not None and held.get("token") == self.token:
            return
        if held is UNREADABLE:
            why = (f"its lease file {self.file} is unreadable, so another run may take the "
                   "checkpoint over")
        else:
            who = self._holder(held) if held else "no lease is held"
            why = f"another run is writing with checkpoint {self.location} ({who})"
        raise CheckpointError(
            f"pipeline {self.pipeline}: {why}; this run stopped before committing batch "
            f"{batch_id}, so nothing of that batch was committed by it. Run one writer per "
            "checkpoint.")

    def start(self, writer: DataStreamWriter) -> StreamingQuery:
        """Start ``writer``'s streaming query on the checkpoint this lease holds.

        A writer that could not see the lease (a store without atomic create) and starts at the
        same moment races this query for the checkpoint's ``metadata`` file, and Spark refuses
        the loser. That is a second writer like any other: a ``CheckpointError``, not a stack
        trace.

        Raises:
            CheckpointError: another query started on the checkpoint at the same moment.
        """
        try:
            return writer.start()
        except Exception as exc:
            if "SparkConcurrentModificationException" not in str(exc) and \
                    "concurrently using" not in str(exc):
                raise
            raise CheckpointError(
                f"pipeline {self.pipeline}: another run is starting a query on checkpoint "
                f"{self.location} at the same moment, and Spark refused this one before it read "
                "anything. Run one writer per checkpoint.") from None

    def release(self) -> None:
        """Delete the lease if it is still ours."""
        if (self._read() or {}).get("token") == self.token:
            HadoopFS(self.spark).delete(self.file)


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
        lease = Lease(spark, location, pipeline)
        lease.acquire()
        stop = threading.Event()

        def renew() -> None:
            while not stop.wait(RENEW_EVERY):
                try:
                    lease.renew()
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
                lease.release()
            except Exception:  # the lease then expires by itself
                pass
