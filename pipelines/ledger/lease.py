"""One writer per checkpoint, across processes and machines: a lease held in a small Delta table.

``flock`` does not cross machines and may not work on FUSE mounts such as UC Volumes, and a Spark
Connect client cannot reach the checkpoint's store at all except through Spark. So the guard is a
one-row Delta table inside the checkpoint (``<checkpoint>/_deltasink/lease_table``), read and
written with Delta SQL by whichever session runs: the client's, or the ``foreachBatch`` worker's.
Delta's commit protocol makes every change of the row an atomic compare-and-set on every store
Delta supports: two runs that change it from the same version cannot both commit (the loser's
UPDATE fails with a concurrent-modification conflict).

* **acquire:** read the row. A live lease of another run is refused: one held by a process of
  this host that is still alive, or one renewed less than ``LEASE_TTL`` ago by the Spark
  server's clock (``current_timestamp()``, evaluated where the row is written). Otherwise an
  UPDATE that matches only the token just read takes it; a conflict means another run took it
  at the same moment. A new checkpoint's table is created already holding this run's token
  (one ``CREATE TABLE IF NOT EXISTS ... AS SELECT``), and the row is read back before the run
  goes on: two creations at once conflict, and ``IF NOT EXISTS`` may create nothing.
* **renew:** a daemon thread of the client updates ``renewed_at`` every ``RENEW_EVERY`` seconds,
  while the token is still its own.
* **verify:** before every Delta commit the sink reads the row again (in the worker, under Spark
  Connect) and stops, before committing, if the token is not its own.
* **release:** the token is cleared when the run ends; a crashed run's lease is taken over at once
  on the same host (its pid is gone), or after ``LEASE_TTL`` from another machine.

A commit is all or nothing, so no lease is ever left half written. The table keeps one hour of
log (``delta.logRetentionDuration``): a renewal every 20 s does not grow it without bound.

A run holds it through ``pipelines/ledger/single_writer.py``, which adds the local ``flock``.
The table's SQL, its creation and the row as read are in ``pipelines/ledger/lease_table.py``.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.streaming.readwriter import DataStreamWriter

from pipelines import faults
from pipelines.errors import CheckpointError
from pipelines.ledger import lease_table
from pipelines.ledger.lease_table import Holder, conflict, missing, quote, sql_name
from pipelines.runtime.processes import pid_alive

#: A lease not renewed for this long (by the Spark server's clock) belongs to a run that is gone.
LEASE_TTL = 60.0
#: Three renewals per ``LEASE_TTL``: two in a row may fail before another run may take it. Each
#: is a Delta ``UPDATE`` (a scan, a rewrite and a commit) on the driver's CPU, beside the batches.
RENEW_EVERY = 20.0
#: The tokens of the leases a run of this process holds now. A lease row naming this host and
#: this process is live only if its token is here: a run of this process that ended without
#: clearing its row (its release failed, or it stopped before its lease was confirmed) does not
#: block the next run of the same process (a notebook's, a group's, a test's) for LEASE_TTL.
#: Process state by nature, as the pid it stands in for; only ever added to before the UPDATE
#: that takes a lease, so no reader of this process sees a lease it holds as dead.
_HELD_HERE: set[str] = set()
@dataclass(frozen=True)
class Lease:
    """This run's claim on a checkpoint. Holds no session: it is picklable, so the
    ``foreachBatch`` worker of a Spark Connect server can verify it with its own session.

    Attributes:
        location: the checkpoint.
        pipeline: the pipeline name, for messages.
        token: this run's token.
        host: this process's host name.
        pid: this process's id.
    """

    location: str
    pipeline: str
    token: str = field(default_factory=lambda: uuid.uuid4().hex)
    host: str = field(default_factory=lambda: faults.setting("lease_host")
                      or socket.gethostname())
    pid: int = field(default_factory=os.getpid)

    @property
    def table(self) -> str:
        """Where the lease lives (a Delta table's folder)."""
        return f"{self.location.rstrip('/')}/_deltasink/lease_table"

    def read(self, spark: SparkSession) -> Holder | None:
        """The lease row, or None when there is no lease table yet."""
        return lease_table.read(spark, self.table)

    def _create_taken(self, spark: SparkSession) -> bool:
        """Create the lease table with its one row already holding this run's token: one
        commit, where creating the table and taking its lease apart take three (``CREATE``,
        the row's ``MERGE``, the ``UPDATE``).

        ``IF NOT EXISTS`` creates nothing when another run created the table first, and two
        creations at once conflict on its first commit: so the row is read back, and only this
        run's token in it means this run holds the lease. Leftovers of a killed creation (a log
        without a commit) are left to :func:`~pipelines.ledger.lease_table.ensure`.

        Returns:
            Whether this run created the table and now holds the lease.
        """
        return self._claim(lambda: self._create_and_read(spark))

    def _create_and_read(self, spark: SparkSession) -> bool:
        holder = (f"{quote(self.token)} AS token, {quote(self.pipeline)} AS pipeline, "
                  f"{quote(self.host)} AS host, CAST({self.pid} AS BIGINT) AS pid, "
                  "current_timestamp() AS renewed_at")
        if not lease_table.create_held(spark, self.table, holder):
            return False
        held = self.read(spark)
        return held is not None and held.token == self.token

    def _live(self, held: Holder) -> bool:
        if held.host == self.host and held.pid == os.getpid():  # this process: it knows
            return held.token in _HELD_HERE
        if held.host == self.host:
            return pid_alive(held.pid)
        return held.age_s < LEASE_TTL

    @staticmethod
    def _describe(held: Holder) -> str:
        return (f"host {held.host}, pid {held.pid}, lease renewed "
                f"{max(0.0, held.age_s):.0f}s ago")

    def acquire(self, spark: SparkSession) -> None:
        """Take the lease, or refuse because another run holds it: :meth:`take_free`, else
        :meth:`take_over`.

        Raises:
            CheckpointError: another live run holds the lease, or took it at the same moment.
        """
        if not self.take_free(spark):
            self.take_over(spark)

    def take_free(self, spark: SparkSession) -> bool:
        """Take a lease the last run released, with one ``UPDATE`` that matches a free row.

        Creates nothing: with no lease table (a new checkpoint) it only answers False.

        Returns:
            Whether this run now holds the lease.
        """
        if faults.setting("skip_lease_acquire"):
            return True  # test hook: a writer on a store where it cannot see the other's lease
        return self._take(spark, "token IS NULL")

    def take_over(self, spark: SparkSession) -> None:
        """Read the row (creating the table and row if missing), refuse a live holder, and take
        a free, dead or expired lease with an ``UPDATE`` that matches only the token just read.

        Raises:
            CheckpointError: another live run holds the lease, or took it at the same moment.
        """
        if faults.setting("skip_lease_acquire"):
            return
        held = self.read(spark)
        if held is None:  # a new checkpoint: create the table already holding this run's token
            if self._create_taken(spark):
                return
            held = self.read(spark)
        if held is None:  # leftovers of a killed creation, or a table without its row
            lease_table.ensure(spark, self.table)
            held = self.read(spark)
        seen = held.token if held is not None else None
        if held is not None and seen and seen != self.token and self._live(held):
            raise CheckpointError(
                f"pipeline {self.pipeline} is already running on checkpoint "
                f"{self.location} ({self._describe(held)}); wait for it to finish. A run that "
                f"died elsewhere releases it {LEASE_TTL:.0f}s after its last renewal.")
        if not self._take(spark, "token IS NULL" if seen is None else f"token = {quote(seen)}"):
            raise CheckpointError(
                f"pipeline {self.pipeline}: another run took checkpoint {self.location} at "
                "the same moment; wait for it to finish.")

    def _take(self, spark: SparkSession, matches: str) -> bool:
        """Set this run's token on the row if it ``matches``; whether this run now holds it.

        Delta's ``UPDATE`` is a compare-and-set: it commits only if no other commit changed the
        row since it read it (else a concurrent-modification conflict), and it reports the rows
        it changed, so one row changed means the lease is this run's. A missing table or a
        conflict is "not taken".
        """
        return self._claim(lambda: self._update_token(spark, matches))

    def _claim(self, attempt: Callable[[], bool]) -> bool:
        """Run ``attempt`` (a write that may give this run the lease; whether it did) with the
        token in ``_HELD_HERE`` first, so no run of this process sees the lease unheld, and out
        again unless it was taken."""
        _HELD_HERE.add(self.token)
        taken = False
        try:
            taken = attempt()
        finally:
            if not taken:
                _HELD_HERE.discard(self.token)
        return taken

    def _update_token(self, spark: SparkSession, matches: str) -> bool:
        try:
            rows = spark.sql(
                f"UPDATE {sql_name(self.table)} SET token = {quote(self.token)}, "
                f"pipeline = {quote(self.pipeline)}, host = {quote(self.host)}, "
                f"pid = {self.pid}, renewed_at = current_timestamp() "
                f"WHERE slot = 0 AND {matches}").collect()
        except Exception as exc:
            if missing(exc) or conflict(exc):
                return False
            raise
        counted = rows[0].asDict().get("num_affected_rows") if rows else None
        if counted is not None:
            return int(counted) == 1
        now = self.read(spark)  # a Delta that does not report the rows it changed
        return now is not None and now.token == self.token

    def renew(self, spark: SparkSession) -> None:
        """Refresh ``renewed_at`` if the lease is still ours (called by the renewal thread)."""
        faults.maybe_crash("during_lease_renewal")
        spark.sql(f"UPDATE {sql_name(self.table)} SET renewed_at = current_timestamp() "
                  f"WHERE slot = 0 AND token = {quote(self.token)}").collect()

    def verify(self, spark: SparkSession, batch_id: int) -> None:
        """Stop before committing ``batch_id`` unless the lease is still this run's.

        Args:
            spark: any session that reaches the checkpoint (the batch's, in a worker).
            batch_id: the batch (or txn version) about to commit, for the message.

        Raises:
            CheckpointError: another run holds the lease (or it is gone).
        """
        if faults.setting("skip_lease_acquire"):
            return
        held = self.read(spark)
        if held is not None and held.token == self.token:
            return
        who = self._describe(held) if held is not None and held.token else "no lease is held"
        raise CheckpointError(
            f"pipeline {self.pipeline}: another run is writing with checkpoint "
            f"{self.location} ({who}); this run stopped before committing batch {batch_id}, "
            "so nothing of that batch was committed by it. Run one writer per checkpoint.")

    def start(self, writer: DataStreamWriter) -> StreamingQuery:
        """Start ``writer``'s streaming query on the checkpoint this lease holds.

        A writer that could not see the lease and starts at the same moment races this query
        for the checkpoint's ``metadata`` file, and Spark refuses the loser. That is a second
        writer like any other: a ``CheckpointError``, not a stack trace.

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

    def release(self, spark: SparkSession) -> None:
        """Clear the token if it is still ours. Cleared or not (a full disk, a store that
        fails), this process no longer runs under it, so its next run may take it at once."""
        try:
            spark.sql(f"UPDATE {sql_name(self.table)} SET token = NULL, renewed_at = NULL "
                      f"WHERE slot = 0 AND token = {quote(self.token)}").collect()
        finally:
            _HELD_HERE.discard(self.token)
