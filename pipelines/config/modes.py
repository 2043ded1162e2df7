"""The ``target.mode`` settings: insert-only (the default), latest-wins upserts, or SCD type 2.

Checked here without Spark (which combinations make sense); the checks that need the schema and
a session (``sequence_by`` is a required column, ``delete_when`` parses as a boolean) run when
the tables are prepared (:func:`pipelines.sink.modes.upsert.check_upsert`). The checks that
depend on the source's format (a change stream orders by its own position) are the pipeline's
(:func:`check_change_stream`).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

Mode = Literal["insert_only", "upsert", "scd2"]
#: The modes that keep a key's versions, ordered by ``target.sequence_by`` (or a change
#: stream's source position): the key is matched across the whole table.
VERSIONED = ("upsert", "scd2")
#: ``target.sequence_by`` value that orders versions by their Kafka coordinates.
KAFKA_SEQUENCE = "kafka"
#: How long a replica remembers a deleted key by default (``target.delete_retention``).
DEFAULT_DELETE_RETENTION = timedelta(days=7)


def check_mode(mode: Mode, sequence_by: str, delete_when: str | None,
               dedup_window: int | timedelta, track_history: tuple[str, ...] | None = None
               ) -> None:
    """Refuse settings that contradict ``target.mode``.

    Raises:
        ValueError: (pydantic turns it into the config error) naming the key and the fix.
    """
    if track_history is not None and mode != "scd2":
        raise ValueError("target.track_history only applies with target.mode: scd2")
    if mode == "insert_only":
        if sequence_by != KAFKA_SEQUENCE or delete_when is not None:
            raise ValueError("target.sequence_by and target.delete_when only apply with "
                             "target.mode: upsert or scd2")
        return
    if dedup_window:
        raise ValueError(f"target.mode: {mode} matches the key across the whole table (a newer "
                         "version may move to another event_date), so target.dedup_window "
                         "does not apply; leave dedup_window out (or set 0d)")
    if not sequence_by.strip():
        raise ValueError("target.sequence_by must be 'kafka' or a column name")
    if delete_when is not None and not delete_when.strip():
        raise ValueError("target.delete_when is empty; remove it or give a boolean expression")
    if track_history is not None and not track_history:
        raise ValueError("target.track_history is empty; leave it out to track every column")


def check_change_stream(change_stream: bool, mode: Mode, sequence_by: str,
                        delete_when: str | None, retention_set: bool) -> None:
    """Refuse settings that contradict the source: a change stream (``source.format:
    debezium``) is ordered by its changes' source positions and says its own deletes; an
    event topic in SCD2 mode needs the column that orders a key's versions.

    Raises:
        ValueError: naming the key and the fix.
    """
    if change_stream:
        if mode == "insert_only":
            raise ValueError("source.format: debezium is a change stream: set target.mode: "
                             "upsert (the table's replica) or scd2 (its history)")
        if sequence_by != KAFKA_SEQUENCE or delete_when is not None:
            raise ValueError("source.format: debezium orders a key's changes by their source "
                             "position and knows its deletes: leave target.sequence_by and "
                             "target.delete_when out")
    elif mode == "scd2" and sequence_by == KAFKA_SEQUENCE:
        raise ValueError("target.mode: scd2 on an event topic needs target.sequence_by: the "
                         "column whose values order a key's versions (__START_AT and "
                         "__END_AT hold them)")
    if retention_set and not (change_stream and mode == "upsert"):
        raise ValueError("target.delete_retention only applies to target.mode: upsert with "
                         "source.format: debezium")
