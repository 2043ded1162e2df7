"""A micro-batch's one Spark job before its MERGEs: parse, in-batch dedup, and its counts.

One local checkpoint (:mod:`pipelines.sink.materialize`) holds every row the batch's commits
need: the deduplicated good records (target rows, raw bytes dropped) and every bad record (with
its raw bytes, for the quarantine). The counts the commits and metrics need come back with that
same job as observed metrics (``DataFrame.observe``), instead of a ``collect()`` job each:

* records in (each survivor carries the size of its key's group), bad records, unique rows;
* the smallest and largest offset of the bad records (the quarantine MERGE's range filter);
* the distinct partition values of the target rows (the target MERGE's partition literals);
* with an event-time dedup window, the time buckets of the target rows (the MERGE's time slice);
* the smallest and largest value of the key's first column over the target rows (the
  MERGE's key range: files whose statistics lie outside it cannot hold a copy);
* freshness (:mod:`pipelines.sink.freshness`) and the mode's own counts (upsert: the deletes).

The observations sit after the dedup's shuffle, in the job's result stage: Spark applies a
result task's accumulator updates once, even when the task or the stage before it is retried,
so the counts are exact. The survivor per key is the one the write mode picks
(:meth:`pipelines.sink.modes.base.WriteMode.survivor_order`: the first copy for insert-only,
the latest version for upsert): a total order, so a replayed batch keeps the same rows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from pyspark.sql import Column, DataFrame, Observation, Window
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BooleanType,
    ByteType,
    DataType,
    DateType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
)

from pipelines import faults
from pipelines.config.model import PipelineConfig
from pipelines.errors import SchemaError
from pipelines.formats.decoded import skipped
from pipelines.sink import freshness
from pipelines.sink.event_window import Span, bucket_of
from pipelines.sink.event_window import spans as event_spans
from pipelines.sink.materialize import materialize, release
from pipelines.sink.modes.choice import mode_for
from pipelines.sink.parse import INGESTED_AT
from pipelines.sink.partitions import partition_values
from pipelines.sink.records import EventRecords, Records, records_for
from schemas.base import KAFKA_KEY_COLUMN, EventSchema

_RANK, _COPIES, _GOOD = "_rank", "_copies", "_good"
#: At most this many classifications of one batch: a change stream's first pass may find
#: schemas it has not learned, and learns every one of them before the second.
_PASSES = 3


def _good() -> Column:
    """A good record (the target's), as opposed to one for the quarantine."""
    return F.col("_reason").isNull()

#: Key types whose min/max Delta keeps in each file's statistics, and sql.literal renders.
_RANGED = (StringType, IntegerType, LongType, ShortType, ByteType, DateType)


def _bad() -> Column:
    """A record for the quarantine (not one that is skipped: a change stream's tombstone)."""
    return F.col("_reason").isNotNull() & ~skipped(F.col("_reason"))


#: Partition column types whose values survive the observation's JSON unchanged.
_OBSERVABLE = (StringType, DateType, IntegerType, LongType, ShortType, ByteType, BooleanType)


@dataclass
class Prepared:
    """A batch's materialized rows and what was observed on them.

    Attributes:
        rows: good (deduplicated) and bad records, materialized; ``_reason`` tells them apart.
        records_in: records in the batch.
        quarantined: bad records.
        unique: good records left after the in-batch dedup (offered to the target MERGE).
        values: partition column -> the distinct values of the good rows.
        bad_offsets: (lowest, highest) Kafka offset of the bad records, None without any.
        fresh: the good rows' freshness.
        counts: more counts for the commit (upsert: ``deletes``; ``skipped``: a change
            stream's tombstones, neither landed nor quarantined).
        spans: with an event-time ``dedup_window``, the event-time ranges the target MERGE
            reads (:mod:`pipelines.sink.event_window`); None otherwise.
        key_range: the (lowest, highest) value of the key's first column over the good
            rows, None without any (or for a key type whose statistics Delta does not keep).
        keys: the key's columns (a change stream's: learned from its records).
        records: the records' format, which selects the target rows.
        observed: every value observed on the batch's job.
    """

    rows: DataFrame
    records_in: int
    quarantined: int
    unique: int
    values: dict[str, list[Any]]
    bad_offsets: tuple[int, int] | None
    fresh: freshness.Freshness
    counts: dict[str, int] = field(default_factory=dict)
    spans: list[Span] | None = None
    key_range: tuple[Any, Any] | None = None
    keys: tuple[str, ...] = ()
    records: Records | None = None
    observed: dict[str, Any] = field(default_factory=dict)

    @property
    def skipped(self) -> int:
        """Records neither landed nor quarantined (a change stream's tombstones)."""
        return int(self.counts.get("skipped", 0))

    def events(self, schema: EventSchema, config: PipelineConfig) -> DataFrame:
        """The target MERGE's source: the good rows as target rows, with the mode's columns
        (upsert: ``_deleted``)."""
        records = self.records or EventRecords(config, schema)
        return records.valid(self.rows, mode_for(config).source_columns())


def staging_location(config: PipelineConfig) -> str:
    """Where a batch is staged when the session refuses local checkpoints (a Delta table under
    the checkpoint's root, overwritten by each batch)."""
    return f"{config.checkpoint.rstrip('/')}/_deltasink/staging"


def prepare(batch: DataFrame, schema: EventSchema, config: PipelineConfig,
            fault_spec: str | None = None, records: Records | None = None) -> Prepared:
    """Parse, classify and deduplicate ``batch`` in one Spark job, observing its counts.

    A change stream's job may find a schema its run has not learned yet (the first batch's
    are learned before it): the batch is then classified again with it, before anything is
    written (:meth:`pipelines.sink.records.Records.learn`).

    Args:
        batch: the micro-batch (Spark's Kafka source rows).
        schema: the event schema.
        config: the pipeline config (dedup key, mode, partitioning, record size limit).
        fault_spec: the test-only fault spec (``no_local_checkpoint``: stage the batch).
        records: the records' format (default: the config's; a change stream's learns, so
            a query passes the same one to every batch).

    Returns:
        The materialized rows (release them with ``materialize.release``) and their counts.
    """
    records = records or records_for(config, schema)
    for _ in range(_PASSES):
        prepared = _prepare(batch, records, config, fault_spec)
        if not records.learn(prepared.observed):
            return prepared
        release(prepared.rows)
    raise SchemaError(f"batch schemas still unknown after {_PASSES} passes: "
                      f"{sorted(prepared.observed)}")


def _prepare(batch: DataFrame, records: Records, config: PipelineConfig,
             fault_spec: str | None) -> Prepared:
    """One pass of :func:`prepare`."""
    target = config.target
    mode = mode_for(config)
    classified = records.classify(batch, config.source.max_record_bytes)
    rows = (classified.withColumn("raw_value", F.when(_bad(), F.col("raw_value")))
            .withColumn(INGESTED_AT, F.current_timestamp()))
    # The group's columns are computed once, so both windows share one shuffle and one sort.
    keys = {f"_key{i}": _key(k) for i, k in enumerate((*records.keys, *mode.groups()))}
    rows = rows.withColumns({_GOOD: _good(), **keys})
    group = Window.partitionBy(_GOOD, *keys).orderBy(*mode.survivor_order())
    whole = group.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    kept = (rows.select("*", F.row_number().over(group).alias(_RANK),
                        F.count(F.lit(1)).over(whole).alias(_COPIES))
            .where(~_good() | (F.col(_RANK) == 1)).drop(_RANK, _GOOD, *keys))
    kept = mode.flag(kept, _good())
    parts = list(target.prune_by)
    observable = all(isinstance(kept.schema[p].dataType, _OBSERVABLE) for p in parts)
    observed = Observation()
    wanted = [*_count_metrics(parts if observable else []),
              *freshness.metrics(records.time_column, only=_good()), *mode.metrics(),
              *records.metrics()]
    first = _key(records.keys[0]) if records.keys else None
    ranged = first is not None and isinstance(
        kept.select(first.alias("k")).schema["k"].dataType, _RANGED)
    if ranged and first is not None:
        wanted += [F.min(F.when(_good(), first)).alias("key_low"),
                   F.max(F.when(_good(), first)).alias("key_high")]
    window = target.time_window
    if window is not None:  # the time buckets of the good rows (as JSON, like the values)
        wanted.append(F.to_json(F.collect_set(F.when(
            _good(), bucket_of(records.time_column, window)))).alias("buckets"))
    # _COPIES stays in the blocks: the target and quarantine rows select their own columns.
    materialized = materialize(kept.observe(observed, *wanted), staging_location(config),
                               refused=bool(faults.setting("no_local_checkpoint", fault_spec)))
    got = observed.get
    if not got:  # Spark Connect 4.0 does not deliver a checkpoint's observation: a job of its
        row = materialized.agg(*wanted).first()  # own over the blocks, not the source again
        got = row.asDict() if row is not None else {}
    bad, unique = int(got.get("bad") or 0), int(got.get("unique") or 0)
    skips = int(got.get("skipped") or 0)
    if observable:
        values = _values(str(got.get("values") or "{}"), {p: kept.schema[p].dataType
                                                          for p in parts})
    else:  # a type JSON would not bring back as is (decimal, timestamp): a job of its own
        _, values = partition_values(records.valid(materialized), target.prune_by)
    low, high = got.get("low"), got.get("high")
    key_low, key_high = got.get("key_low"), got.get("key_high")
    return Prepared(rows=materialized, records_in=int(got.get("copies") or 0) + bad + skips,
                    quarantined=bad, unique=unique, values=values,
                    bad_offsets=None if low is None or high is None else (int(low), int(high)),
                    fresh=freshness.read(got),
                    counts={**mode.counts(got), **({"skipped": skips} if skips else {})},
                    spans=None if window is None else event_spans(
                        json.loads(str(got.get("buckets") or "[]")), window),
                    key_range=None if key_low is None or key_high is None
                    else (key_low, key_high),
                    keys=records.keys, records=records, observed=dict(got))


def _key(column: str) -> Column:
    """A dedup key column over the classified rows (the Kafka key is compared as text)."""
    return F.col("kafka_key").cast("string") if column == KAFKA_KEY_COLUMN else F.col(column)


def _count_metrics(parts: list[str]) -> list[Column]:
    """The counts observed on the kept rows (partition values as JSON: an observed array
    would reach Python as a bare Java object)."""
    metrics = [F.count_if(_bad()).alias("bad"), F.count_if(_good()).alias("unique"),
               F.sum(F.when(_good(), F.col(_COPIES))).alias("copies"),
               F.count_if(skipped(F.col("_reason"))).alias("skipped"),
               F.min(F.when(_bad(), F.col("kafka_offset"))).alias("low"),
               F.max(F.when(_bad(), F.col("kafka_offset"))).alias("high")]
    if parts:
        sets = [F.collect_set(F.when(_good(), F.col(p))).alias(p) for p in parts]
        metrics.append(F.to_json(F.struct(*sets)).alias("values"))
    return metrics


def _values(text: str, types: dict[str, DataType]) -> dict[str, list[Any]]:
    """The observed partition values, typed back (dates as ``date``)."""
    raw = json.loads(text)
    return {p: sorted(date.fromisoformat(v) if isinstance(kind, DateType) else v
                      for v in raw.get(p) or [])
            for p, kind in types.items()}
