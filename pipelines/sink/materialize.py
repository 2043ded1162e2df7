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


def materialize(df: DataFrame) -> DataFrame:
    """Compute ``df`` now and return a DataFrame over the computed blocks (memory, then disk).

    Args:
        df: a DataFrame over the micro-batch.

    Returns:
        The same rows, with no lineage back to the source: later plans read the blocks.
    """
    return df.localCheckpoint(eager=True)


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
    from pipelines.runtime.spark import is_connect

    if is_connect(df.sparkSession):
        return
    try:
        rdd = df._jdf.queryExecution().analyzed().rdd()
        rdd.unpersist(False)
    except Exception as exc:  # not a local checkpoint
        log.debug("could not release a materialized batch: %s", exc)
