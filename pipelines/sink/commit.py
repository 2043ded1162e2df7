"""Idempotent Delta commits: the txn action and conflict retry.

A commit is keyed on (txnAppId, txnVersion = batch id). Delta silently skips a commit whose
version is not above the one recorded for the app id, so a replayed batch is a no-op. The app id
includes the streaming query id, which changes when the checkpoint is recreated: batch ids then
restart at 0 under a new app id instead of being skipped (which would lose data silently).
What a commit records (its userMetadata) is :mod:`pipelines.ledger.record`.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from pyspark.sql import SparkSession

from pipelines.errors import CommitError

TXN_APP_ID = "spark.databricks.delta.write.txnAppId"
TXN_VERSION = "spark.databricks.delta.write.txnVersion"
TXN_AUTO_RESET = "spark.databricks.delta.write.txnVersion.autoReset.enabled"
USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"
#: What a failed target/quarantine commit means (the default ``aftermath`` of a retry).
NOTHING_COMMITTED = ("nothing was committed for this batch, and the next run retries it. "
                     "Raise target.commit_retries if writers overlap often.")

#: Delta's optimistic-concurrency failures: retry the whole MERGE against the new version.
CONFLICTS = ("ConcurrentAppendException", "ConcurrentDeleteReadException",
             "ConcurrentDeleteDeleteException", "ConcurrentTransactionException",
             "MetadataChangedException", "ProtocolChangedException", "DELTA_CONCURRENT_")

T = TypeVar("T")


@contextmanager
def txn(spark: SparkSession, app_id: str, version: int, metadata: str | None) -> Iterator[None]:
    """Make the next Delta commit in ``spark`` idempotent on (app_id, version).

    Args:
        spark: the micro-batch's own session (never a global one: queries run concurrently).
        app_id: the txnAppId.
        version: the txnVersion (the batch id).
        metadata: userMetadata for the commit, or None.
    """
    spark.conf.set(TXN_AUTO_RESET, "true")
    spark.conf.set(TXN_APP_ID, app_id)
    spark.conf.set(TXN_VERSION, str(version))
    if metadata is not None:
        spark.conf.set(USER_METADATA, metadata)
    try:
        yield
    finally:
        for key in (TXN_APP_ID, TXN_VERSION, USER_METADATA):
            spark.conf.unset(key)


def is_conflict(exc: BaseException) -> bool:
    """Whether ``exc`` is a Delta concurrency conflict worth retrying."""
    text = f"{type(exc).__name__}: {exc}"
    return any(name in text for name in CONFLICTS)


def with_conflict_retry(action: Callable[[], T], *, retries: int, what: str,
                        backoff: float = 0.5, sleep: Callable[[float], None] = time.sleep,
                        aftermath: str = NOTHING_COMMITTED) -> T:
    """Run ``action``; on a Delta conflict, retry it whole with jittered exponential backoff.

    Args:
        action: the complete MERGE (it must re-read the table each time).
        retries: how many retries after the first attempt.
        what: named in the error when retries run out.
        backoff: the first delay in seconds; doubles each time, capped at 30 s.
        sleep: injectable for tests.
        aftermath: what the failure means and what to do (ends the error message).

    Raises:
        CommitError: still conflicting after ``retries`` retries.
    """
    for attempt in range(retries + 1):
        try:
            return action()
        except Exception as exc:
            if not is_conflict(exc):
                raise
            if attempt == retries:
                raise CommitError(
                    f"{what}: still conflicting with concurrent writers after {retries} retries; "
                    f"{aftermath}") from exc
            sleep(min(30.0, backoff * 2**attempt) * (0.5 + random.random()))
    raise AssertionError("unreachable")
