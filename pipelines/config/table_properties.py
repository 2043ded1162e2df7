"""The Delta table properties ``target.properties`` and ``target.quarantine_properties`` accept.

The list is Delta 4.0.0's own (``DeltaConfigs`` in delta-spark 4.0.0, the pinned version: 47
``delta.*`` keys), each with what it does for this sink or why the sink refuses it. A key Delta
does not know is refused before the run (Delta would refuse it at ``CREATE TABLE``, after the
run started; a misspelt key is the usual cause), and so is a value Delta would refuse. Keys
without the ``delta.`` prefix are free-form table properties (a team, a data owner), except the
few Spark reserves.

Every accepted key can be set at creation and changed later with ``ALTER TABLE ... SET
TBLPROPERTIES`` (:mod:`pipelines.sink.properties`), except ``delta.columnMapping.mode``, which
Delta changes in place only from ``none`` to ``name``. What a property may not do to the
sink's guarantees (``delta.appendOnly`` with upserts, retentions too short for recovery) is
checked with the pipeline's other settings (:mod:`pipelines.config.property_rules`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from difflib import get_close_matches
from typing import Any

from pipelines.config.units import parse_interval

BOOL, INTERVAL, COUNT, INDEXED, TEXT = "true or false", "interval", "integer > 0", \
    "integer >= -1", "text"
#: The property that turns type widening on (``pipelines/sink/widen.py``).
TYPE_WIDENING = "delta.enableTypeWidening"
COLUMN_MAPPING = "delta.columnMapping.mode"


@dataclass(frozen=True)
class TableProperty:
    """One Delta table property: its values, and what it means for deltasink."""

    key: str
    values: str | tuple[str, ...]
    note: str
    refused: bool = False


_BOOKKEEPING = "Delta's own bookkeeping, never set by hand"
_UNIFORM = ("UniForm (Iceberg metadata) needs the delta-iceberg module, which deltasink's "
            "sessions do not load")
_CONVERT = "a setting of CONVERT TO DELTA from Iceberg, not of a table deltasink creates"
_PREVIEW = "a preview feature of Delta 4.0"

PROPERTIES: dict[str, TableProperty] = {p.key.lower(): p for p in (
    TableProperty("delta.appendOnly", BOOL, "Delta refuses every UPDATE and DELETE. Refused "
                  "with mode: upsert and on the quarantine (quarantine redrive marks rows)."),
    TableProperty("delta.enableChangeDataFeed", BOOL, "Delta records each commit's row changes "
                  "for table_changes() and readChangeFeed readers (the next job's input)."),
    TableProperty("delta.enableDeletionVectors", BOOL, "MERGE updates mark replaced rows "
                  "deleted instead of rewriting their files (mode: upsert)."),
    TableProperty("delta.enableRowTracking", BOOL, "A stable id and commit version for every "
                  "row; set on an existing table, Delta backfills them."),
    TableProperty(TYPE_WIDENING, BOOL, "Lets a widened schema field change its column's type "
                  "in place. Adds the typeWidening table feature (a protocol upgrade)."),
    TableProperty(COLUMN_MAPPING, ("none", "name", "id"), "Columns by id or name in the data "
                  "files. On an existing table Delta changes it only from none to name."),
    TableProperty("delta.logRetentionDuration", INTERVAL, "How long the log keeps commits "
                  "(default 30 days); at least 168 hours, for recovery."),
    TableProperty("delta.deletedFileRetentionDuration", INTERVAL, "How long VACUUM keeps "
                  "removed files (default 1 week); at least 168 hours. Maintenance's VACUUM keeps "
                  "a longer one."),
    TableProperty("delta.checkpointRetentionDuration", INTERVAL, "How long old checkpoints "
                  "are kept (default 2 days)."),
    TableProperty("delta.checkpointInterval", COUNT, "Commits between log checkpoints "
                  "(default 10)."),
    TableProperty("delta.checkpointPolicy", ("classic", "v2"), "The checkpoint format; v2 "
                  "adds the v2Checkpoint table feature."),
    TableProperty("delta.checkpoint.writeStatsAsJson", BOOL, "File statistics in checkpoints, "
                  "as JSON (default true)."),
    TableProperty("delta.checkpoint.writeStatsAsStruct", BOOL, "File statistics in "
                  "checkpoints, as a struct (default true)."),
    TableProperty("delta.enableExpiredLogCleanup", BOOL, "Whether commits past the log "
                  "retention are deleted (default true)."),
    TableProperty("delta.enableFullRetentionRollback", BOOL, "Whether every version within "
                  "the log retention can be restored (default true)."),
    TableProperty("delta.dropFeatureTruncateHistory.retentionDuration", INTERVAL,
                  "The log retention of DROP FEATURE ... TRUNCATE HISTORY."),
    TableProperty("delta.sampleRetentionDuration", INTERVAL, "Retention of Delta's sample "
                  "files (unused by deltasink)."),
    TableProperty("delta.autoOptimize.autoCompact", BOOL, "Compact small files after each "
                  "commit (its OPTIMIZE commits are never read as batches)."),
    TableProperty("delta.autoOptimize.optimizeWrite", BOOL, "Shuffle before writing, for "
                  "fewer, larger files."),
    TableProperty("delta.autoOptimize", BOOL, "The older switch of autoCompact and optimizeWrite "
                  "together."),
    TableProperty("delta.dataSkippingNumIndexedCols", INDEXED, "How many leading columns get "
                  "file statistics (default 32; -1: all). The event-time dedup window skips "
                  "files by its time field's statistics: keep that field among them."),
    TableProperty("delta.dataSkippingStatsColumns", TEXT, "The columns that get file "
                  "statistics, instead of the leading ones (keep the time field)."),
    TableProperty("delta.randomizeFilePrefixes", BOOL, "Random file name prefixes instead of "
                  "partition folders (for object stores that shard by prefix)."),
    TableProperty("delta.randomPrefixLength", COUNT, "Length of those prefixes (default 2)."),
    TableProperty("delta.compatibility.symlinkFormatManifest.enabled", BOOL, "Write "
                  "symlink manifests for readers without Delta support."),
    TableProperty("delta.isolationLevel", ("Serializable",), "Delta 4.0 knows only "
                  "Serializable."),
    TableProperty("delta.setTransactionRetentionDuration", INTERVAL, "Delta would forget the "
                  "(txnAppId, batch id) pairs that make a replayed batch a no-op.", True),
    TableProperty("delta.enableInCommitTimestamps", BOOL, "deltasink reads commit times as "
                  "the log files' modification times, which RESTORE TO TIMESTAMP would then "
                  "no longer resolve against (pipelines/ledger/deltalog.py).", True),
    TableProperty("delta.minReaderVersion", COUNT, "Delta sets the protocol from the features "
                  "the properties turn on: set those instead.", True),
    TableProperty("delta.minWriterVersion", COUNT, "Delta sets the protocol from the features "
                  "the properties turn on: set those instead.", True),
    TableProperty("delta.ignoreProtocolDefaults", BOOL, "Only whether a CREATE reads the "
                  "session's protocol defaults: set the properties wanted here instead.", True),
    TableProperty("delta.enableChangeDataCapture", BOOL, "The old name of "
                  "delta.enableChangeDataFeed: use that.", True),
    TableProperty("delta.coordinatedCommits.commitCoordinator-preview", TEXT, f"{_PREVIEW}: "
                  "commits through a coordinator, not the log files deltasink reads.", True),
    TableProperty("delta.coordinatedCommits.commitCoordinatorConf-preview", TEXT,
                  f"{_PREVIEW} (coordinated commits).", True),
    TableProperty("delta.coordinatedCommits.tableConf-preview", TEXT,
                  f"{_PREVIEW} (coordinated commits).", True),
    TableProperty("delta.redirectReaderWriter-preview", TEXT, f"{_PREVIEW}: sends the "
                  "table's reads and writes to another table.", True),
    TableProperty("delta.redirectWriterOnly-preview", TEXT, f"{_PREVIEW} (redirect).", True),
    TableProperty("delta.enableVariantShredding", BOOL, f"{_PREVIEW}, for VARIANT columns, "
                  "which deltasink's tables do not have.", True),
    TableProperty("delta.universalFormat.enabledFormats", TEXT, _UNIFORM + ".", True),
    TableProperty("delta.enableIcebergCompatV1", BOOL, _UNIFORM + ".", True),
    TableProperty("delta.enableIcebergCompatV2", BOOL, _UNIFORM + ".", True),
    TableProperty("delta.castIcebergTimeType", BOOL, _CONVERT + ".", True),
    TableProperty("delta.ignoreIcebergBucketPartition", BOOL, _CONVERT + ".", True),
    *(TableProperty(f"delta.{k}", TEXT, _BOOKKEEPING + ".", True) for k in (
        "columnMapping.maxColumnId", "inCommitTimestampEnablementVersion",
        "inCommitTimestampEnablementTimestamp", "requireCheckpointProtectionBeforeVersion")),
)}

#: ``delta.*`` prefixes Delta accepts beyond its keys, and why deltasink refuses them.
REFUSED_PREFIXES = {
    "delta.constraints.": "a CHECK constraint would fail a record's whole batch on every retry; "
                          "declare the rule in the schema, which quarantines the record",
    "delta.feature.": "turns a table feature on by name; set the property that enables it "
                      "(delta.enableDeletionVectors, delta.enableTypeWidening, ...)",
    "delta.universalformat.config.": _UNIFORM,
}
#: Table properties Spark reserves (set by its own clauses, or refused).
SPARK_RESERVED = ("comment", "collation", "location", "provider", "owner", "external",
                  "is_managed_location")


def text_value(value: Any) -> str:
    """A YAML value as a property's text: ``true``/``false`` for booleans, numbers as written."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float | str):
        return str(value)
    raise ValueError(f"{value!r} is not a property value (write text, a number or true/false)")


