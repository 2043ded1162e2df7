"""The target's MERGE as one txn-guarded commit: shared by a batch and a redrive.

The MERGE itself is the write mode's (:mod:`pipelines.sink.modes`: insert-only, upsert, a
replica, an SCD2 history). It is committed under a ``txn`` (app id, version) with the commit's
userMetadata, and retries Delta's write conflicts against the new table version.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from pipelines.config.model import PipelineConfig
from pipelines.sink.commit import txn, with_conflict_retry
from pipelines.sink.event_window import Span
from pipelines.sink.merge import MergeOutcome, merge_settings
from pipelines.sink.modes.base import BatchRows, SideWrite
from pipelines.sink.modes.choice import mode_for


def merge_into_target(spark: SparkSession, config: PipelineConfig, deduped: DataFrame,
                      values: dict[str, list[object]], app_id: str, version: int,
                      metadata: str, before_commit: Callable[[], None],
                      spans: Sequence[Span] | None = None, *,
                      compact: bool = False, keys: tuple[str, ...] | None = None,
                      key_range: tuple[Any, Any] | None = None,
                      observed: Mapping[str, Any] | None = None,
                      after_side_write: Callable[[], None] = lambda: None) -> MergeOutcome:
    """The target's MERGE of a batch's survivors, as one txn-guarded commit.

    The mode's MERGE (:meth:`pipelines.sink.modes.base.WriteMode.merge`) runs inside the txn
    and :func:`merge_settings`, and is retried whole on a conflict. A micro-batch and
    ``deltasink quarantine redrive`` both commit through it. A mode with tables of its own
    (a replica's deletes, a history's changes) first fits their columns to the rows, then
    commits its side writes, each in the same txn (app id, batch id) on its own table: a
    replayed batch skips them as it skips the target's, and the target's commit, which
    carries the batch's offsets, comes last.

    Args:
        spark: the session.
        config: the pipeline config.
        deduped: the batch's survivors (at most one row per dedup key).
        values: partition column -> the distinct values in ``deduped``.
        app_id: the txnAppId.
        version: the txnVersion.
        metadata: the commit's userMetadata.
        before_commit: called before each attempt (lease check, fault points).
        spans: with an event-time window, the time ranges to read (``Prepared.spans``); None
            reads every date the window can reach.
        compact: run Delta's auto-compaction after the commit (:func:`merge_settings`).
        keys: the key's columns (default ``target.dedup_key``; a change stream's are learned).
        key_range: the lowest and highest value of the key's first column in ``deduped``
            (``Prepared.key_range``); None reads every key.
        observed: what the batch's job observed (the mode's own counts).
        after_side_write: called after each side write (a fault point).

    Returns:
        Whether Delta committed (False: skipped as a seen txn) and how many rows were inserted.
    """
    target = config.target
    mode = mode_for(config)
    batch = BatchRows(deduped, values, spans, keys or target.dedup_keys, observed or {},
                      key_range)
    mode.before_merge(spark, batch)
    for side in mode.side_writes(batch):
        def side_attempt(side: SideWrite = side) -> MergeOutcome:
            before_commit()
            with txn(spark, app_id, version, None), merge_settings(spark, insert_only=False):
                return side.write()

        with_conflict_retry(side_attempt, retries=target.commit_retries,
                            what=f"{side.what} into {side.ref.describe()}")
        after_side_write()
    merge = mode.merge(batch)

    def attempt() -> MergeOutcome:
        before_commit()
        with txn(spark, app_id, version, metadata), \
                merge_settings(spark, compact=compact, insert_only=mode.inserts_only):
            return merge()

    return with_conflict_retry(attempt, retries=target.commit_retries,
                               what=f"{mode.merge_kind} into {target.ref.describe()}")
