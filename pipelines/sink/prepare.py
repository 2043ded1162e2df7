"""A micro-batch's one Spark job before its MERGEs: parse, in-batch dedup, and its counts.

One local checkpoint (:mod:`pipelines.sink.materialize`) holds every row the batch's commits
need: the deduplicated good records (target rows, raw bytes dropped) and every bad record (with
its raw bytes, for the quarantine). The counts the commits and metrics need come back with that
same job as observed metrics (``DataFrame.observe``), instead of a ``collect()`` job each:

* records in (each survivor carries the size of its key's group), bad records, unique rows;
* the smallest and largest offset of the bad records (the quarantine MERGE's range filter);
* the distinct partition values of the target rows (the target MERGE's partition literals);
* with an event-time dedup window, the time buckets of the target rows (the MERGE's time slice);
* the smallest and largest value of the dedup key's first column over the target rows (the
  MERGE's key range: files whose statistics lie outside it cannot hold a copy);
* freshness (:mod:`pipelines.sink.freshness`) and, in upsert mode, the deletes.

The observations sit after the dedup's shuffle, in the job's result stage: Spark applies a
result task's accumulator updates once, even when the task or the stage before it is retried,
so the counts are exact. The survivor per key is the one ``dedup_on_key`` (insert-only) or
``keep_latest`` (upsert) picks: the same total order, so a replayed batch keeps the same rows.
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
from pipelines.sink import freshness
from pipelines.sink.avro import writer_schemas
from pipelines.sink.dedup import FIRST_BY
from pipelines.sink.event_window import Span, bucket_of
from pipelines.sink.event_window import spans as event_spans
from pipelines.sink.materialize import materialize
from pipelines.sink.parse import INGESTED_AT, classify, valid_events
from pipelines.sink.target_merge import partition_values
from pipelines.sink.upsert import DELETED, delete_metrics, sequence_columns, upsert_counts
from schemas.base import KAFKA_KEY_COLUMN, EventSchema

_RANK, _COPIES, _GOOD = "_rank", "_copies", "_good"


def _good() -> Column:
    """A good record (the target's), as opposed to one for the quarantine."""
    return F.col("_reason").isNull()

#: Key types whose min/max Delta keeps in each file's statistics, and sql.literal renders.
_RANGED = (StringType, IntegerType, LongType, ShortType, ByteType, DateType)
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
        counts: more counts for the commit (upsert: ``deletes``).
        spans: with an event-time ``dedup_window``, the event-time ranges the target MERGE
            reads (:mod:`pipelines.sink.event_window`); None otherwise.
        key_range: the (lowest, highest) value of the dedup key's first column over the good
            rows, None without any (or for a key type whose statistics Delta does not keep).
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

    def events(self, schema: EventSchema, config: PipelineConfig) -> DataFrame:
        """The target MERGE's source: the good rows as target rows (upsert: with ``_deleted``)."""
        keep = (DELETED,) if config.target.mode == "upsert" else ()
        return valid_events(self.rows, schema, keep)


def staging_location(config: PipelineConfig) -> str:
    """Where a batch is staged when the session refuses local checkpoints (a Delta table under
    the checkpoint's root, overwritten by each batch)."""
    return f"{config.checkpoint.rstrip('/')}/_deltasink/staging"


def prepare(batch: DataFrame, schema: EventSchema, config: PipelineConfig,
            fault_spec: str | None = None) -> Prepared:
    """Parse, classify and deduplicate ``batch`` in one Spark job, observing its counts.

    Args:
        batch: the micro-batch (Spark's Kafka source rows).
        schema: the event schema.
        config: the pipeline config (dedup key, mode, partitioning, record size limit).
        fault_spec: the test-only fault spec (``no_local_checkpoint``: stage the batch).

    Returns:
        The materialized rows (release them with ``materialize.release``) and their counts.
    """
    target = config.target
    classified = classify(batch, schema, config.source.max_record_bytes,
                          avro=writer_schemas(config))
    rows = (classified.withColumn("raw_value", F.when(~_good(), F.col("raw_value")))
            .withColumn(INGESTED_AT, F.current_timestamp()))
    if target.mode == "upsert":
        order = [F.col(c).desc_nulls_last() for c in sequence_columns(target.sequence_by)]
    else:
        order = [F.col(c).asc_nulls_last() for c in FIRST_BY]
    # The group's columns are computed once, so both windows share one shuffle and one sort.
    keys = {f"_key{i}": _key(k) for i, k in enumerate(target.dedup_keys)}
    rows = rows.withColumns({_GOOD: _good(), **keys})
    group = Window.partitionBy(_GOOD, *keys).orderBy(*order)
    whole = group.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    kept = (rows.select("*", F.row_number().over(group).alias(_RANK),
                        F.count(F.lit(1)).over(whole).alias(_COPIES))
            .where(~_good() | (F.col(_RANK) == 1)).drop(_RANK, _GOOD, *keys))
    if target.mode == "upsert":
        flag = (F.coalesce(F.expr(target.delete_when), F.lit(False)) if target.delete_when
                else F.lit(False))
        kept = kept.withColumn(DELETED, F.when(_good(), flag))
    parts = list(target.prune_by)
    observable = all(isinstance(kept.schema[p].dataType, _OBSERVABLE) for p in parts)
    observed = Observation()
    wanted = [*_count_metrics(parts if observable else []),
              *freshness.metrics(schema.time_column, only=_good()), *delete_metrics(target)]
    first = _key(target.dedup_keys[0])
    ranged = isinstance(kept.select(first.alias("k")).schema["k"].dataType, _RANGED)
    if ranged:
        wanted += [F.min(F.when(_good(), first)).alias("key_low"),
                   F.max(F.when(_good(), first)).alias("key_high")]
    window = target.time_window
    if window is not None:  # the time buckets of the good rows (as JSON, like the values)
        wanted.append(F.to_json(F.collect_set(F.when(
            _good(), bucket_of(schema.time_column, window)))).alias("buckets"))
    # _COPIES stays in the blocks: the target and quarantine rows select their own columns.
    materialized = materialize(kept.observe(observed, *wanted), staging_location(config),
                               refused=bool(faults.setting("no_local_checkpoint", fault_spec)))
    got = observed.get
    if not got:  # Spark Connect 4.0 does not deliver a checkpoint's observation: a job of its
        row = materialized.agg(*wanted).first()  # own over the blocks, not the source again
        got = row.asDict() if row is not None else {}
    bad, unique = int(got.get("bad") or 0), int(got.get("unique") or 0)
    if observable:
        values = _values(str(got.get("values") or "{}"), {p: kept.schema[p].dataType
                                                          for p in parts})
    else:  # a type JSON would not bring back as is (decimal, timestamp): a job of its own
        _, values = partition_values(valid_events(materialized, schema), target.prune_by)
    low, high = got.get("low"), got.get("high")
    key_low, key_high = got.get("key_low"), got.get("key_high")
    return Prepared(rows=materialized, records_in=int(got.get("copies") or 0) + bad,
                    quarantined=bad, unique=unique, values=values,
                    bad_offsets=None if low is None or high is None else (int(low), int(high)),
                    fresh=freshness.read(got), counts=upsert_counts(got, target),
                    spans=None if window is None else event_spans(
                        json.loads(str(got.get("buckets") or "[]")), window),
                    key_range=None if key_low is None or key_high is None
                    else (key_low, key_high))


def _key(column: str) -> Column:
    """A dedup key column over the classified rows (the Kafka key is compared as text)."""
    return F.col("kafka_key").cast("string") if column == KAFKA_KEY_COLUMN else F.col(column)


def _count_metrics(parts: list[str]) -> list[Column]:
    """The counts observed on the kept rows (partition values as JSON: an observed array
    would reach Python as a bare Java object)."""
    metrics = [F.count_if(~_good()).alias("bad"), F.count_if(_good()).alias("unique"),
               F.sum(F.when(_good(), F.col(_COPIES))).alias("copies"),
               F.min(F.when(~_good(), F.col("kafka_offset"))).alias("low"),
               F.max(F.when(~_good(), F.col("kafka_offset"))).alias("high")]
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
