"""Does the checkpoint agree with the target table? Never trust a skip, never trust a resume.

Two checks, each turning a silent loss into a recovery:

* **A skipped batch must prove it is a replay.** Delta skips a commit whose (txnAppId,
  txnVersion) it has seen. That is a no-op only if the committed batch covered the same offsets.
  When a checkpoint is rolled back (restored from a backup, or its newest files deleted) while
  new records arrive, Spark re-plans the batch id over a wider range: skipping it would drop the
  new records. :func:`prove_replay` compares the committed end offsets (the commit's
  userMetadata) with the ones Spark planned now.
* **The checkpoint must not be ahead of the table.** Spark commits a batch to the checkpoint only
  after ``foreachBatch`` returned, i.e. after the target commit that records its end offsets. So
  the table always records at least what the checkpoint committed, unless the table was
  restored or replaced, or the checkpoint was copied from another pipeline. :func:`ahead_of_table`
  finds that before the query starts.

A third check runs inside a long run: **the table must not be restored under it**. Before each
target commit, :func:`check_not_restored` looks at the query's previous commit; a ``RESTORE``
that undid it (a continuous job keeps running while an operator restores its table) stops the
batch, and the run recovers as below instead of carrying on without the restored-away rows.

Either way the recovery is the same, and it is the path of a lost checkpoint: the checkpoint is
moved aside, and the run resumes from the offsets the table records, under a new query identity.
Everything below those offsets is in the table; everything above them is read again, and the
insert-only MERGEs (on the event key, and on Kafka coordinates for quarantine) keep what is
already there from being written twice.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from pipelines.errors import CheckpointMismatchError
from pipelines.ledger import state
from pipelines.storage.tables import TableRef

Offsets = dict[str, dict[int, int]]


def differences(committed: Offsets, planned: Offsets) -> list[str]:
    """``topic[p]: A != B`` for each partition whose end offsets differ."""
    out = []
    for topic in sorted(set(committed) | set(planned)):
        for part in sorted(set(committed.get(topic, {})) | set(planned.get(topic, {}))):
            a, b = committed.get(topic, {}).get(part), planned.get(topic, {}).get(part)
            if a != b:
                out.append(f"{topic}[{part}] {a if a is not None else '-'} -> "
                           f"{b if b is not None else '-'}")
    return out


def prove_replay(spark: SparkSession, ref: TableRef, app_id: str, batch_id: int,
                 planned: Offsets) -> None:
    """Show that a batch Delta skipped as committed is a true replay, or raise.

    Raises:
        CheckpointMismatchError: the committed batch covered other offsets, was undone by a
            RESTORE, or cannot be found to compare with.
    """
    commit = state.find_commit(spark, ref, app_id, batch_id)
    if commit is None:
        raise CheckpointMismatchError(
            f"batch {batch_id} was skipped by Delta as already committed by {app_id}, but no "
            f"such commit is in the history of {ref.describe()} to prove it was a replay")
    if commit.undone_by is not None:
        raise CheckpointMismatchError(
            f"batch {batch_id} was committed in version {commit.version} of "
            f"{ref.describe()}, but RESTORE (version {commit.undone_by}) undid it")
    diff = differences(commit.offsets, planned)
    if diff:
        shown = ", ".join(diff[:6]) + (f" (+{len(diff) - 6} more)" if len(diff) > 6 else "")
        raise CheckpointMismatchError(
            f"the checkpoint was rolled back or reused: batch {batch_id} committed end offsets "
            f"that differ from the ones planned now ({shown})")


def ahead_of_table(committed: Offsets, recorded: Offsets | None) -> list[str]:
    """Partitions where the checkpoint committed more than the table records.

    Args:
        committed: the end offsets of the checkpoint's newest committed batch.
        recorded: the next offsets the table records for this pipeline (None: nothing).

    Returns:
        ``topic[p] table A < checkpoint B`` for each such partition (empty: consistent).
    """
    out = []
    for topic, parts in sorted(committed.items()):
        for part, end in sorted(parts.items()):
            has = (recorded or {}).get(topic, {}).get(part)
            if end > (has or 0):
                out.append(f"{topic}[{part}] table {has if has is not None else '-'} < "
                           f"checkpoint {end}")
    return out


#: How many of the newest versions a batch reads to find its query's previous commit (other
#: writers' commits in between push it further back).
RESTORE_LOOKBACK = 1000


def check_not_restored(spark: SparkSession, ref: TableRef, app_id: str, batch_id: int,
                       near: int | None = None) -> int | None:
    """Raise if a ``RESTORE`` undid this query's newest commit while the run was writing.

    Reads the newest versions until this query's newest commit is found, at most
    :data:`RESTORE_LOOKBACK` of them, so a batch's cost does not grow with the history.

    Args:
        spark: the batch's session.
        ref: the target.
        app_id: the query's txnAppId.
        batch_id: the batch about to commit.
        near: what the previous call returned (one Spark job instead of two to four when the table
            has moved on by fewer than ``deltalog.NEAR`` versions since).

    Returns:
        The version of the query's newest commit (the next call's ``near``), or None.

    Raises:
        CheckpointMismatchError: the query's newest commit was undone by a RESTORE.
    """
    if batch_id == 0:
        return None
    newest = state.search(spark, ref, lambda c: c.app_id == app_id, window=4,
                          limit=RESTORE_LOOKBACK, near=near)
    if newest is not None and newest.undone_by is not None:
        raise CheckpointMismatchError(
            f"the target was restored while this run was writing: RESTORE (version "
            f"{newest.undone_by}) undid batch {newest.batch_id} (version {newest.version})")
    return None if newest is None else newest.version
