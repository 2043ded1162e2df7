"""What the streaming checkpoint says: its query id, and the offsets Spark planned per batch.

Spark writes ``offsets/<batchId>`` (the batch's planned end offsets) before it runs a batch, and
``commits/<batchId>`` after ``foreachBatch`` returned. A batch's end offsets are therefore read
here, from Spark's own plan for that batch id, and never derived from the rows: transaction
markers, aborted tails and compacted gaps then count as consumed, and two runs of one batch id
can be compared exactly. Every read goes through Spark (``pipelines.storage.store``), so a
checkpoint on S3, ADLS, DBFS, a ``file:`` URI or a UC Volume behaves like a local one, in
classic mode and over Spark Connect alike.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.streaming.readwriter import DataStreamWriter
from pyspark.sql.types import StringType, StructField, StructType

from pipelines import sql
from pipelines.errors import CheckpointError
from pipelines.runtime.connect_client import start_query
from pipelines.storage.store import Store

Offsets = dict[str, dict[int, int]]


def _join(location: str, *parts: str) -> str:
    return "/".join([location.rstrip("/"), *parts])


def query_id(spark: SparkSession, location: str) -> str:
    """The streaming query id stored in ``<checkpoint>/metadata`` (stable across restarts).

    Raises:
        CheckpointError: the checkpoint has no readable metadata yet.
    """
    try:
        text = Store(spark).read_text(_join(location, "metadata"))
        return str(json.loads((text or "").strip().splitlines()[0])["id"])
    except (IndexError, KeyError, ValueError, TypeError):
        raise CheckpointError(f"checkpoint {location} has no readable metadata file") from None


def _batch_ids(spark: SparkSession, folder: str) -> list[int]:
    return sorted(int(name) for name in Store(spark).names(folder) if name.isdigit())


def has_state(spark: SparkSession, location: str) -> bool:
    """Whether a checkpoint exists with at least one planned batch."""
    return bool(_batch_ids(spark, _join(location, "offsets")))


def planned_offsets(spark: SparkSession, location: str, batch_id: int) -> Offsets | None:
    """The end offsets Spark planned for ``batch_id`` (``offsets/<batchId>``), or None if absent.

    Raises:
        CheckpointError: the offsets file is truncated or unreadable.
    """
    file = _join(location, "offsets", str(batch_id))
    try:
        text = Store(spark).read_text(file)
    except Exception:  # e.g. a ChecksumException: the file no longer matches its .crc
        text = ""
    if text is None:
        return None
    try:
        offsets = json.loads(text.splitlines()[2])
        return {t: {int(p): int(o) for p, o in ps.items()} for t, ps in offsets.items()}
    except (IndexError, ValueError, AttributeError):
        raise _damaged(location, file) from None


def latest_offsets(spark: SparkSession, location: str) -> tuple[int, Offsets] | None:
    """The newest planned batch id and its end offsets per topic and partition.

    Also checks what Spark reads next to them when it restarts the query: the ``metadata``
    file (the query id, which Spark would silently replace if the file were missing) and the
    newest ``commits/<batchId>`` file (:func:`_check_commit`).

    Raises:
        CheckpointError: the newest offsets file, the newest commit file or the metadata file
            is truncated or unreadable.
    """
    ids = _batch_ids(spark, _join(location, "offsets"))
    if not ids:
        return None
    planned = planned_offsets(spark, location, ids[-1])
    try:
        query_id(spark, location)
    except Exception:  # unreadable, or a ChecksumException: it no longer matches its .crc
        raise _damaged(location, _join(location, "metadata")) from None
    committed = latest_committed_batch(spark, location)
    if committed is not None:
        _check_commit(spark, location, committed)
    return (ids[-1], planned) if planned is not None else None


def _check_commit(spark: SparkSession, location: str, batch_id: int) -> None:
    """A ``commits/<batchId>`` file reads as Spark writes it: a ``v<n>`` line, then a JSON
    object (``{"nextBatchWatermarkMs":0}``).

    Raises:
        CheckpointError: it does not (cut short by a crash or a full disk, overwritten).
    """
    file = _join(location, "commits", str(batch_id))
    try:
        lines = (Store(spark).read_text(file) or "").splitlines()
        intact = (len(lines) >= 2 and lines[0][:1] == "v" and lines[0][1:].isdigit()
                  and isinstance(json.loads(lines[1]), dict))
    except Exception:  # a ChecksumException, bad JSON
        intact = False
    if not intact:
        raise _damaged(location, file)


def _damaged(location: str, file: str) -> CheckpointError:
    return CheckpointError(
        f"checkpoint {location} is damaged: {file} is truncated or unreadable. "
        f"Delete the folder {location} and run again: deltasink resumes from the offsets "
        "recorded in the target table, losing and duplicating nothing.")


def latest_committed_batch(spark: SparkSession, location: str) -> int | None:
    """The newest batch id whose checkpoint commit is written."""
    ids = _batch_ids(spark, _join(location, "commits"))
    return ids[-1] if ids else None


def committed_offsets(spark: SparkSession, location: str) -> tuple[int, Offsets] | None:
    """The newest committed batch id and the end offsets Spark had planned for it.

    Everything below these offsets was handed to ``foreachBatch`` and returned from it, so the
    target table must have it: a table that records less was restored, replaced or belongs to a
    checkpoint copied from elsewhere.
    """
    batch = latest_committed_batch(spark, location)
    if batch is None:
        return None
    planned = planned_offsets(spark, location, batch)
    return (batch, planned) if planned is not None else None


def start(writer: DataStreamWriter, location: str, pipeline: str) -> StreamingQuery:
    """Start ``writer``'s streaming query on the checkpoint at ``location`` (its lease held). A
    writer that could not see the lease and starts at the same moment races it for the
    checkpoint's ``metadata`` file, and Spark refuses the loser: a ``CheckpointError``, not a
    trace.

    Raises:
        CheckpointError: another query started on the checkpoint at the same moment.
    """
    try:
        return start_query(writer.start, f"pipeline {pipeline}")
    except Exception as exc:
        if "SparkConcurrentModificationException" not in str(exc) and \
                "concurrently using" not in str(exc):
            raise
        raise CheckpointError(
            f"pipeline {pipeline}: another run is starting a query on checkpoint "
            f"{location} at the same moment, and Spark refused this one before it read "
            "anything. Run one writer per checkpoint.") from None


#: Under a checkpoint root: each retirement's record, ``<root>/_deltasink/generations/<n>/``.
GENERATIONS = "_deltasink/generations"
#: The one text column of a retirement's record.
NOTE_SCHEMA = StructType([StructField("value", StringType())])


def generation_location(root: str, generation: int) -> str:
    """Spark's checkpoint folder for ``generation`` of the checkpoint at ``root`` (0: ``root``)."""
    return root if generation == 0 else f"{root.rstrip('/')}/_deltasink/g{generation}"


