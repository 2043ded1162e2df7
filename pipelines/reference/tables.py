"""The tables reference: the columns of every table deltasink writes, from their Spark schemas."""

from __future__ import annotations

from types import MappingProxyType

from pyspark.sql.types import DecimalType, StructField, StructType

from pipelines.formats.debezium.changes import TRUNCATE
from pipelines.reference.markdown import cell, code, generated_note, table
from pipelines.sink.modes.replica import DELETED_AT, DELETES_SCHEMA
from pipelines.sink.modes.upsert import DELETED
from pipelines.sink.tables import QUARANTINE_SCHEMA
from quality.results import METRICS_SCHEMA, RESULTS_SCHEMA
from schemas import resolve_schema
from schemas.changes import CHANGE_SCHEMA, END_AT, OP, POSITION, SOURCE_TS, START_AT

#: What each column holds. A column of a schema below that is missing here fails ``tests/docs``.
MEANINGS = MappingProxyType({
    # target (events_v1) and the Kafka coordinates every target row carries
    "event_id": "the event's id (the default dedup key)",
    "event_type": "the event's type",
    "event_time": "when the event happened (a timestamp with a zone in the record)",
    "payload": "the event's payload object, as JSON text",
    "event_date": "the UTC date of `event_time`; the partition column",
    "kafka_topic": "the record's topic",
    "kafka_partition": "the record's partition",
    "kafka_offset": "the record's offset",
    "kafka_timestamp": "the record's Kafka timestamp",
    "ingested_at": "when the batch that landed the row ran",
    DELETED: "`target.mode: upsert` only: the version is a tombstone (`delete_when` was true)",
    # a change stream's target (source.format: debezium), and its mode's own tables
    OP: "the change that made the row: `r` (a snapshot's read), `c`, `u`, `d`; `t` (a truncate, "
        "changes table only)",
    POSITION: "the change's source position (Postgres: its LSN); orders a key's changes",
    SOURCE_TS: "when the change was made in the database (`source.ts_ms`)",
    START_AT: "`scd2`: the position (or `sequence_by` value) of the change that opened the version",
    END_AT: "`scd2`: the position of the change that closed it; null for the current version",
    DELETED_AT: "when the delete was recorded; `target.delete_retention` counts from it",
    TRUNCATE: "the record is a truncate (no key): it deletes every row older than its position",
    # quarantine
    "kafka_key": "the record's raw key bytes",
    "raw_value": "the record's raw value bytes",
    "reason": "why it was quarantined (the first failure), e.g. `missing:event_type`",
    "pipeline": "the pipeline's name",
    "batch_id": "the micro-batch that quarantined it",
    "quarantined_at": "when it was quarantined",
    "record_hash": "xxhash64 of key and value; part of the quarantine MERGE key",
    "redriven_at": "when `quarantine redrive` landed it (null until then)",
    "redriven_version": "the target version at which the redrive found it in the target",
    # quality results
    "run_id": "the validation's id (a run's id, `<run_id>-c<n>` for a cadence validation, "
              "`adhoc-<id>` for `deltasink validate`); in run metrics, the run's id",
    "table_version": "the target version validated",
    "expectation": "the Great Expectations expectation",
    "column": "its column (null for a table-level expectation)",
    "success": "whether it passed",
    "observed_value": "what was observed, as text",
    "unexpected_count": "how many rows broke it",
    "sample_keys": "a few keys of rows that broke it",
    "validated_at": "when it was validated",
    # run metrics
    "query_id": "the streaming query's id (part of the txnAppId)",
    "records_in": "records the batch read",
    "quarantined": "records it quarantined",
    "duplicates_in_batch": "copies dropped inside the batch (in upsert mode: superseded versions)",
    "duplicates_by_merge": "copies the MERGE found already in the target",
    "inserted": "rows inserted",
    "duration_s": "the batch's seconds",
    "started_at": "when the batch started",
    "replayed": "the batch was a replay that Delta skipped (it changed nothing)",
    "target_version": "the target version the batch committed",
    "event_dates": "the `event_date` values the batch wrote, comma-separated",
    "stage_seconds": "seconds per stage of the batch, `stage=seconds` comma-separated",
    "recorded_at": "when the row was written",
    "duplicates_other_date": "copies `dedup_window` caught in another date (null unless "
                             "`quality.count_other_date_copies`)",
    "newest_event_time": "the newest event time of the rows offered to the MERGE",
    "newest_kafka_timestamp": "the newest Kafka timestamp of those rows",
    "freshness_event_s": "the batch's end minus `newest_event_time`",
    "freshness_kafka_s": "the batch's end minus `newest_kafka_timestamp`",
    "latency_p50_s": "median of `ingested_at - kafka_timestamp` over the batch's rows",
    "latency_p99_s": "99th percentile of the same",
    "lag_records": "records Kafka held past the batch's end offsets when Spark planned it",
})


def _schemas() -> list[tuple[str, str, StructType]]:
    target = resolve_schema("events_v1").target_schema()
    return [
        ("Target (schema `events_v1`)", "`target.path` / `target.table`. Another schema has its "
         "own fields; the Kafka columns and `ingested_at` are always there, and "
         "`target.mode: upsert` adds `_deleted`.", target),
        ("Change stream target (`source.format: debezium`)", "The source table's columns, "
         "learned from its events, then these; `target.mode: scd2` adds `__START_AT` and "
         "`__END_AT` (docs/guides/cdc.md).", StructType([
             *CHANGE_SCHEMA.target_schema().fields,
             StructField(START_AT, DecimalType(38, 0), False),
             StructField(END_AT, DecimalType(38, 0), True)])),
        ("Replica deletes", "`target.deletes_path` / `deletes_table`: a change stream's deleted "
         "keys (the key's columns, then these) and its last truncate, kept for "
         "`target.delete_retention`.", DELETES_SCHEMA),
        ("Quarantine", "`target.quarantine_path` / `quarantine_table`. MERGE key: topic, "
         "partition, offset, `kafka_timestamp`, `record_hash`.", QUARANTINE_SCHEMA),
        ("Quality results", "`quality.results_path` / `results_table`: one row per expectation "
         "per validation.", RESULTS_SCHEMA),
        ("Run metrics", "`quality.metrics_path` / `metrics_table`: one row per micro-batch, "
         "partitioned by `pipeline`.", METRICS_SCHEMA),
    ]


def columns() -> dict[str, list[str]]:
    """Every documented table's column names, by table title."""
    return {title: schema.fieldNames() for title, _, schema in _schemas()}


def render() -> str:
    """The tables reference page (Markdown)."""
    out = ["# Tables\n", generated_note("the Spark schemas in `pipelines/sink/tables.py`, "
                                        "`quality/results.py`, `schemas/events_v1.py`, "
                                        "`schemas/changes.py` and "
                                        "`pipelines/sink/modes/replica.py`")]
    for title, text, schema in _schemas():
        rows = [[code(f.name), code(f.dataType.simpleString()),
                 "yes" if f.nullable else "no", cell(MEANINGS.get(f.name, ""))]
                for f in schema.fields]
        out += [f"## {title}\n", text + "\n", table(["column", "type", "nullable", "meaning"],
                                                    rows)]
    return "\n".join(out)
