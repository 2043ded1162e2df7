"""``quality.validate_every``: how often a continuous run validates what it wrote."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from pipelines.config.units import parse_duration

_BATCHES = re.compile(r"^\s*(\d+)\s*(?:batch|batches)?\s*$")
#: The default cadence: every 15 minutes.
DEFAULT_EVERY_SECONDS = 900.0


class Cadence(BaseModel):
    """Validate every ``seconds`` of wall-clock time, or every ``batches`` committed batches.

    Written in YAML as a duration (``15m``, ``1h``) or a batch count (``20 batches``, or a bare
    integer ``20``). Exactly one of the two fields is set.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    seconds: float | None = Field(None, gt=0)
    batches: int | None = Field(None, gt=0)

    @model_validator(mode="before")
    @classmethod
    def _parse(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError("not a cadence (use e.g. 15m, 1h or 20 batches)")
        if isinstance(value, int):
            return {"batches": value}
        if isinstance(value, str):
            match = _BATCHES.match(value)
            if match:
                return {"batches": int(match.group(1))}
            try:
                return {"seconds": parse_duration(value)}
            except ValueError:
                raise ValueError("not a cadence (use e.g. 15m, 1h or 20 batches)") from None
        return value

    @model_validator(mode="after")
    def _exactly_one(self) -> Cadence:
        if (self.seconds is None) == (self.batches is None):
            raise ValueError("set validate_every to a duration (15m) or a batch count (20 batches)")
        return self

    def due(self, batches: int, seconds: float) -> bool:
        """Whether a validation is due after ``batches`` new batches and ``seconds`` elapsed."""
        if self.batches is not None:
            return batches >= self.batches
        return seconds >= (self.seconds or 0.0)

    def describe(self) -> str:
        """The cadence as written: ``every 20 batches`` or ``every 900s``."""
        if self.batches is not None:
            return f"every {self.batches} batch{'es' if self.batches != 1 else ''}"
        return f"every {self.seconds:g}s"


def default_cadence() -> Cadence:
    """The default ``quality.validate_every``: 15 minutes."""
    return Cadence(seconds=DEFAULT_EVERY_SECONDS, batches=None)
