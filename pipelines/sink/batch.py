"""The foreachBatch body: parse → quarantine → dedup → merge → commit → metrics.

Order matters for exactly-once. The quarantine MERGE commits first; the target MERGE commits last
and carries the batch's end offsets, so the target's log is the record of where input stopped.
Both are insert-only MERGEs keyed on data (Kafka coordinates, event key) *and* txn-guarded on
(app id, batch id): a replay is skipped by the txn, and even under a new app id (checkpoint lost)
the MERGE keys keep it from writing anything twice.

The body is self-contained: under Spark Connect, ``foreachBatch`` runs it in a Python worker
beside the server, not in the client. So it holds no session and no client state: it is pickled
with its config, the checkpoint lease (verified with the batch's own session) and the fault spec
it was started with, and everything the run reports about it comes from what it committed (its
target commit's userMetadata, ``pipelines/sink/commit.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from pipelines import faults, sql
from pipelines.config.model import DATE_COLUMN, PipelineConfig
from pipelines.errors import CheckpointError
from pipelines.ledger.reconcile import check_not_restored, prove_replay
from pipelines.ledger.record import app_id_for, commit_metadata, mark_replay, replay_app_id
from pipelines.sink import freshness
from pipelines.sink.commit import txn, with_conflict_retry
from pipelines.sink.event_window import Span
from pipelines.sink.materialize import release
from pipelines.sink.merge import (
    MergeOutcome,
    count_other_date_copies,
    insert_only_merge,
    merge_settings,
    null_safe_or_legacy,
)
from pipelines.sink.metrics import BatchMetrics, commit_counts
from pipelines.sink.parse import quarantine_rows
from pipelines.sink.partitions import read_values
from pipelines.sink.prepare import Prepared, prepare
from pipelines.sink.records import Records, records_for
from pipelines.sink.retry import run_batch_with_retry
from pipelines.sink.target_merge import merge_into_target
from schemas.base import EventSchema

#: The Kafka coordinates in the quarantine key. Offsets restart at 0 when a topic is recreated (or
#: come from another cluster), so the MERGE also matches the record's ``kafka_timestamp``
#: (null-safe) and ``record_hash`` (key and value): both are the same when a batch is replayed.
#: Rows quarantined before ``record_hash`` existed (null) match without it.
QUARANTINE_KEY = ("kafka_topic", "kafka_partition", "kafka_offset")


@dataclass
class BatchSink:
    """Callable passed to ``foreachBatch`` for one streaming query.

    Attributes:
        config: the pipeline config.
        schema: the event schema.
        run_id: this run's id (for metrics).
        query_id: returns the streaming query id (read from the checkpoint).
        planned: returns the end offsets Spark planned for a batch id (its checkpoint entry):
            what the commit records, and what a skipped batch is compared with.
        guard: called with the batch's session and id before each commit; raises if this run
            may not commit (another writer holds the checkpoint's lease: ``Lease.verify``).
        on_batch: called with each batch's metrics where the batch runs (an embedding hook:
            under Spark Connect that is the server's worker, so ``deltasink run`` reports each
            batch from its commit instead, ``pipelines/batches.py``).
        replay: a ``deltasink replay`` run: its own txn app id, commits marked as replays.
        say: receives a batch's retry line (a re-run after a lost executor) where the batch
            runs, like ``on_batch``; ``deltasink run`` and ``replay`` print it from the
            batch's commit (``BatchMetrics.rerun``).
        source: the Kafka cluster id and topic ids the offsets refer to, recorded with each
            target commit (``pipelines.ledger.resume.Resume.metadata``).
        fault_spec: the test-only fault spec of the process that started the query
            (``pipelines/faults.py``), carried to wherever the batch runs.
        compact: the target's MERGE runs with Delta's auto-compaction on (a continuous run,
            ``target.compact_while_streaming``).
    """

    config: PipelineConfig
    schema: EventSchema
    run_id: str
    query_id: Callable[[SparkSession], str]
    planned: Callable[[SparkSession, int], dict[str, dict[int, int]] | None]
    guard: Callable[[SparkSession, int], None] = lambda _s, _b: None
    on_batch: Callable[[BatchMetrics], None] = lambda _m: None
    replay: bool = False
    say: Callable[[str], None] = lambda _l: None
    source: Mapping[str, Any] = field(default_factory=dict)
    fault_spec: str | None = field(default_factory=faults.current_spec)
    compact: bool = False
    _query: str | None = field(default=None, init=False, repr=False)
    _records: Records | None = field(default=None, init=False, repr=False)
    _near: int | None = field(default=None, init=False, repr=False)

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        """Process one micro-batch (Spark calls this; replays arrive with the same batch id).

        A batch whose materialized blocks died with an executor is re-run whole
        (:mod:`pipelines.sink.retry`): its commits are txn-guarded, so the re-run is exact.
        The retry's line travels in the target commit's counts (``rerun``), so the client
        prints it in both modes: under Spark Connect this body runs in a worker whose output
        the user never sees.
        """
        said: list[str] = []

        def say(line: str) -> None:
            said.append(line)
            self.say(line)

        run_batch_with_retry(lambda _attempt: self._process(batch, batch_id,
                                                            said[-1] if said else None),
                             batch_id, say=say)

    def _process(self, batch: DataFrame, batch_id: int, rerun: str | None = None) -> None:
        spark = batch.sparkSession
        start, started_at = time.monotonic(), datetime.now(UTC)
        stages: dict[str, float] = {}
        if self._query is None:  # a read of the checkpoint's metadata: once per query
            self._query = self.query_id(spark)
        query_id = self._query
        app_id = (replay_app_id if self.replay else app_id_for)(self.config.name, query_id)
        planned = self.planned(spark, batch_id)
        if planned is None:
            raise CheckpointError(f"checkpoint {self.config.checkpoint} has no planned offsets "
                                  f"for batch {batch_id}; it changed under the running query")
        prepared: Prepared | None = None
        try:
            if self._records is None:  # one per query: a change stream's learns its schemas
                self._records = records_for(self.config, self.schema)
            prepared = prepare(batch, self.schema, self.config,  # the one job before the MERGEs
                               self.fault_spec, self._records)
            records_in, quarantined = prepared.records_in, prepared.quarantined
            unique, values = prepared.unique, prepared.values
            stages["read_parse"] = time.monotonic() - start
            faults.maybe_pause(batch_id, spec=self.fault_spec)

            mark = time.monotonic()
            if prepared.bad_offsets is not None:  # no bad record: no quarantine MERGE, no commit
                self._merge_quarantine(spark, prepared.rows, batch_id, app_id,
                                       *prepared.bad_offsets)
            faults.maybe_crash("after_quarantine_commit", batch_id, self.fault_spec)
            stages["quarantine"] = time.monotonic() - mark

            deduped = prepared.events(self.schema, self.config)
            fresh = prepared.fresh
            mark = time.monotonic()
            counts = commit_counts(  # the commit carries them: its metrics row can be rebuilt
                query_id=query_id, records_in=records_in, quarantined=quarantined,
                duplicates_in_batch=records_in - quarantined - prepared.skipped - unique,
                unique=unique,
                started_at=started_at, stage_seconds=stages,
                event_dates=sorted(d for d in values.get("event_date", []) if d),
                **({"rerun": rerun} if rerun else {}), **fresh.as_counts(), **prepared.counts)
            outcome = self._merge_target(spark, deduped, batch_id, app_id, values, planned,
                                         counts, spans=prepared.spans, prepared=prepared)
            stages["merge_commit"] = time.monotonic() - mark
            if not outcome.committed:  # never trust a skip: prove it covered the same offsets
                prove_replay(spark, self.config.target.ref, app_id, batch_id, planned)
            other_date = self._other_date_copies(
                spark, deduped, values, unique - outcome.inserted if outcome.committed else 0,
                stages, prepared.spans)
            faults.maybe_crash("after_target_commit", batch_id, self.fault_spec)
        finally:
            release(prepared.rows if prepared is not None else None)

        valid = records_in - quarantined - (prepared.skipped if prepared is not None else 0)
        ended = datetime.now(UTC)
        self.on_batch(BatchMetrics(
            pipeline=self.config.name, run_id=self.run_id, query_id=query_id,
            batch_id=batch_id, records_in=records_in, quarantined=quarantined,
            duplicates_in_batch=valid - unique,
            duplicates_by_merge=(max(0, unique - outcome.inserted - outcome.updated
                                     - outcome.deleted) if outcome.committed else 0),
            duplicates_other_date=other_date, updated=outcome.updated,
            deletes=int(counts.get("deletes", 0)), skipped=int(counts.get("skipped", 0)),
            deleted=outcome.deleted if outcome.committed else 0,
            inserted=outcome.inserted, duration_s=time.monotonic() - start,
            started_at=started_at, replayed=not outcome.committed,
            event_dates=tuple(sorted(d for d in values.get("event_date", []) if d)),
            stage_seconds=stages, newest_event_time=fresh.newest_event_time,
            newest_kafka_timestamp=fresh.newest_kafka_timestamp,
            freshness_event_s=freshness.age_seconds(ended, fresh.newest_event_time),
            freshness_kafka_s=freshness.age_seconds(ended, fresh.newest_kafka_timestamp),
            latency_p50_s=fresh.latency_p50_s, latency_p99_s=fresh.latency_p99_s,
            rerun=rerun))

    def _merge_quarantine(self, spark: SparkSession, prepared: DataFrame, batch_id: int,
                          app_id: str, lo: int, hi: int) -> MergeOutcome:
        """The bad records' insert-only MERGE; ``lo``/``hi`` bound their offsets."""
        ref = self.config.target.quarantine_ref
        rows = quarantine_rows(prepared, self.config.name, batch_id)

        def attempt() -> MergeOutcome:
            self.guard(spark, batch_id)
            faults.maybe_crash("before_quarantine_commit", batch_id, self.fault_spec)
            with txn(spark, app_id, batch_id, None), merge_settings(spark):
                return insert_only_merge(
                    ref, rows, QUARANTINE_KEY, sql.between("t", "kafka_offset", lo, hi),
                    f"t.kafka_timestamp <=> s.kafka_timestamp AND "
                    f"({null_safe_or_legacy('record_hash')})")

        return with_conflict_retry(attempt, retries=self.config.target.commit_retries,
                                   what=f"quarantine MERGE into {ref.describe()}")

    def _merge_target(self, spark: SparkSession, deduped: DataFrame, batch_id: int,
                      app_id: str, values: dict[str, list[object]],
                      planned: dict[str, dict[int, int]],
                      counts: dict[str, Any] | None = None, *,
                      spans: Sequence[Span] | None = None,
                      prepared: Prepared | None = None) -> MergeOutcome:
        metadata = commit_metadata(self.config.name, app_id, batch_id, self.run_id, planned,
                                   counts, self.source)
        metadata = mark_replay(metadata) if self.replay else metadata

        def before_commit() -> None:
            self.guard(spark, batch_id)
            self._near = check_not_restored(spark, self.config.target.ref, app_id, batch_id,
                                            self._near)
            faults.maybe_crash("before_target_commit", batch_id, self.fault_spec)

        return merge_into_target(
            spark, self.config, deduped, values, app_id, batch_id, metadata, before_commit,
            spans, compact=self.compact, keys=prepared.keys if prepared else None,
            key_range=prepared.key_range if prepared else None,
            observed=prepared.observed if prepared else None,
            after_side_write=lambda: faults.maybe_crash("after_side_commit", batch_id,
                                                        self.fault_spec))

    def _other_date_copies(self, spark: SparkSession, deduped: DataFrame,
                           values: dict[str, list[object]], dropped: int,
                           stages: dict[str, float],
                           spans: Sequence[Span] | None = None) -> int | None:
        """Rows the dedup window caught in another date (a query only if the MERGE dropped some);
        None when ``quality.count_other_date_copies`` is off and some may have been."""
        if not dropped or not self.config.target.dedup_window:
            return 0
        if not self.config.quality.count_other_date_copies:
            return None  # not counted: a null, never a 0 that claims none
        mark = time.monotonic()
        target = self.config.target
        dates = [d for d in read_values(self.config, DATE_COLUMN,
                                         values.get(DATE_COLUMN, []), spans)
                 if isinstance(d, date)]
        window = target.time_window or target.date_window
        with merge_settings(spark):  # the same join as the MERGE's, in one job
            found = count_other_date_copies(target.ref.read(spark), deduped, target.dedup_keys,
                                            DATE_COLUMN, dates, window, self.schema.time_column)
        stages["other_date"] = time.monotonic() - mark
        return found

