"""``events_v2``: ``events_v1`` with ``event_type`` optional and one more timestamp format.

Accepted in addition to what ``events_v1`` accepts:

* a record without ``event_type`` (or with ``"event_type": null``): the column is then null;
* an ``event_time`` written as ``dd.MM.yyyy HH:mm:ss`` followed by an offset (``+01:00``, ``Z``),
  as one legacy producer sends it, e.g. ``"21.11.2026 10:00:00+01:00"``.

Switching a pipeline from ``events_v1`` to ``events_v2`` needs no migration: the next run (or
``deltasink quarantine redrive``) drops the target's NOT NULL constraint on ``event_type``.
Records quarantined under ``events_v1`` that ``events_v2`` accepts can then be redriven.
"""

from __future__ import annotations

from schemas.base import EventSchema, FieldSpec

SCHEMA = EventSchema(
    name="events_v2",
    fields=(
        FieldSpec("event_id", "string", max_length=256),
        FieldSpec("event_type", "string", required=False),
        FieldSpec("event_time", "timestamp", formats=("dd.MM.yyyy HH:mm:ssXXX",)),
        FieldSpec("payload", "object", required=False),
    ),
    key="event_id",
    time_field="event_time",
)
