"""The ``target.mode`` settings: insert-only (the default) or latest-wins upserts.

Checked here without Spark (which combinations make sense); the checks that need the schema and
a session (``sequence_by`` is a required column, ``delete_when`` parses as a boolean) run when
the tables are prepared (:func:`pipelines.sink.modes.upsert.check_upsert`).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

Mode = Literal["insert_only", "upsert"]
#: ``target.sequence_by`` value that orders versions by their Kafka coordinates.
KAFKA_SEQUENCE = "kafka"


def check_mode(mode: Mode, sequence_by: str, delete_when: str | None,
               dedup_window: int | timedelta) -> None:
    """Refuse settings that contradict ``target.mode``.

    Raises:
        ValueError: (pydantic turns it into the config error) naming the key and the fix.
    """
    if mode == "insert_only":
        if sequence_by != KAFKA_SEQUENCE or delete_when is not None:
            raise ValueError("target.sequence_by and target.delete_when only apply with "
                             "target.mode: upsert")
        return
    if dedup_window:
        raise ValueError("target.mode: upsert matches the key across the whole table (a newer "
                         "version may move to another event_date), so target.dedup_window "
                         "does not apply; leave dedup_window out (or set 0d)")
    if not sequence_by.strip():
        raise ValueError("target.sequence_by must be 'kafka' or a column name")
    if delete_when is not None and not delete_when.strip():
        raise ValueError("target.delete_when is empty; remove it or give a boolean expression")
