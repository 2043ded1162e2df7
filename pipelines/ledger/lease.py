"""One writer per checkpoint, across processes and machines: a lease held inside the checkpoint.

``flock`` does not cross machines and may not work on FUSE mounts such as UC Volumes, and a Spark
Connect client cannot reach the checkpoint's store at all except through Spark. So the guard is a
one-row Delta table inside the checkpoint (``<checkpoint>/_deltasink/lease_table``), read and
written with Delta SQL by whichever session runs: the client's, or the ``foreachBatch`` worker's.
Every change of the row is a compare-and-set as long as a Delta commit is put-if-absent: two runs
that change it from the same version cannot both commit (the loser's UPDATE conflicts). On S3
with open-source Spark it is not, so there the lease is an S3 object changed with S3's own
conditional writes (``S3Lease``, ``pipelines/ledger/s3_lease.py``); this class decides for both.

* **acquire:** read the lease. A live lease of another run is refused: one held by a process of
  this host that is still alive, or one renewed less than ``LEASE_TTL`` ago by the store's clock
  (the Spark server's ``current_timestamp()``; S3's). Otherwise a compare-and-set against the
  lease just read takes it; a lost one means another run took it at the same moment. A new
  checkpoint's lease is created already holding this run's token, and only a run whose token it
  holds afterwards goes on.
* **renew:** a daemon thread of the client renews it every ``RENEW_EVERY`` seconds, while the
  token is still its own.
* **verify:** before every Delta commit the sink checks the lease again (in the worker, under
  Spark Connect) and stops, before committing, if the token is not its own: from the lease
  table's newest commit file, with no Spark job (:mod:`pipelines.ledger.lease_log`), else by
  reading the row.
* **release:** the token is cleared when the run ends; a crashed run's lease is taken over at once
  on the same host (its pid is gone), or after ``LEASE_TTL`` from another machine.

A write of the lease is all or nothing. A run holds it through ``single_writer.py``, which adds
the local ``flock``; the Delta table's SQL, creation and row are in ``lease_table.py``.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from pyspark.sql import SparkSession

from pipelines import faults
from pipelines.errors import CheckpointError
from pipelines.ledger import lease_log, lease_table
from pipelines.ledger.lease_table import Holder
from pipelines.runtime.processes import pid_alive

#: A lease not renewed for this long (by the Spark server's clock) belongs to a run that is gone.
LEASE_TTL = 60.0
#: Three renewals per ``LEASE_TTL``: two in a row may fail before another run may take it. Each
#: is a Delta ``UPDATE`` (a scan, a rewrite and a commit) on the driver's CPU, beside the batches.
RENEW_EVERY = 20.0
#: Every this many renewals (an hour's), the renewal thread deletes the lease table's replaced
#: files (:meth:`Lease.tidy`). Each renewal is an ``UPDATE`` that writes the row's file anew;
#: with the table's one-hour log retention this keeps the lease table at about two hours of
#: renewals (~360 commit files and ~360 data files) however long a run lasts.
TIDY_EVERY = 180
#: Hours of replaced lease files kept (the table's ``delta.deletedFileRetentionDuration``).
TIDY_RETAIN_HOURS = 1
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
    _seen: dict[str, int] = field(default_factory=dict, compare=False, repr=False)  # lease_log hint

    @property
    def table(self) -> str:
        """Where the lease lives (a Delta table's folder)."""
        return f"{self.location.rstrip('/')}/_deltasink/lease_table"

    def read(self, spark: SparkSession) -> Holder | None:
        """The lease row, or None when there is no lease table yet."""
        return lease_table.read(spark, self.table)

    # Where the lease lives (the Delta table): S3Lease overrides table, read and these five.

    def _create(self, spark: SparkSession) -> bool:
        """Create the lease already holding this run's token; whether this run now holds it.

        One commit (``CREATE TABLE IF NOT EXISTS ... AS SELECT``). It creates nothing when
        another run created the table first, and two creations at once conflict: so the row is
        read back. A killed creation's leftovers (a log without a commit) are left to _ensure.
        """
        holder = lease_table.holder_select(self.token, self.pipeline, self.host, self.pid)
        if not lease_table.create_held(spark, self.table, holder):
            return False
        held = self.read(spark)
        return held is not None and held.token == self.token

    def _ensure(self, spark: SparkSession) -> None:
        """Make the lease exist, free, unless it does (after a creation that was cut short)."""
        lease_table.ensure(spark, self.table)

    def _set_token(self, spark: SparkSession, seen: Holder | None) -> bool:
        """Make this run the holder if the lease is still as ``seen`` (None: a free lease, not
        read); whether it did. A compare-and-set: of runs that saw one lease, one at most wins.
        Creates nothing."""
        return lease_table.update_token(spark, self.table,
                                        (self.token, self.pipeline, self.host, self.pid),
                                        seen.token if seen is not None else None)

    def renew(self, spark: SparkSession) -> None:
        """Refresh the lease if it is still ours (called by the renewal thread)."""
        faults.maybe_crash("during_lease_renewal")
        lease_table.renew(spark, self.table, self.token)

    def tidy(self, spark: SparkSession) -> None:
        """Delete the lease table's files replaced more than ``TIDY_RETAIN_HOURS`` ago (a
        ``VACUUM``; called by the renewal thread every ``TIDY_EVERY`` renewals). It changes no
        row and no version a reader uses, so the compare-and-set is untouched."""
        lease_table.tidy(spark, self.table, TIDY_RETAIN_HOURS)

    def _clear(self, spark: SparkSession) -> None:
        """Free the lease if it is still ours."""
        lease_table.clear(spark, self.table, self.token)

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
        """Take a lease the last run released (one ``UPDATE`` that matches a free row). Creates
        nothing: with no lease yet (a new checkpoint) it only answers False.

        Returns:
            Whether this run now holds the lease.
        """
        if faults.setting("skip_lease_acquire"):
            return True  # test hook: a writer on a store where it cannot see the other's lease
        return self._take(spark, None)

    def take_over(self, spark: SparkSession) -> None:
        """Read the lease (creating it if missing), refuse a live holder, and take a free, dead
        or expired lease with a compare-and-set against the lease just read.

        Raises:
            CheckpointError: another live run holds the lease, or took it at the same moment.
        """
        if faults.setting("skip_lease_acquire"):
            return
        held = self.read(spark)
        if held is None:  # a new checkpoint: create the table already holding this run's token
            if self._claim(lambda: self._create(spark)):
                return
            held = self.read(spark)
        if held is None:  # leftovers of a killed creation, or a table without its row
            self._ensure(spark)
            held = self.read(spark)
        seen = held.token if held is not None else None
        if held is not None and seen and seen != self.token and self._live(held):
            raise CheckpointError(
                f"pipeline {self.pipeline} is already running on checkpoint "
                f"{self.location} ({self._describe(held)}); wait for it to finish. A run that "
                f"died elsewhere releases it {LEASE_TTL:.0f}s after its last renewal.")
        if not self._take(spark, held):
            raise CheckpointError(
                f"pipeline {self.pipeline}: another run took checkpoint {self.location} at "
                "the same moment; wait for it to finish.")

    def _take(self, spark: SparkSession, seen: Holder | None) -> bool:
        """Take the lease if it is still as ``seen`` (None: free); whether this run holds it."""
        return self._claim(lambda: self._set_token(spark, seen))

    def _claim(self, attempt: Callable[[], bool]) -> bool:
        """Run ``attempt`` (a write that may give this run the lease) with the token in
        ``_HELD_HERE`` first, so no run of this process sees it unheld; out again unless taken."""
        _HELD_HERE.add(self.token)
        taken = False
        try:
            taken = attempt()
        finally:
            if not taken:
                _HELD_HERE.discard(self.token)
        return taken

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
        if self._proven_ours(spark):
            return
        held = self.read(spark)
        if held is not None and held.token == self.token:
            return
        who = self._describe(held) if held is not None and held.token else "no lease is held"
        raise CheckpointError(
            f"pipeline {self.pipeline}: another run is writing with checkpoint "
            f"{self.location} ({who}); this run stopped before committing batch {batch_id}, "
            "so nothing of that batch was committed by it. Run one writer per checkpoint.")

    def _proven_ours(self, spark: SparkSession) -> bool:
        """Whether the lease table's newest commit proves the lease ours (False: ask Delta)."""
        return lease_log.still_ours(spark, self.table, self.token, self._seen)

    def release(self, spark: SparkSession) -> None:
        """Clear the token if it is still ours. Cleared or not (a full disk, a store that
        fails), this process no longer runs under it, so its next run may take it at once."""
        try:
            self._clear(spark)
        finally:
            _HELD_HERE.discard(self.token)
