"""deltasink: an exactly-once Kafka to Delta Lake sink."""

from __future__ import annotations

__version__ = "0.1.0"
