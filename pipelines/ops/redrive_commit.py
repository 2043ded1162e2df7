"""The exactly-once commit of a redrive: one target MERGE, then the quarantine rows marked.

1. The rows that now parse go through the target's own insert-only MERGE
   (:func:`pipelines.sink.batch.merge_into_target`: keyed on the dedup key within the dedup
   window, partition literals), committed under the txn app id ``deltasink-redrive:<pipeline>``
   with txnVersion = the target's latest version when the redrive starts. That is above every
   earlier redrive's txnVersion (each committed a newer version than its own), so Delta never
   skips a redrive, and choosing it needs no scan of the log. The commit is marked
   ``"replay": true`` (so :func:`pipelines.ledger.state.recorded_offsets` ignores it: the pipeline's
   Kafka offsets stay put) and carries ``"redrive"`` details.
2. Then one MERGE into the quarantine table sets ``redriven_at`` and ``redriven_version`` (the
   target version of step 1) on those rows, and the new reason on rows that still fail for
   another reason. It only touches rows not yet redriven.

A crash between 1 and 2 leaves the rows unmarked and the records in the target. The next redrive
selects them again and MERGEs them under a new txnVersion: the MERGE key finds every one of
them present, so it inserts nothing, and its commit is the version they are marked with. So each
quarantined record lands at most once however often redrive runs or crashes, and once marked it
is never selected again.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from pyspark.sql import SparkSession

from pipelines import faults, sql
from pipelines.config.model import PipelineConfig
from pipelines.errors import CommitError
from pipelines.ledger import state
from pipelines.ledger.record import METADATA_KEY, commit_metadata, mark_replay
from pipelines.ops.redrive_plan import RedrivePlan
from pipelines.sink.batch import QUARANTINE_KEY
from pipelines.sink.commit import with_conflict_retry
from pipelines.sink.merge import null_safe_or_legacy
from pipelines.sink.target_merge import merge_into_target

#: The key of a redrive's details in the commit's deltasink userMetadata.
REDRIVE_KEY = "redrive"


def redrive_app_id(pipeline: str) -> str:
    """The txnAppId of a pipeline's redrives (see :func:`txn_version_for`)."""
    return f"deltasink-redrive:{pipeline}"


@dataclass(frozen=True)
class RedriveResult:
    """What a redrive committed.

    Attributes:
        txn_version: the target commit's txnVersion (None: nothing parsed, no target commit).
        target_version: the target version that received the records.
        inserted: rows the MERGE inserted (the rest were in the target already).
        redriven: quarantine rows marked redriven.
        reasons_updated: quarantine rows that still fail, with their new reason.
    """

    txn_version: int | None
    target_version: int | None
    inserted: int
    redriven: int
    reasons_updated: int


def txn_version_for(spark: SparkSession, config: PipelineConfig) -> int:
    """The txnVersion of the next redrive: the target's latest version.

    An earlier redrive with txnVersion ``r`` committed version ``c > r``, and versions only grow
    (a RESTORE is a new version too), so this is above every txnVersion Delta has recorded for
    the app id: read from the newest commit only, however long the history.
    """
    return config.target.ref.latest_version(spark)


def redrive_metadata(config: PipelineConfig, txn_version: int, plan: RedrivePlan) -> str:
    """The commit's userMetadata: a replay-marked deltasink commit with no offsets."""
    app_id = redrive_app_id(config.name)
    body = json.loads(mark_replay(commit_metadata(config.name, app_id, txn_version,
                                                  f"redrive-{txn_version}", {})))
    body[METADATA_KEY][REDRIVE_KEY] = {"quarantine_version": plan.quarantine_version,
                                       "rows": plan.fixed, "unique": plan.unique}
    return json.dumps(body, separators=(",", ":"))


def commit_target(spark: SparkSession, config: PipelineConfig, plan: RedrivePlan,
                  guard: Callable[[int], None]) -> tuple[int, int, int]:
    """MERGE the plan's rows into the target under a new txnVersion.

    Returns:
        (txnVersion, the target version of the commit, rows inserted).

    Raises:
        CommitError: Delta skipped the commit (a concurrent redrive took the txnVersion) or it
            cannot be found in the log.
    """
    version = txn_version_for(spark, config)
    app_id = redrive_app_id(config.name)

    def before_commit() -> None:
        guard(version)
        faults.maybe_crash("before_redrive_commit")

    outcome = merge_into_target(spark, config, plan.deduped, plan.values, app_id, version,
                                redrive_metadata(config, version, plan), before_commit)
    commit = state.find_commit(spark, config.target.ref, app_id, version) \
        if outcome.committed else None
    if commit is None:
        raise CommitError(f"redrive txn {version} of {config.target.ref.describe()} was not "
                          "committed (a concurrent redrive took it); nothing is marked, run "
                          "the redrive again.")
    return version, commit.version, outcome.inserted


def mark_quarantine(spark: SparkSession, config: PipelineConfig, plan: RedrivePlan,
                    target_version: int | None, when: datetime) -> None:
    """Mark the rows that now parse redriven; give rows that still fail their new reason.

    Only rows not yet redriven are matched, so running it again changes nothing.
    """
    ref = config.target.quarantine_ref
    source = plan.quarantine_updates(fixed=target_version is not None)
    cond = sql.all_of(["t.redriven_at IS NULL", null_safe_or_legacy("record_hash"),
                       "t.kafka_timestamp <=> s.kafka_timestamp", sql.equal_on(QUARANTINE_KEY)])
    marked = (f"WHEN MATCHED AND s._reason IS NULL THEN UPDATE SET redriven_at = "
              f"{sql.literal(when)}, redriven_version = {sql.literal(target_version)} "
              if target_version is not None else "")
    clauses = (f"{marked}WHEN MATCHED AND s._reason IS NOT NULL AND s._reason != t.reason "
               "THEN UPDATE SET reason = s._reason")

    def attempt() -> None:
        ref.merge(source, cond or "true", clauses)

    with_conflict_retry(attempt, retries=config.target.commit_retries,
                        what=f"MERGE into {ref.describe()}",
                        aftermath="the records are in the target but not marked; run the "
                                  "redrive again (it inserts nothing twice).")


def commit_redrive(spark: SparkSession, config: PipelineConfig, plan: RedrivePlan, *,
                   guard: Callable[[int], None] = lambda _txn: None,
                   say: Callable[[str], None] = print) -> RedriveResult:
    """Send the plan's rows to the target exactly once, then mark them in the quarantine.

    Args:
        spark: the session.
        config: the pipeline config.
        plan: from :func:`pipelines.ops.redrive.plan_redrive`.
        guard: called with the txnVersion before the target commit (the checkpoint lease).
        say: receives one line per step.
    """
    txn_version = version = None
    inserted = 0
    if plan.fixed:
        txn_version, version, inserted = commit_target(spark, config, plan, guard)
        say(f"redrive txn {txn_version}: target version {version}: inserted={inserted} "
            f"already_present={plan.unique - inserted} dup_in_redrive={plan.fixed - plan.unique}")
        faults.maybe_crash("after_redrive_commit")
    if plan.fixed or plan.reason_changes:
        mark_quarantine(spark, config, plan, version, datetime.now(UTC))
        say(f"quarantine: {plan.fixed} rows marked redriven (target version {version}), "
            f"{plan.reason_changes} reasons updated")
    return RedriveResult(txn_version, version, inserted, plan.fixed, plan.reason_changes)
