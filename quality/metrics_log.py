"""Which batches the run-metrics table records, read from its commit log by file name.

Every write of run-metrics rows marks its commit's ``userMetadata`` with the ``(query id, batch
id)`` keys it writes, per pipeline (:func:`stamp`; a group's one write, :func:`stamp_rows`). At
each start the backfill must know whether a batch committed to the target lacks its row; asking
Spark costs a Delta snapshot of both tables and several jobs (about 10 s of a cold scheduled
run). :func:`all_recorded` answers the common case from a few small file reads: it opens the
newest commit files of both tables by name (:mod:`pipelines.ledger.deltalog`, through Spark's
binaryFile source: a one-task job each) and finds each of the target's recent batches in a
marked metrics commit.

It can only answer "all recorded", never "missing": any doubt sends the backfill to its Spark
read, as before. A doubt is a key not found within the commits it reads, a table addressed by
catalog name, a log that cannot be read by name, or any metrics commit that could have removed
rows (a RESTORE, a DELETE, an overwrite, a MERGE that deleted). So a row that is really missing
is always found and written.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pyspark.sql import SparkSession

from pipelines.config.model import PipelineConfig
from pipelines.ledger.deltalog import DeltaLogFiles, LogCommit
from pipelines.ledger.record import BATCH_KEY, parse_commit_metadata
from pipelines.storage.store import Store

#: The key of the mark in a run-metrics commit's userMetadata.
STAMP_KEY = "deltasink_metrics"
#: Metrics-table operations that never remove a row (a MERGE is checked for deletes).
_KEEPS_ROWS = frozenset({"WRITE", "MERGE", "CREATE TABLE", "ADD COLUMNS", "OPTIMIZE",
                         "SET TBLPROPERTIES", "VACUUM START", "VACUUM END"})

Key = tuple[str, int]


def stamp(pipeline: str, rows: Iterable[Mapping[str, Any]]) -> str:
    """The userMetadata of a run-metrics write: the pipeline and the keys of ``rows``."""
    return json.dumps({STAMP_KEY: {"pipeline": pipeline, "keys": _keys(rows)}},
                      separators=(",", ":"))


def _keys(rows: Iterable[Mapping[str, Any]]) -> list[Key]:
    """The sorted, distinct ``(query id, batch id)`` keys of ``rows``."""
    return sorted({(str(r["query_id"]), int(r["batch_id"])) for r in rows})


def stamp_rows(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """The userMetadata of a write of ``rows``, which name their pipeline: :func:`stamp` for one
    pipeline; for several (a group's one write, ``quality/group_book.py``) each pipeline's keys
    under ``pipelines``. None for no rows."""
    pipelines = sorted({str(r["pipeline"]) for r in rows})
    if len(pipelines) <= 1:
        return stamp(pipelines[0], rows) if pipelines else None
    keys = {p: _keys(r for r in rows if r["pipeline"] == p) for p in pipelines}
    return json.dumps({STAMP_KEY: {"pipelines": keys}}, separators=(",", ":"))


def stamped(commit: LogCommit, pipeline: str) -> set[Key]:
    """The keys of ``pipeline`` that ``commit`` marks as written (none if it has no mark)."""
    try:
        body = json.loads(commit.userMetadata or "")[STAMP_KEY]
    except (ValueError, TypeError, KeyError):
        return set()
    if not isinstance(body, dict):
        return set()
    if isinstance(body.get("pipelines"), dict):  # a group's write: several pipelines
        keys = body["pipelines"].get(pipeline, [])
    elif body.get("pipeline") == pipeline:
        keys = body.get("keys", [])
    else:
        return set()
    return {(str(q), int(b)) for q, b in keys}


def keeps_rows(commit: LogCommit) -> bool:
    """Whether ``commit`` cannot have removed a row of the table."""
    if commit.operation not in _KEEPS_ROWS:
        return False
    if commit.operation == "WRITE":
        return str(commit.operationParameters.get("mode", "")).lower() != "overwrite"
    return commit.operationMetrics.get("numTargetRowsDeleted", "0") == "0"


def rebuildable(body: Mapping[str, Any] | None, operation_metrics: Mapping[str, Any] | None,
                pipeline: str) -> bool:
    """Whether a target commit is a batch of ``pipeline`` whose metrics row a backfill can
    rebuild: counts in its metadata (``body``) and the inserted count in its operation metrics."""
    return (body is not None and body.get("pipeline") == pipeline and BATCH_KEY in body
            and "numTargetRowsInserted" in (operation_metrics or {}))


def target_batches(commits: list[LogCommit], pipeline: str) -> set[Key]:
    """The keys of ``pipeline``'s rebuildable batch commits among ``commits``."""
    keys = set()
    for commit in commits:
        body = parse_commit_metadata(commit.userMetadata)
        if body is not None and rebuildable(body, commit.operationMetrics, pipeline):
            keys.add((str(body[BATCH_KEY]["query_id"]), int(body["batch_id"])))
    return keys


def all_recorded(spark: SparkSession, config: PipelineConfig, window: int) -> bool:
    """Whether every batch of the pipeline in the target's newest ``window`` versions is
    certainly in the run-metrics table, read from both tables' commit files by name (no table
    scan).

    Args:
        spark: the session (its Hadoop configuration reaches the files).
        config: the pipeline (its target and ``quality.metrics_ref``).
        window: how many of the target's newest versions to check.

    Returns:
        True only when each batch's key was found in a marked metrics commit that no later
        commit could have undone; False means "not known", not "missing".
    """
    target, metrics = config.target.ref, config.quality.metrics_ref
    if not target.path or not metrics.path:
        return False  # catalog tables: their storage is the catalog's, not the session's
    store = Store(spark)
    commits = DeltaLogFiles(store, target.path).newest(window)
    if not commits:
        return False
    wanted = target_batches(commits, config.name)
    if not wanted:
        return commits[-1].version == 0  # the whole log was read: no batch to record
    log = DeltaLogFiles(store, metrics.path)
    latest = log.latest_version()
    if latest is None:
        return False
    versions = list(range(latest, max(-1, latest - 4 * window), -1))
    found = log.commits(versions)  # one Spark job for all of them
    for version in versions:
        commit = found.get(version)
        if commit is None or not keeps_rows(commit):
            return False
        wanted -= stamped(commit, config.name)
        if not wanted:
            return True
    return False
