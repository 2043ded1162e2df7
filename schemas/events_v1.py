"""``events_v1``: the generic business event.

A record value is a JSON object::

    {"event_id": "o-123", "event_type": "order_placed",
     "event_time": "2026-11-21T10:00:00Z", "payload": {"amount": 12.5}}

Unknown fields are ignored.
"""

from __future__ import annotations

from schemas.base import EventSchema, FieldSpec

SCHEMA = EventSchema(
    name="events_v1",
    fields=(
        FieldSpec("event_id", "string", max_length=256),
        FieldSpec("event_type", "string"),
        FieldSpec("event_time", "timestamp"),
        FieldSpec("payload", "object", required=False),
    ),
    key="event_id",
    time_field="event_time",
)
