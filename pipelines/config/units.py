"""Human-friendly units in config and on the command line: durations like ``10s`` or ``1h``."""

from __future__ import annotations

import re
from datetime import timedelta

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_FACTORS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(value: object) -> float:
    """Parse a duration into seconds.

    Args:
        value: a number of seconds, or a string such as ``"500ms"``, ``"10s"``, ``"2m"``, ``"1h"``.

    Returns:
        The duration in seconds.

    Raises:
        ValueError: if the value is not a duration.
    """
    if isinstance(value, bool):
        raise ValueError("not a duration (use e.g. 500ms, 10s, 2m, 1h)")
    if isinstance(value, int | float):
        return float(value)
    match = _DURATION.match(str(value))
    if not match:
        raise ValueError("not a duration (use e.g. 500ms, 10s, 2m, 1h)")
    number, unit = match.groups()
    return float(number) * _FACTORS[unit or "s"]


def parse_window(value: object) -> int | timedelta:
    """Parse a dedup window: whole days as a number of days, anything else as a duration.

    ``1d``, ``72h`` and a bare integer are whole days (matched on ``event_date``); ``1h``,
    ``90m`` or ``36h`` are event-time windows, whole seconds from 1 s up.

    Args:
        value: a duration string, a bare integer meaning days, or an already parsed window.

    Returns:
        Days (int), or the duration (a :class:`timedelta` that is not a whole number of days).

    Raises:
        ValueError: if the value is not a duration, or not whole seconds.
    """
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, int) and not isinstance(value, bool):
        return value
    else:
        seconds = parse_duration(value)
        if isinstance(value, float):
            raise ValueError("must be whole days (e.g. 1d) or a duration (e.g. 1h, 90m)")
    if seconds % 86400 == 0:
        return int(seconds // 86400)
    if seconds < 1 or seconds % 1:
        raise ValueError("must be whole days (e.g. 1d) or whole seconds (e.g. 1h, 90m, 30s)")
    return timedelta(seconds=int(seconds))


_INTERVAL_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]+)")
_INTERVAL_UNITS = {"microsecond": 1e-6, "millisecond": 0.001, "second": 1.0, "minute": 60.0,
                   "hour": 3600.0, "day": 86400.0, "week": 604800.0}


def parse_interval(value: str) -> timedelta:
    """Parse a Delta table property interval (``interval 30 days``, ``168 hours``, ``2 weeks``).

    The form Delta's own ``parseCalendarInterval`` reads for ``delta.logRetentionDuration`` and
    the other ``...Duration`` properties: an optional ``interval``, then one or more
    ``<number> <unit>`` pairs (microseconds up to weeks). Months and years are refused, as Delta
    refuses them (a month has no fixed length).

    Raises:
        ValueError: not such an interval.
    """
    text = value.strip().lower().removeprefix("interval").strip()
    parts = _INTERVAL_PART.findall(text)
    if not text or _INTERVAL_PART.sub("", text).strip():
        raise ValueError(f"{value!r} is not an interval: write it as '30 days' or '168 hours'")
    seconds = 0.0
    for number, unit in parts:
        singular = unit.removesuffix("s")
        if singular in ("month", "year"):
            raise ValueError(f"{value!r}: Delta does not accept months or years in an interval; "
                             "write days ('365 days')")
        if singular not in _INTERVAL_UNITS:
            raise ValueError(f"{value!r}: unknown unit {unit!r}; use days, hours, minutes, "
                             "seconds or weeks")
        seconds += float(number) * _INTERVAL_UNITS[singular]
    return timedelta(seconds=seconds)
