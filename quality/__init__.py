"""deltasink's data-quality layer: expectation suites, validation, result tables and reports.

The public entry points are :func:`quality.validate.validate_table`,
:func:`quality.results.write_run_metrics` and :func:`quality.report.write_report`.
"""

from __future__ import annotations

from quality.model import ExpectationOutcome, ValidationReport

__all__ = ["ExpectationOutcome", "ValidationReport"]
