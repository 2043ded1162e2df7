"""The model settings every config section shares: frozen, no unknown keys, documented fields."""

from __future__ import annotations

from pydantic import ConfigDict

#: Frozen (a config never changes under a run), ``extra="forbid"`` (a misspelt key is an error,
#: not a silent default), and each field's docstring as its description (the reference).
FROZEN = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)
