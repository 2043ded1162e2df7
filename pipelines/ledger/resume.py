"""Where a run resumes: what the checkpoint, the table's log and the broker agree on.

Before the query starts, three sources must tell one story:

* the checkpoint is readable (a damaged one is named, not half-used);
* the checkpoint is not ahead of the table (``reconcile.ahead_of_table``: a RESTOREd or replaced
  table, or a checkpoint from another pipeline);
* the offsets refer to the topics the broker has now (``kafka.identity``: a topic deleted and
  created again, or the same name on another cluster, restarts at offset 0).

When they disagree, the checkpoint is retired and the run resumes from the offsets the table
records (the lost-checkpoint path, see ``pipelines.ledger.reconcile``), reading a recreated topic
from its start. The insert-only MERGEs keep anything already landed from being written twice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import SparkSession

from pipelines.config.model import PipelineConfig
from pipelines.kafka import identity
from pipelines.ledger import checkpoint, reconcile, state
from pipelines.ledger.lease import Lease

Offsets = dict[str, dict[int, int]]


@dataclass(frozen=True)
class Resume:
    """The agreed starting point of a run.

    Attributes:
        offsets: the next offsets the table records (None: nothing recorded yet); a recreated
            topic maps to no partitions, so every partition of it starts at its earliest offset.
        source: the broker's cluster id and topic ids now, recorded with every commit.
        forgotten: topics whose recorded offsets belonged to an older incarnation.
    """

    offsets: Offsets | None
    source: identity.SourceIdentity
    forgotten: frozenset[str] = field(default_factory=frozenset)

    @property
    def metadata(self) -> dict[str, Any]:
        """The identity as stored in each commit's userMetadata."""
        return {"cluster_id": self.source.cluster_id, "topic_ids": dict(self.source.topic_ids)}

    def refresh(self, spark: SparkSession, config: PipelineConfig) -> Resume:
        """Re-read the table's offsets (after an outage the run may have moved on)."""
        commit = state.live_commit(spark, config.target.ref, config.name)
        return Resume(_forget(commit.offsets if commit else None, self.forgotten, commit,
                              self.source), self.source, self.forgotten)


def _recorded_identity(commit: state.SinkCommit | None) -> identity.SourceIdentity:
    if commit is None or not commit.source:
        return identity.SourceIdentity()
    return identity.SourceIdentity(commit.source.get("cluster_id"),
                                   dict(commit.source.get("topic_ids") or {}))


def _forget(offsets: Offsets | None, topics: frozenset[str], commit: state.SinkCommit | None,
            now: identity.SourceIdentity) -> Offsets | None:
    """``offsets`` with each topic in ``topics`` read from its start, unless ``commit`` was made
    against the topic as it is now (a batch committed since the recovery)."""
    if offsets is None or not topics:
        return offsets
    ids = _recorded_identity(commit).topic_ids
    return {t: ({} if t in topics and ids.get(t) != now.topic_ids.get(t) else o)
            for t, o in offsets.items()}


def agree(spark: SparkSession, config: PipelineConfig, partitions: dict[str, list[int]],
          lease: Lease, say: Callable[[str], None],
          now: identity.SourceIdentity | None = None) -> Resume:
    """Check the checkpoint, the table and the broker against each other; recover if needed.

    Args:
        spark: the session.
        config: the pipeline config.
        partitions: the subscribed topics' partitions now.
        lease: this run's checkpoint lease.
        say: prints one line per recovery.
        now: the source's identity, if the caller just asked the broker (else asked here).

    Returns:
        Where to resume.

    Raises:
        CheckpointError: the checkpoint is damaged.
        BrokerError: the broker cannot describe the topics.
    """
    location = checkpoint.active(spark, config.checkpoint)
    checkpoint.latest_offsets(spark, location)  # fail fast on a damaged checkpoint
    commit = state.live_commit(spark, config.target.ref, config.name)
    if now is None:
        now = identity.describe(spark, config.source, partitions)
    gone = identity.recreated(_recorded_identity(commit), now)
    offsets = commit.offsets if commit else None
    if gone and offsets is not None:
        offsets = _forget(offsets, frozenset(gone), commit, now)
        reason = "; ".join(gone.values())
        if checkpoint.has_state(spark, location):
            recover(spark, config, lease, say, f"{reason}: its offsets are not this topic's")
        say(f"{reason}: reading it from its earliest offset")
        return Resume(offsets, now, frozenset(gone))
    committed = checkpoint.committed_offsets(spark, location)
    ahead = reconcile.ahead_of_table(committed[1], offsets) if committed else []
    if committed and ahead:
        recover(spark, config, lease, say, (
            f"checkpoint batch {committed[0]} committed offsets that the target does not "
            f"record ({', '.join(ahead[:4])}): the table was restored or replaced, or the "
            "checkpoint comes from another pipeline"))
    return Resume(offsets, now)


def recover(spark: SparkSession, config: PipelineConfig, lease: Lease,
            say: Callable[[str], None], reason: str) -> None:
    """Retire a checkpoint that disagrees with the table; resume from the table's offsets.

    This is the lost-checkpoint path (see ``pipelines.ledger.reconcile`` for why it loses and
    duplicates nothing); the old checkpoint is kept for inspection, and ``lease`` (at the
    checkpoint's root, not in a generation) stays held.
    """
    old = checkpoint.active(spark, config.checkpoint)
    fresh = checkpoint.retire(spark, config.checkpoint, reason)
    say(f"checkpoint does not match the target: {reason}. Retired it (kept at {old}); resuming "
        f"from the offsets the target records in {fresh}, under a new query id (nothing is "
        "lost or written twice).")
