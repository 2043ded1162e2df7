"""``deltasink quarantine redrive``: re-parse quarantined records with the current schema.

The plan is read from one version of the quarantine table: the rows not yet redriven (filtered
by ``--reason`` and ``--since``) become Kafka-shaped rows again (raw key and value bytes, topic,
partition, offset, timestamp) and go through the pipeline's own parse
(:func:`pipelines.sink.parse.classify`, with the pipeline's current schema and
``max_record_bytes``) and in-batch dedup (:func:`pipelines.sink.dedup.dedup_on_key`). What now
parses is sent to the target by :mod:`pipelines.ops.redrive_commit`, exactly once; what still
fails keeps its reason, or gets the new one.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.config.model import PipelineConfig
from pipelines.errors import ConfigError
from pipelines.formats.decoders import decoder_for
from pipelines.ledger.single_writer import single_writer
from pipelines.ops.redrive_commit import RedriveResult, commit_redrive
from pipelines.ops.redrive_plan import OLD_REASON, RedrivePlan
from pipelines.sink.dedup import dedup_on_key
from pipelines.sink.materialize import materialize
from pipelines.sink.parse import classify, valid_events
from pipelines.sink.partitions import partition_values
from pipelines.sink.tables import ensure_sink_tables
from schemas import EventSchema


def parse_since(text: str | None) -> datetime | None:
    """``--since`` as an aware datetime (UTC unless it names a zone), or None.

    Raises:
        ConfigError: not an ISO-8601 timestamp.
    """
    if not text:
        return None
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise ConfigError(f"--since {text!r} is not a timestamp; use ISO 8601, e.g. "
                          "2026-11-23T09:00:00Z.") from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def reason_matches(reason: str) -> Column:
    """``reason`` exactly, or any reason of that kind (``missing`` matches ``missing:<f>``)."""
    col = F.col("reason")
    return (col == F.lit(reason)) | col.startswith(F.lit(f"{reason}:"))


def quarantine_filter(reason: str | None, since: datetime | None) -> Column:
    """The ``--reason`` / ``--since`` filter on quarantine rows (``quarantined_at >= since``)."""
    cond = F.lit(True)
    if reason:
        cond = cond & reason_matches(reason)
    if since is not None:  # an aware datetime is an exact instant as a Spark literal
        cond = cond & (F.col("quarantined_at") >= F.lit(since))
    return cond


def as_kafka_rows(rows: DataFrame) -> DataFrame:
    """Quarantine rows in the shape of Spark's Kafka source, plus the old reason."""
    return rows.select(
        F.col("kafka_key").alias("key"), F.col("raw_value").alias("value"),
        F.col("kafka_topic").alias("topic"), F.col("kafka_partition").alias("partition"),
        F.col("kafka_offset").alias("offset"), F.col("kafka_timestamp").alias("timestamp"),
        F.col("reason").alias(OLD_REASON))


def plan_redrive(spark: SparkSession, config: PipelineConfig, schema: EventSchema, *,
                 reason: str | None = None, since: datetime | None = None,
                 say: Callable[[str], None] = print) -> RedrivePlan:
    """Select the rows to redrive, re-parse them with ``schema`` and deduplicate.

    Args:
        spark: the session.
        config: the pipeline config.
        schema: the pipeline's current event schema.
        reason: only rows with this reason (or this kind of reason, e.g. ``missing``).
        since: only rows quarantined at or after this time.
        say: receives one progress line.

    Raises:
        ConfigError: the quarantine table does not exist.
    """
    ref = config.target.quarantine_ref
    if not ref.exists(spark):
        raise ConfigError(f"quarantine {ref.describe()} does not exist yet; nothing to redrive.")
    version = ref.latest_version(spark)
    rows = ref.read(spark, version).where(quarantine_filter(reason, since))
    if "redriven_at" in rows.columns:  # a table from before redrive (dry run): none redriven
        rows = rows.where(F.col("redriven_at").isNull())
    classified = materialize(classify(as_kafka_rows(rows), schema,
                                      config.source.max_record_bytes, keep=(OLD_REASON,),
                                      decoder=decoder_for(config)))
    outcomes = {(str(r[OLD_REASON]), r["_reason"]): int(r["n"]) for r in classified
                .groupBy(OLD_REASON, "_reason").agg(F.count(F.lit(1)).alias("n")).collect()}
    deduped = materialize(dedup_on_key(valid_events(classified, schema),
                                       config.target.dedup_keys))
    unique, values = partition_values(deduped, config.target.prune_by)
    plan = RedrivePlan(version, classified, deduped, values, unique, outcomes)
    say(f"redrive plan: quarantine version {version}, {plan.selected} rows selected with schema "
        f"{schema.name}: {plan.fixed} now parse, {plan.selected - plan.fixed} still fail")
    return plan


def redrive(spark: SparkSession, config: PipelineConfig, *, reason: str | None = None,
            since: str | None = None, dry_run: bool = False,
            say: Callable[[str], None] = print) -> RedriveResult | None:
    """Re-parse quarantined records with the current schema; land those that parse, once.

    Args:
        spark: the session.
        config: the pipeline config (its ``schema`` is the one records are re-parsed with).
        reason: only rows with this reason, or this kind of reason (``missing``).
        since: only rows quarantined at or after this time (ISO 8601, UTC unless zoned).
        dry_run: print the plan and change nothing.
        say: receives one line per step.

    Returns:
        What was committed (None for a dry run).

    Raises:
        ConfigError: a bad ``since``, or the target or quarantine table does not exist.
        CheckpointError: the pipeline is running (it holds the checkpoint's lease).
        CommitError: a commit failed; what was committed is consistent, run it again.
    """
    if config.change_stream:
        raise ConfigError("quarantine redrive does not take a change stream "
                          "(source.format: debezium) yet; list its quarantined records with "
                          "`deltasink quarantine list`")
    schema = config.event_schema()
    when = parse_since(since)
    if not config.target.ref.exists(spark):
        raise ConfigError(f"target {config.target.ref.describe()} does not exist; run the "
                          "pipeline first (`deltasink run`).")
    filters = "".join([f" reason={reason}" if reason else "", f" since={since}" if since else ""])
    say(("dry run: would redrive" if dry_run else "redriving") + f" quarantine of pipeline "
        f"{config.name} with schema {schema.name}" + (f" ({filters.strip()})" if filters else ""))
    if dry_run:
        plan = plan_redrive(spark, config, schema, reason=reason, since=when, say=say)
        try:
            for line in plan.lines():
                say(line)
        finally:
            plan.release()
        say("dry run: nothing changed")
        return None
    with single_writer(spark, config.checkpoint, config.name) as lease:
        for note in ensure_sink_tables(spark, config, schema):  # quarantine columns, relaxed
            say(note)  # NOT NULLs, the config's table properties, the schema's widened types
        plan = plan_redrive(spark, config, schema, reason=reason, since=when, say=say)
        try:
            for line in plan.lines():
                say(line)
            result = commit_redrive(spark, config, plan,
                                    guard=lambda txn: lease.verify(spark, txn), say=say)
        finally:
            plan.release()
    say(f"redrive done: redriven={result.redriven} inserted={result.inserted} "
        f"still_failing={plan.selected - plan.fixed} reasons_updated={result.reasons_updated}")
    return result