def generation(spark: SparkSession, root: str) -> int:
    """How many times the checkpoint at ``root`` was retired (0: never; one Spark job if ever)."""
    found = Store(spark).below(_join(root, GENERATIONS), "*/*")
    numbers = [int(path.split("/")[0]) for path in found if path.split("/")[0].isdigit()]
    return max(numbers, default=0)


def active(spark: SparkSession, root: str) -> str:
    """The folder Spark's streaming checkpoint is in, for the pipeline checkpoint at ``root``.

    ``root`` itself until the checkpoint is first retired (:func:`retire`), then
    ``<root>/_deltasink/g<n>`` for the newest generation ``n``.
    """
    return generation_location(root, generation(spark, root))


def retire(spark: SparkSession, root: str, reason: str = "") -> str:
    """Retire the checkpoint's current generation, so that the next run starts a fresh query.

    The next run then finds no checkpoint state and resumes from the offsets recorded in the
    target table, under a new streaming query id and so a new txnAppId (whose batch ids may
    restart at 0 without being skipped). Nothing is moved or deleted (Spark has no API for that
    under Spark Connect, and the old generation stays for inspection): the retirement is a
    record written through Spark, ``<root>/_deltasink/generations/<n>/``, which
    :func:`active` reads. The lease (``<root>/_deltasink/lease_table``) stays where it is.

    Returns:
        The new generation's folder (empty until the next run starts its query there).

    Raises:
        CheckpointError: another process retired it at the same moment.
    """
    old = generation(spark, root)
    new = old + 1
    note = (f"{datetime.now(UTC).isoformat()} retired {generation_location(root, old)}"
            + (f": {reason}" if reason else ""))
    try:
        (spark.sql(sql.values([{"value": note}], NOTE_SCHEMA)).coalesce(1).write
         .mode("error").text(_join(root, GENERATIONS, str(new))))
    except Exception as exc:
        if "already exists" not in str(exc).lower() and "PATH_ALREADY_EXISTS" not in str(exc):
            raise
        raise CheckpointError(f"checkpoint {root} was retired by another process at the same "
                              "moment; run again.") from None
    return generation_location(root, new)
