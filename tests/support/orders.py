"""Records of the example YAML schema ``schemas/examples/orders_v1.yml`` (every field type)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ORDERS_SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "examples" / "orders_v1.yml"
#: 2026-03-01T12:00:00Z in epoch milliseconds.
BASE_MS = 1_772_366_400_000


def order(order_id: Any = "o-1", line_no: Any = 1, **changes: Any) -> dict[str, Any]:
    """A valid order line; other values replace fields (a value of ``...`` removes the field)."""
    offset = line_no if isinstance(line_no, int) else 0
    record: dict[str, Any] = {
        "order_id": order_id, "line_no": line_no, "qty": 3, "price": 9.5, "amount": 28.5,
        "paid": True, "status": "paid", "updated_at": BASE_MS + offset,
        "created_at": "2026-03-01T11:00:00+01:00", "ship_date": "2026-03-04",
        "tags": ["a", "b"], "address": {"city": "Lyon", "zip": "69001"},
        "attrs": {"gift": True},
    }
    for key, value in [("order_id", order_id), ("line_no", line_no), *changes.items()]:
        if value is ...:
            record.pop(key, None)
        else:
            record[key] = value
    return record


def encode(record: dict[str, Any]) -> bytes:
    """The record as a Kafka value."""
    return json.dumps(record).encode()
