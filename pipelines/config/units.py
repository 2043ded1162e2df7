"""Human-friendly units in config and on the command line: durations like ``10s`` or ``1h``."""

from __future__ import annotations

import re

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


def parse_whole_days(value: object) -> int:
    """Parse a duration that must be a whole number of days (``0d``, ``3d``, ``72h``).

    Args:
        value: a duration string, or a bare integer meaning days.

    Returns:
        The number of days.

    Raises:
        ValueError: if the value is not a duration, or not a whole number of days.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    seconds = parse_duration(value)
    if isinstance(value, float) or seconds % 86400:
        raise ValueError("must be a whole number of days, e.g. 0d, 1d or 3d")
    return int(seconds // 86400)
