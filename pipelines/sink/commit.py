"""Idempotent Delta commits: the txn action, the offsets carried in the commit, conflict retry.

A commit is keyed on (txnAppId, txnVersion = batch id). Delta silently skips a commit whose
version is not above the one recorded for the app id, so a replayed batch is a no-op. The app id
includes the streaming query id, which changes when the checkpoint is recreated: batch ids then
restart at 0 under a new app id instead of being skipped (which would lose data silently).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

from pyspark.sql import SparkSession

from pipelines.errors import CommitError

TXN_APP_ID = "spark.databricks.delta.write.txnAppId"
TXN_VERSION = "spark.databricks.delta.write.txnVersion"
TXN_AUTO_RESET = "spark.databricks.delta.write.txnVersion.autoReset.enabled"
USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"
METADATA_KEY = "deltasink"
#: The key of the batch's counts inside the deltasink userMetadata.
BATCH_KEY = "batch"
#: The key of the Kafka identity (cluster id, topic ids) inside the deltasink userMetadata.
SOURCE_KEY = "source"
#: What a failed target/quarantine commit means (the default ``aftermath`` of a retry).
NOTHING_COMMITTED = ("nothing was committed for this batch, and the next run retries it. "
                     "Raise target.commit_retries if writers overlap often.")

#: Delta's optimistic-concurrency failures: retry the whole MERGE against the new version.
CONFLICTS = ("ConcurrentAppendException", "ConcurrentDeleteReadException",
             "ConcurrentDeleteDeleteException", "ConcurrentTransactionException",
             "MetadataChangedException", "ProtocolChangedException", "DELTA_CONCURRENT_")

T = TypeVar("T")
Offsets = Mapping[str, Mapping[int, int]]


def app_id_for(pipeline: str, query_id: str) -> str:
    """The txnAppId of a pipeline's streaming query."""
    return f"deltasink:{pipeline}:{query_id}"


def commit_metadata(pipeline: str, app_id: str, batch_id: int, run_id: str,
                    offsets: Offsets, counts: Mapping[str, Any] | None = None,
                    source: Mapping[str, Any] | None = None) -> str:
    """The JSON stored as the commit's userMetadata: who wrote it, and where its input ended.

    Args:
        pipeline: the pipeline name.
        app_id: the txnAppId.
        batch_id: the txnVersion.
        run_id: the run that wrote the commit.
        offsets: the next offsets to read per topic and partition (exclusive end).
        counts: the batch's counts known before the commit (``BatchMetrics.commit_counts``),
            stored under ``batch``: the commit is then the source of truth for its metrics row.
        source: the Kafka cluster id and topic ids the offsets refer to
            (``{"cluster_id": ..., "topic_ids": {...}}``, see ``pipelines.kafka.identity``).
    """
    body: dict[str, Any] = {
        "pipeline": pipeline, "app_id": app_id, "batch_id": batch_id, "run_id": run_id,
        "offsets": {t: {str(p): o for p, o in sorted(ps.items())}
                    for t, ps in sorted(offsets.items())}}
    if counts is not None:
        body[BATCH_KEY] = dict(counts)
    if source:
        body[SOURCE_KEY] = dict(source)
    return json.dumps({METADATA_KEY: body}, separators=(",", ":"))


def parse_commit_metadata(text: str | None) -> dict[str, Any] | None:
    """The deltasink part of a commit's userMetadata, or None for other writers' commits."""
    if not text:
        return None
    try:
        body = json.loads(text).get(METADATA_KEY)
    except (ValueError, AttributeError):
        return None
    return body if isinstance(body, dict) else None


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


def replay_app_id(pipeline: str, replay_id: str) -> str:
    """The txnAppId of a ``deltasink replay`` run (never the pipeline's own)."""
    return f"deltasink-replay:{pipeline}:{replay_id}"


def mark_replay(metadata: str) -> str:
    """``metadata`` with ``"replay": true``: recorded offsets ignore such commits."""
    body = json.loads(metadata)
    body[METADATA_KEY]["replay"] = True
    return json.dumps(body, separators=(",", ":"))
