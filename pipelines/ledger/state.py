"""What the target's Delta log says: deltasink commits, their txn ids and recorded offsets.

The log is read newest-first, in a window of the newest versions that widens (doubling) only
when the answer is not in it, so start-up does not slow down as the history grows. A ``RESTORE``
at version R to version V undoes every version in (V, R): those commits are marked
``undone_by=R`` and the walk continues from V, so nested restores resolve too. Delta keeps the
txn versions of undone commits (RESTORE does not roll back ``SetTransaction``), which is why a
rewind must also start a fresh query identity (see ``pipelines/ops/rewind.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pyspark.sql import Row, SparkSession

from pipelines.ledger.deltalog import DeltaLogFiles, LogCommit
from pipelines.ledger.record import SOURCE_KEY, parse_commit_metadata
from pipelines.storage.store import Store
from pipelines.storage.tables import TableRef

#: The first window of newest versions read from the log (the pipeline's own newest commit is
#: nearly always the newest version of its target).
WINDOW = 10

#: Compactions are never deltasink commits. Delta's auto-compaction (a table's
#: ``delta.autoOptimize.autoCompact``, or ``spark.databricks.delta.autoCompact.enabled``) runs
#: right after a batch's MERGE, in the batch's session, and copies the batch's userMetadata
#: into its ``OPTIMIZE`` commit, which holds no txn action and changes no data
#: (``dataChange: false``): read as a commit, it would list the batch twice (issue 46).
COMPACTIONS = ("OPTIMIZE",)

#: A version's entry in the history: a ``history()`` row, or its commit file read by name.
HistoryRow = Row | LogCommit


@dataclass(frozen=True)
class SinkCommit:
    """One deltasink commit in a table's history.

    Attributes:
        undone_by: the version of the RESTORE that rolled this commit back, or None.
        replay: written by ``deltasink replay`` (never moves the pipeline's offsets).
        source: the Kafka cluster id and topic ids the offsets refer to (empty in commits
            written before deltasink recorded them).
    """

    version: int
    pipeline: str
    app_id: str
    batch_id: int
    offsets: dict[str, dict[int, int]]
    undone_by: int | None = None
    replay: bool = False
    timestamp: datetime | None = None
    source: dict[str, Any] = field(default_factory=dict)


def _history(spark: SparkSession, ref: TableRef, limit: int | None,
             near: int | None = None) -> list[HistoryRow]:
    """The newest ``limit`` history rows (all when None), newest first.

    A path table's commit files are opened by name (:mod:`pipelines.ledger.deltalog`): one Spark
    job with a ``near`` version, a few without one (the newest version is found by name too), and
    neither grows with the log; a log none of whose looked-up names exist is left to
    ``history()`` (bench/README.md, "Start-up on a long history"). Catalog tables use
    ``history()``.
    The whole history (``limit=None``) is left to ``history()`` too: one listing and a read in
    the JVM beat opening every commit file from Python (``DESCRIBE HISTORY LIMIT 4`` is four
    Spark jobs, measured; the reads by name are two to four, and one when ``near`` names a
    version at most ``deltalog.NEAR`` below the newest: :meth:`DeltaLogFiles.near`).
    """
    if ref.path and limit is not None:
        files = DeltaLogFiles(Store(spark), ref.path)
        rows = files.near(near, limit) if near is not None else None
        rows = files.newest(limit) if rows is None else rows
        if rows is not None:
            return list(rows)
    if not ref.exists(spark):
        return []
    history = ref.history(spark, limit)
    return list(history.select("version", "timestamp", "operation", "operationParameters",
                               "userMetadata").orderBy("version", ascending=False).collect())


def restored_to(row: HistoryRow, rows: list[HistoryRow]) -> int | None:
    """The version a RESTORE row went back to (None: not a RESTORE, or not resolvable in rows).

    RESTORE records ``operationParameters`` as strings: ``{"version": "3", "timestamp": None}``,
    or ``{"version": None, "timestamp": "2026-11-23 09:38:15.664"}`` for a timestamp restore,
    which resolves to the newest version committed at or before that time.
    """
    if row["operation"] != "RESTORE":
        return None
    params = row["operationParameters"] or {}
    if params.get("version") not in (None, ""):
        return int(params["version"])
    when = datetime.fromisoformat(str(params.get("timestamp")))
    older = [r for r in rows if r["version"] < row["version"] and r["timestamp"] <= when]
    return int(older[0]["version"]) if older else None


def _walk(rows: list[HistoryRow]) -> Iterator[SinkCommit | int]:
    """deltasink commits in ``rows`` (newest first), with ``undone_by`` set.

    Yields ``-1`` when a RESTORE cannot be resolved within ``rows`` (the caller widens).
    """
    undo: tuple[int, int] | None = None  # (restore version R, restored-to version V)
    for row in rows:
        version = int(row["version"])
        undone_by = undo[0] if undo and version > undo[1] else None
        if undone_by is None:
            undo = None
            if row["operation"] == "RESTORE":
                target = restored_to(row, rows)
                if target is None:
                    yield -1
                    return
                undo = (version, target)
        commit = _commit(row, undone_by)
        if commit is not None:
            yield commit


def _commit(row: HistoryRow, undone_by: int | None) -> SinkCommit | None:
    if row["operation"] in COMPACTIONS:  # a compaction: no txn, no new rows (see COMPACTIONS)
        return None
    body: dict[str, Any] | None = parse_commit_metadata(row["userMetadata"])
    if body is None:
        return None
    offsets = {t: {int(p): int(o) for p, o in ps.items()}
               for t, ps in body.get("offsets", {}).items()}
    return SinkCommit(int(row["version"]), str(body["pipeline"]), str(body["app_id"]),
                      int(body["batch_id"]), offsets, undone_by, bool(body.get("replay")),
                      row["timestamp"], dict(body.get(SOURCE_KEY) or {}))


def search(spark: SparkSession, ref: TableRef, wanted: Callable[[SinkCommit], bool],
           as_of: int | None = None, window: int = WINDOW,
           limit: int | None = None, near: int | None = None) -> SinkCommit | None:
    """The newest deltasink commit for which ``wanted`` is true, reading a widening window.

    Args:
        spark: the session.
        ref: the table.
        wanted: the predicate (it sees ``undone_by`` already set).
        as_of: walk the history as it stood at this version (default: the latest).
        window: the first number of versions to read; doubles until the answer is found.
        limit: look at no more than this many of the newest versions (default: all).
        near: a version read before, as a hint where the newest is (see :func:`_history`).
    """
    skip = 0
    if as_of is not None:
        newest = _history(spark, ref, 1)
        if not newest:
            return None
        skip = max(0, int(newest[0]["version"]) - as_of)
    while True:
        if limit is not None:
            window = min(window, limit)
        count = skip + window
        every = _history(spark, ref, count, near)
        rows = [r for r in every if as_of is None or r["version"] <= as_of]
        for item in _walk(rows):
            if isinstance(item, int):
                break  # a RESTORE to a time older than the window: widen
            if wanted(item):
                return item
        if len(every) < count or window == limit:  # reached the first version, or the limit
            return None
        window *= 2


def sink_commits(spark: SparkSession, ref: TableRef, pipeline: str | None = None,
                 limit: int | None = None) -> list[SinkCommit]:
    """deltasink's commits in ``ref``'s history, newest first, with ``undone_by`` set.

    Args:
        spark: the session.
        ref: the table.
        pipeline: only this pipeline's commits.
        limit: look at the newest ``limit`` versions only (a RESTORE whose timestamp
            resolves below them stops the listing there).
    """
    return [c for c in _walk(_history(spark, ref, limit))
            if isinstance(c, SinkCommit) and (not pipeline or c.pipeline == pipeline)]


def live_commit(spark: SparkSession, ref: TableRef, pipeline: str,
                as_of: int | None = None) -> SinkCommit | None:
    """``pipeline``'s newest commit that no RESTORE undid and that is not a replay commit."""
    return search(spark, ref, lambda c: c.pipeline == pipeline and c.undone_by is None
                  and not c.replay, as_of)


def recorded_offsets(spark: SparkSession, ref: TableRef, pipeline: str,
                     as_of: int | None = None) -> dict[str, dict[int, int]] | None:
    """The next offsets to read, as recorded by ``pipeline``'s newest live commit to ``ref``.

    Args:
        spark: the session.
        ref: the table.
        pipeline: the pipeline name.
        as_of: as the table stood at this version (default: the latest).
    """
    commit = live_commit(spark, ref, pipeline, as_of)
    return commit.offsets if commit else None


def find_commit(spark: SparkSession, ref: TableRef, app_id: str,
                batch_id: int) -> SinkCommit | None:
    """The newest commit of (``app_id``, ``batch_id``), with ``undone_by`` set, or None."""
    return search(spark, ref, lambda c: c.app_id == app_id and c.batch_id == batch_id)


def txn_versions(commits: list[SinkCommit]) -> dict[str, int]:
    """The highest committed batch id (txnVersion) per txnAppId (undone commits included:
    RESTORE does not roll back Delta's txn versions)."""
    out: dict[str, int] = {}
    for c in commits:
        out[c.app_id] = max(out.get(c.app_id, -1), c.batch_id)
    return out
