"""The records of bench/parse.py's ``clicks`` cells: one click, as JSON or as Avro.

The Avro values are in the Confluent wire format: even records with writer schema id 1, odd ones
with id 2 (version 2 adds an optional ``coupon``), encoded with fastavro.
"""

from __future__ import annotations

import io
import json
import struct
from datetime import datetime
from typing import Any

import fastavro

from pipelines.formats.avro import WriterSchemas
from schemas.loader import schema_from_mapping

_FIELDS: list[dict[str, Any]] = [
    {"name": "event_id", "type": "string"},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "user", "type": "string"},
    {"name": "amount", "type": "double"},
]
V1 = {"type": "record", "name": "Click", "fields": _FIELDS}
V2 = {"type": "record", "name": "Click", "fields": [
    *_FIELDS, {"name": "coupon", "type": ["null", "string"], "default": None}]}
_PARSED = {1: fastavro.parse_schema(V1), 2: fastavro.parse_schema(V2)}
#: The declared schema both formats are parsed into.
CLICKS = schema_from_mapping({
    "name": "clicks", "key": "event_id", "event_time": "ts",
    "fields": {"event_id": {"type": "string"}, "ts": {"type": "timestamp"},
               "user": {"type": "string"}, "amount": {"type": "double"},
               "coupon": {"type": "string", "required": False}}})


def writer_schemas() -> WriterSchemas:
    """Both writer schemas, by id (as the registry would give them)."""
    return WriterSchemas(by_id={1: json.dumps(V1), 2: json.dumps(V2)})


def clicks_value(i: int, when: datetime, avro: bool) -> bytes:
    """Click ``i`` at ``when``: JSON text, or Avro in the wire format."""
    record: dict[str, Any] = {"event_id": f"c-{i}", "ts": when, "user": f"u-{i % 97}",
                              "amount": i / 4}
    version = 1 + i % 2
    if version == 2:
        record["coupon"] = f"K{i % 10}"
    if not avro:
        return json.dumps({**record, "ts": when.isoformat()}).encode()
    out = io.BytesIO()
    fastavro.schemaless_writer(out, _PARSED[version], record)
    return b"\x00" + struct.pack(">I", version) + out.getvalue()
