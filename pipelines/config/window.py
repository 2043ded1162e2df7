"""``target.dedup_window`` left out of a config: the default, per mode and per schema.

The default is the cheapest window that still catches every copy the sink exists for (retries,
replays after a crash or a lost checkpoint, foreign transactional copies): each is the same
record again, so it carries the same event time, and an event-time window of any width catches
it, on any date, for a slice of a day read per batch (:mod:`pipelines.sink.event_window`).

* insert-only, the schema's time is a field of the event: :data:`DEFAULT_DEDUP_WINDOW` (``15m``);
* insert-only, the schema's time is the Kafka timestamp (``event_time: kafka.timestamp``): that
  timestamp is set again by every send, so a copy produced again upstream is re-stamped by as
  long as the replay took; such a schema keeps the whole-day window of before
  (:data:`KAFKA_TIME_WINDOW_DAYS`, or ``0d`` when ``event_date`` is not a partition column,
  where the key is matched across all dates anyway);
* ``mode: upsert`` and ``mode: scd2``: ``0d`` (the key is matched across the whole table; a
  window does not apply).

A window written in the config, ``1d`` included, is kept as written.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pipelines.config.modes import VERSIONED

#: The partition column the dedup window widens.
DATE_COLUMN = "event_date"
#: The default for an insert-only pipeline whose events carry their own time: an event-time
#: window three times librdkafka's delivery timeout (``message.timeout.ms``, 5 min), so an
#: application that gives up on a send and sends the event again, re-stamped, is caught too.
DEFAULT_DEDUP_WINDOW = "15m"
#: The default, in days, where the event time is the Kafka timestamp (re-stamped by every send).
KAFKA_TIME_WINDOW_DAYS = 1
#: The time source that means "the Kafka record timestamp" (schemas.base.KAFKA_TIMESTAMP).
_KAFKA_TIME = "kafka.timestamp"


def default_window(mode: object, time_field: str | None,
                   partition_by: Iterable[str] | None, clustered: bool = False) -> str:
    """The ``dedup_window`` a target without one gets.

    Args:
        mode: ``target.mode`` as written (None: insert-only).
        time_field: the schema's ``event_time`` source; None when the schema is not known yet
            (an unknown registered name, which the run reports).
        partition_by: ``target.partition_by`` as written (None: the default, ``[event_date]``).
        clustered: ``target.cluster_by`` is set (a clustered table has dates, and no partitions).

    Returns:
        A window as the config would spell it (``15m``, ``1d``, ``0d``).
    """
    if mode in VERSIONED:
        return "0d"
    if time_field == _KAFKA_TIME:
        dated = clustered or partition_by is None or DATE_COLUMN in partition_by
        return f"{KAFKA_TIME_WINDOW_DAYS}d" if dated else "0d"
    return DEFAULT_DEDUP_WINDOW


def fill_window(raw: Any, time_field: str | None = None) -> Any:
    """``raw`` (a target mapping) with ``dedup_window`` set to its default when it is left out
    or null; anything else is returned as it is."""
    if not isinstance(raw, dict) or raw.get("dedup_window") is not None:
        return raw
    return {**raw, "dedup_window": default_window(raw.get("mode"), time_field,
                                                  raw.get("partition_by"),
                                                  bool(raw.get("cluster_by")))}
