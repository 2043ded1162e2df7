"""The target's MERGE as one txn-guarded commit: shared by a batch and a redrive.

The MERGE itself is the write mode's (:mod:`pipelines.sink.modes`: insert-only, upsert). It is
committed under a ``txn`` (app id, version) with the commit's userMetadata, and retries Delta's
write conflicts against the new table version.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyspark.sql import DataFrame, SparkSession

from pipelines.config.model import PipelineConfig
from pipelines.sink.commit import txn, with_conflict_retry
from pipelines.sink.event_window import Span
from pipelines.sink.merge import MergeOutcome, merge_settings
from pipelines.sink.modes.choice import mode_for


def merge_into_target(spark: SparkSession, config: PipelineConfig, deduped: DataFrame,
                      values: dict[str, list[object]], app_id: str, version: int,
                      metadata: str, before_commit: Callable[[], None],
                      spans: Sequence[Span] | None = None, *,
                      compact: bool = False) -> MergeOutcome:
    """The target's MERGE of a batch's survivors, as one txn-guarded commit.

    The mode's MERGE (:meth:`pipelines.sink.modes.base.WriteMode.merge`) runs inside the txn
    and :func:`merge_settings`, and is retried whole on a conflict. A micro-batch and
    ``deltasink quarantine redrive`` both commit through it.

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

    Returns:
        Whether Delta committed (False: skipped as a seen txn) and how many rows were inserted.
    """
    target = config.target
    mode = mode_for(config)
    merge = mode.merge(deduped, values, spans)

    def attempt() -> MergeOutcome:
        before_commit()
        with txn(spark, app_id, version, metadata), \
                merge_settings(spark, compact=compact, insert_only=mode.inserts_only):
            return merge()

    return with_conflict_retry(attempt, retries=target.commit_retries,
                               what=f"{mode.merge_kind} into {target.ref.describe()}")
