"""What the target's Delta log says: deltasink commits, their txn ids and recorded offsets."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipelines.sink.commit import parse_commit_metadata
from pipelines.tables import TableRef


@dataclass(frozen=True)
class SinkCommit:
    """One deltasink commit in a table's history."""

    version: int
    pipeline: str
    app_id: str
    batch_id: int
    offsets: dict[str, dict[int, int]]
    undone_by: int | None = None


def sink_commits(spark: SparkSession, ref: TableRef, pipeline: str | None = None,
                 limit: int | None = None) -> list[SinkCommit]:
    """deltasink's commits in ``ref``'s history, newest first.

    Args:
        spark: the session.
        ref: the table.
        pipeline: only this pipeline's commits.
        limit: look at the newest ``limit`` versions only.
    """
    if not ref.exists(spark):
        return []
    history = ref.delta(spark).history(limit) if limit else ref.delta(spark).history()
    rows = (history.where(F.col("userMetadata").contains('"deltasink"'))
            .select("version", "userMetadata").orderBy(F.col("version").desc()).collect())
    out = []
    for row in rows:
        body: dict[str, Any] | None = parse_commit_metadata(row["userMetadata"])
        if body is None or (pipeline and body.get("pipeline") != pipeline):
            continue
        offsets = {t: {int(p): int(o) for p, o in ps.items()}
                   for t, ps in body.get("offsets", {}).items()}
        out.append(SinkCommit(int(row["version"]), str(body["pipeline"]), str(body["app_id"]),
                              int(body["batch_id"]), offsets))
    return out


def recorded_offsets(spark: SparkSession, ref: TableRef,
                     pipeline: str) -> dict[str, dict[int, int]] | None:
    """The next offsets to read, as recorded by ``pipeline``'s newest commit to ``ref``."""
    commits = sink_commits(spark, ref, pipeline)
    return commits[0].offsets if commits else None


def txn_versions(commits: list[SinkCommit]) -> dict[str, int]:
    """The highest committed batch id (txnVersion) per txnAppId."""
    out: dict[str, int] = {}
    for c in commits:
        out[c.app_id] = max(out.get(c.app_id, -1), c.batch_id)
    return out


def find_commit(spark: SparkSession, ref: TableRef, app_id: str,
                batch_id: int) -> SinkCommit | None:
    """The commit of ``(app_id, batch_id)`` in ``ref``'s history, or None."""
    for commit in sink_commits(spark, ref):
        if commit.app_id == app_id and commit.batch_id == batch_id:
            return commit
    return None