def _check_value(prop: TableProperty, value: str) -> str:
    """``value`` in Delta's spelling, or ValueError naming what the property takes."""
    kind = prop.values
    if isinstance(kind, tuple):
        found = next((v for v in kind if v.lower() == value.strip().lower()), None)
        if found is None:
            raise ValueError(f"one of {', '.join(kind)}, not {value!r}")
        return found
    if kind == BOOL:
        if value.strip().lower() not in ("true", "false"):
            raise ValueError(f"true or false, not {value!r}")
        return value.strip().lower()
    if kind == INTERVAL:
        parse_interval(value)
    elif kind in (COUNT, INDEXED):
        least = 1 if kind == COUNT else -1
        if not re.fullmatch(r"\s*-?\d+\s*", value) or int(value) < least:
            raise ValueError(f"an {kind}, not {value!r}")
    return value


def normalize(raw: Mapping[str, Any]) -> dict[str, str]:
    """``raw`` with Delta's spelling of each key and value, or ValueError for the first refusal.

    Args:
        raw: the YAML mapping (keys any case, values text, numbers or booleans).
    """
    out: dict[str, str] = {}
    for key, value in raw.items():
        text, lower = text_value(value), str(key).lower()
        prop = PROPERTIES.get(lower)
        if prop is not None and prop.refused:
            raise ValueError(f"{prop.key} is refused: {prop.note}")
        if prop is not None:
            try:
                name, text = prop.key, _check_value(prop, text)
            except ValueError as exc:
                raise ValueError(f"{prop.key}: {exc}") from None
        elif any(lower.startswith(p) for p in REFUSED_PREFIXES):
            why = next(w for p, w in REFUSED_PREFIXES.items() if lower.startswith(p))
            raise ValueError(f"{key} is refused: {why}")
        elif lower.startswith("delta."):
            near = get_close_matches(lower, list(PROPERTIES), 1, 0.8)
            hint = f" (did you mean {PROPERTIES[near[0]].key}?)" if near else ""
            raise ValueError(f"{key} is not a Delta 4.0 table property{hint}; the accepted "
                             "ones are listed in the configuration reference")
        elif lower in SPARK_RESERVED or lower.startswith("option."):
            raise ValueError(f"{key} is reserved by Spark; choose another name")
        else:
            name = str(key)
        if name in out:
            raise ValueError(f"{name} is given twice")
        out[name] = text
    return out
