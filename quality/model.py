"""The outcome of one validation: plain, frozen records that the CLI prints and tables store."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

#: How many sample keys :meth:`ValidationReport.summary_lines` shows per failing expectation.
SUMMARY_SAMPLE_KEYS = 5


@dataclass(frozen=True)
class ExpectationOutcome:
    """The verdict of one expectation.

    Attributes:
        expectation: the expectation type, e.g. ``expect_column_values_to_be_unique``.
        column: the column it checks (``a,b`` for compound checks), ``None`` for table-level ones.
        success: whether the expectation held.
        observed_value: what was observed, as text (e.g. ``2 unexpected of 1000 rows``).
        unexpected_count: how many rows broke it (0 for aggregate checks).
        sample_keys: a few dedup keys of rows that broke it (deduplicated, first seen first).
    """

    expectation: str
    column: str | None
    success: bool
    observed_value: str
    unexpected_count: int = 0
    sample_keys: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ValidationReport:
    """The result of validating a pipeline's target table at one Delta version.

    Attributes:
        run_id: the pipeline run this validation belongs to (or an ad-hoc id).
        pipeline: the pipeline name.
        table_version: the Delta version of the target snapshot that was validated, ``None``
            when no target rows were validated.
        success: whether every expectation held.
        results: one outcome per expectation.
        validated_at: when the validation ran (UTC).
        docs_index: the Data Docs index page, if Data Docs were built.
    """

    run_id: str
    pipeline: str
    table_version: int | None
    success: bool
    results: list[ExpectationOutcome]
    validated_at: datetime
    docs_index: str | None = None

    @property
    def failures(self) -> list[ExpectationOutcome]:
        """The outcomes that failed."""
        return [r for r in self.results if not r.success]

    def summary_lines(self) -> list[str]:
        """Human-readable lines: a verdict line, then one line per failing expectation.

        Each failure line names the expectation, its column, the unexpected count, the observed
        value and up to five sample keys.

        Returns:
            The lines, without trailing newlines.
        """
        version = "-" if self.table_version is None else str(self.table_version)
        verdict = "PASSED" if self.success else "FAILED"
        lines = [
            f"quality {verdict}: pipeline {self.pipeline} run {self.run_id} table version "
            f"{version}: {len(self.results) - len(self.failures)}/{len(self.results)} "
            "expectations passed"
        ]
        for outcome in self.failures:
            column = outcome.column or "(table)"
            line = (f"  FAILED {outcome.expectation} on {column}: "
                    f"{outcome.unexpected_count} unexpected; observed {outcome.observed_value}")
            if outcome.sample_keys:
                line += "; sample keys: " + ", ".join(outcome.sample_keys[:SUMMARY_SAMPLE_KEYS])
            lines.append(line)
        return lines
