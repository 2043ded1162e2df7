"""Compute a micro-batch DataFrame once, with its lineage cut, and free it afterwards.

Why not ``persist``: a cached DataFrame is only reused when a later plan *matches* it, and
Delta's MERGE re-plans its source: measured here (Spark event log, Delta 4.0), the target MERGE
whose source was a persisted DataFrame re-read the micro-batch from Kafka and re-parsed it, in
every batch. A local checkpoint replaces the plan by the computed blocks, so nothing downstream
(our aggregations, both MERGEs) can recompute it, whatever it re-plans. It is what Delta itself
does when it materializes a MERGE source (``MergeIntoMaterializeSource``).
"""

from __future__ import annotations

import logging

from pyspark.sql import DataFrame

log = logging.getLogger(__name__)


#: What a session says when it refuses a local checkpoint (Databricks serverless refuses
#: caching and checkpointing: ``NOT_SUPPORTED_WITH_SERVERLESS``).
_REFUSED = ("NOT_SUPPORTED", "not supported", "UNSUPPORTED", "NOT_IMPLEMENTED")


def materialize(df: DataFrame, staging: str | None = None, refused: bool = False) -> DataFrame:
    """Compute ``df`` now and return a DataFrame over the computed rows.

    A local checkpoint: the blocks, in memory then on disk. Where the session refuses local
    checkpoints and ``staging`` names a folder, the rows are written once to a Delta table there
    (overwritten by the next batch; one writer per checkpoint) and read back: computed once as
    well, so no later plan re-reads the source, at the cost of a write and a commit.

    Args:
        df: a DataFrame over the micro-batch.
        staging: where a refused local checkpoint falls back to (None: no fallback).
        refused: act as if the session refused (the ``no_local_checkpoint`` test hook).

    Returns:
        The same rows, with no lineage back to the source.
    """
    if not (refused and staging):
        try:
            return df.localCheckpoint(eager=True)
        except Exception as exc:
            if staging is None or not any(marker in str(exc) for marker in _REFUSED):
                raise
            log.warning("local checkpoint refused (%s): staging the batch in %s",
                        str(exc).splitlines()[0][:200], staging)
    df.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(staging)
    return df.sparkSession.read.format("delta").load(staging)


def release(df: DataFrame | None) -> None:
    """Drop the blocks of a DataFrame returned by :func:`materialize` (no-op for others).

    Classic: Spark would drop them when the JVM garbage-collects the RDD; a streaming job must
    not wait for that, or each batch's blocks pile up in memory and on local disk, so they are
    unpersisted here. Spark Connect: the server drops a checkpointed relation as soon as its
    client-side DataFrame is garbage-collected (PySpark's ``CachedRemoteRelation.__del__``),
    which happens when the batch's references to it go: nothing to do here.
    """
    if df is None:
        return
    from pipelines.runtime.sessions import is_connect

    if is_connect(df.sparkSession):
        return
    try:
        rdd = df._jdf.queryExecution().analyzed().rdd()
        rdd.unpersist(False)
    except Exception as exc:  # not a local checkpoint
        log.debug("could not release a materialized batch: %s", exc)
