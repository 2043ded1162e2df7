"""Avro test records: two versions of a ``Click`` writer schema and the YAML schema they land in.

Version 2 adds an optional ``coupon``; the pipeline's declared schema has it as an optional
field, so records of both versions land in one table.
"""

from __future__ import annotations

import io
import json
import struct
from datetime import UTC, datetime, timedelta
from typing import Any

import fastavro

_FIELDS: list[dict[str, Any]] = [
    {"name": "event_id", "type": "string"},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "user", "type": "string"},
    {"name": "amount", "type": "double"},
]
V1 = json.dumps({"type": "record", "name": "Click", "namespace": "test", "fields": _FIELDS})
V2 = json.dumps({"type": "record", "name": "Click", "namespace": "test", "fields": [
    *_FIELDS, {"name": "coupon", "type": ["null", "string"], "default": None}]})
#: The pipeline's declared (YAML) schema: the union of both versions' fields.
DECLARED: dict[str, Any] = {
    "name": "clicks", "key": "event_id", "event_time": "ts",
    "fields": {"event_id": {"type": "string"}, "ts": {"type": "timestamp"},
               "user": {"type": "string"}, "amount": {"type": "double"},
               "coupon": {"type": "string", "required": False}},
}
BASE = datetime(2026, 3, 1, 12, tzinfo=UTC)


def click(i: int, coupon: str | None = None) -> dict[str, Any]:
    """Click ``i`` (a version-2 record when ``coupon`` is given)."""
    record: dict[str, Any] = {"event_id": f"c-{i}", "ts": BASE + timedelta(seconds=i),
                              "user": f"u-{i % 7}", "amount": i / 4}
    if coupon is not None:
        record["coupon"] = coupon
    return record


def wire(schema_id: int, schema: str, record: dict[str, Any]) -> bytes:
    """``record`` in the Confluent wire format: magic byte, schema id, Avro binary."""
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(json.loads(schema)), record)
    return b"\x00" + struct.pack(">I", schema_id) + out.getvalue()
