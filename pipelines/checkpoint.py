"""The streaming checkpoint: its query id, its latest offsets, and a lock against double runs."""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pyspark.sql import SparkSession

from pipelines.errors import CheckpointError


def is_local(location: str) -> bool:
    """Whether the checkpoint is a local (or FUSE-mounted) folder rather than a URI."""
    return "://" not in location and not location.startswith("dbfs:")


def _read(spark: SparkSession | None, path: str) -> str | None:
    if is_local(path):
        file = Path(path)
        return file.read_text(encoding="utf-8") if file.is_file() else None
    if spark is None:
        return None
    try:
        return "\n".join(r[0] for r in spark.read.text(path).collect())
    except Exception:
        return None


def query_id(spark: SparkSession | None, location: str) -> str:
    """The streaming query id stored in ``<checkpoint>/metadata`` (stable across restarts).

    Raises:
        CheckpointError: the checkpoint has no readable metadata yet.
    """
    text = _read(spark, f"{location.rstrip('/')}/metadata")
    try:
        return str(json.loads((text or "").strip().splitlines()[0])["id"])
    except (IndexError, KeyError, ValueError):
        raise CheckpointError(f"checkpoint {location} has no readable metadata file") from None


def _latest(folder: Path) -> int | None:
    ids = [int(p.name) for p in folder.iterdir() if p.name.isdigit()] if folder.is_dir() else []
    return max(ids) if ids else None


def has_state(location: str) -> bool:
    """Whether a checkpoint exists with at least one planned batch."""
    if not is_local(location):
        return True  # remote: let Spark decide; recovery needs a local view of the folder
    return _latest(Path(location) / "offsets") is not None


def latest_offsets(location: str) -> tuple[int, dict[str, dict[int, int]]] | None:
    """The newest planned batch id and its end offsets per topic and partition.

    Raises:
        CheckpointError: the newest offsets file is truncated or unreadable.
    """
    if not is_local(location):
        return None
    folder = Path(location) / "offsets"
    batch = _latest(folder)
    if batch is None:
        return None
    lines = (folder / str(batch)).read_text(encoding="utf-8", errors="replace").splitlines()
    try:
        offsets = json.loads(lines[2])
        return batch, {t: {int(p): int(o) for p, o in ps.items()} for t, ps in offsets.items()}
    except (IndexError, ValueError, AttributeError):
        raise CheckpointError(
            f"checkpoint {location} is damaged: {folder / str(batch)} is truncated or unreadable. "
            f"Delete the folder {location} and run again: deltasink resumes from the offsets "
            "recorded in the target table, losing and duplicating nothing.") from None


def latest_committed_batch(location: str) -> int | None:
    """The newest batch id whose checkpoint commit is written."""
    return _latest(Path(location) / "commits") if is_local(location) else None


@contextmanager
def exclusive(location: str, pipeline: str) -> Iterator[None]:
    """Hold an exclusive lock on a local checkpoint for the duration of a run.

    Raises:
        CheckpointError: another process holds it (the same pipeline is already running).
    """
    if not is_local(location):
        yield  # on Databricks, the job's max_concurrent_runs: 1 plays this role
        return
    Path(location).mkdir(parents=True, exist_ok=True)
    handle = open(Path(location) / ".deltasink.lock", "a+")
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise CheckpointError(
                f"pipeline {pipeline} is already running on checkpoint {location} "
                "(another process holds its lock); wait for it to finish.") from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        yield
    finally:
        handle.close()


def retire(spark: SparkSession | None, location: str) -> str:
    """Move the checkpoint aside so the next run starts a fresh query identity.

    Returns:
        The new path ``<location>.retired-<UTC yyyymmddTHHMMSS>``, or "" when there was none.
    """
    from datetime import UTC, datetime

    if not is_local(location) or not Path(location).exists():
        return ""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    moved = f"{location.rstrip('/')}.retired-{stamp}"
    os.rename(location, moved)
    return moved
