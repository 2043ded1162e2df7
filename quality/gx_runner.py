"""Run a suite against a Spark DataFrame in a GX context, and keep Data Docs up to date.

One in-memory GX context is created per process and per Data Docs folder, then reused by every
validation (creating it takes about a second of Python). Its only durable output is the Data
Docs site in a filesystem folder; the history of verdicts lives in the quality-results Delta
table, not here, and the context's in-memory results are dropped before each validation.

A validation is evaluated in up to two steps, so a pass costs as few Spark jobs as it can:

1. the **verdict**: GX judges a one-row summary of the rows (``quality/summary.py``): one Spark
   aggregate counts every expectation's unexpected rows, and GX checks, in pandas, that each
   count is 0. A suite that cannot be summarized gets its verdict from the whole suite over the
   rows instead, with ``BASIC`` results and no sample values;
2. the **rows**: the whole suite over the rows, only when the verdict failed (with ``SUMMARY``
   results: unexpected values and the dedup keys of unexpected rows), or when Data Docs must
   be redrawn (``quality/docs.py``: a first validation, or a verdict that changed; ``BASIC``
   results first, ``SUMMARY`` only if they fail), so that the site shows the suite users know.
   Its outcomes are then the ones reported.

Both steps judge the same DataFrame (one Delta version). Data Docs are redrawn only when what
they show changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import great_expectations as gx
import pandas as pd
from great_expectations.data_context.types.base import (
    DataContextConfig,
    InMemoryStoreBackendDefaults,
    ProgressBarsConfig,
)
from great_expectations.expectations.core.expect_column_values_to_be_between import (
    ExpectColumnValuesToBeBetween,
)
from pyspark.sql import DataFrame

from quality.docs import needs_rebuild, remember
from quality.model import ExpectationOutcome
from quality.summary import comparable, summarize, summary_outcomes, summary_plan

#: The name of the Data Docs site in the GX context.
SITE_NAME = "deltasink"
#: At most this many sample keys are kept per expectation.
MAX_SAMPLE_KEYS = 20


#: A verdict only: each expectation's unexpected count and the row count, no sample values.
VERDICT_FORMAT: dict[str, Any] = {"result_format": "BASIC", "partial_unexpected_count": 0}

_contexts: dict[Path, tuple[Any, Any, Any]] = {}  # docs folder -> context, rows, summary


def _new_context(docs_dir: Path) -> Any:
    """An in-memory GX context whose only Data Docs site is the folder ``docs_dir``."""
    site = {
        "class_name": "SiteBuilder",
        "show_how_to_buttons": False,
        "store_backend": {"class_name": "TupleFilesystemStoreBackend",
                          "base_directory": str(docs_dir)},
        "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
    }
    project = DataContextConfig(
        store_backend_defaults=InMemoryStoreBackendDefaults(init_temp_docs_sites=False),
        data_docs_sites={SITE_NAME: site},
        analytics_enabled=False,
        progress_bars=ProgressBarsConfig(globally=False),
    )
    return gx.get_context(mode="ephemeral", project_config=project)


def _context(docs_dir: Path) -> tuple[Any, Any, Any]:
    """The process's GX context for ``docs_dir``, and its whole-DataFrame batch definitions:
    Spark's for the rows, pandas' for their summary.

    Only the last folder's context is kept: ``gx.get_context`` makes the context it creates the
    process's current one, which the checkpoint's stores are looked up in.
    """
    key = docs_dir.resolve()
    if key not in _contexts:
        _contexts.clear()
        context = _new_context(docs_dir)
        rows = context.data_sources.add_spark("target").add_dataframe_asset("rows")
        summary = context.data_sources.add_pandas("summary").add_dataframe_asset("summary")
        _contexts[key] = (context, rows.add_batch_definition_whole_dataframe("snapshot"),
                          summary.add_batch_definition_whole_dataframe("summary"))
    context, rows_definition, summary_definition = _contexts[key]
    store = context.validation_results_store  # the index lists only this validation, as before
    for old in store.list_keys():
        store.remove_key(old)
    return context, rows_definition, summary_definition


def _keys(result: Mapping[str, Any], key: str, column: str | None) -> list[str]:
    """Distinct sample keys of unexpected rows, from a validation result's ``result`` dict."""
    found: list[str] = []
    for row in result.get("partial_unexpected_index_list") or []:
        if isinstance(row, Mapping) and row.get(key) is not None:
            found.append(str(row[key]))
    if not found and column == key:
        found = [str(v) for v in result.get("partial_unexpected_list") or [] if v is not None]
    return list(dict.fromkeys(found))[:MAX_SAMPLE_KEYS]


def _outcome(res: Any, key: str) -> ExpectationOutcome:
    """Turn one GX ``ExpectationValidationResult`` into an :class:`ExpectationOutcome`."""
    cfg = res.expectation_config
    kwargs = cfg.kwargs
    column = kwargs.get("column") or (",".join(kwargs["column_list"])
                                      if kwargs.get("column_list") else None)
    result: Mapping[str, Any] = res.result or {}
    error = (res.exception_info or {}).get("exception_message") if res.exception_info else None
    unexpected = int(result.get("unexpected_count") or 0)
    if error:
        observed = f"error: {error}"
    elif "observed_value" in result:
        observed = str(result["observed_value"])
    elif "element_count" in result:
        observed = f"{unexpected} unexpected of {result['element_count']} rows"
    else:
        observed = ""
    return ExpectationOutcome(
        expectation=str(cfg.type),
        column=column,
        success=bool(res.success),
        observed_value=observed,
        unexpected_count=unexpected,
        sample_keys=_keys(result, key, column) if not res.success else [],
    )


def _check(context: Any, batch_definition: Any, suite: gx.ExpectationSuite, df: DataFrame,
           result_format: dict[str, Any], run_id: Any) -> tuple[list[Any], Any]:
    """Run ``suite`` on ``df``: the GX expectation results and the validation result's id."""
    validation = context.validation_definitions.add_or_update(
        gx.ValidationDefinition(name=suite.name, data=batch_definition, suite=suite))
    checkpoint = context.checkpoints.add_or_update(gx.Checkpoint(
        name=suite.name, validation_definitions=[validation], result_format=result_format))
    result = checkpoint.run(batch_parameters={"dataframe": df}, run_id=run_id)
    (identifier, validation_result), = result.run_results.items()
    return list(validation_result.results), identifier


def _judged(context: Any, summary_definition: Any, suite: gx.ExpectationSuite, df: DataFrame,
            run_id: Any) -> list[ExpectationOutcome] | None:
    """Step 1: GX's verdict on the rows' one-row summary, as the suite's outcomes; None when
    the suite cannot be summarized (``quality/summary.py``): an expectation it cannot count, a
    bound of another type than its column, or an aggregate that fails. The rows step then
    judges, and reports GX's own error if there is one. Its result is not drawn."""
    plan = summary_plan(suite)
    if plan is None or not comparable(df, plan):
        return None
    try:
        counts = summarize(df, plan)
    except Exception:  # the rows step judges, and reports GX's own error
        return None
    checks = gx.ExpectationSuite(name=f"{suite.name}.summary", expectations=[
        ExpectColumnValuesToBeBetween(column=check.label, min_value=0, max_value=0)
        for check in plan])
    checks = context.suites.add_or_update(checks)
    results, shown = _check(context, summary_definition, checks, pd.DataFrame([counts]),
                            VERDICT_FORMAT, run_id)
    context.validation_results_store.remove_key(shown)
    verdicts = {str(r.expectation_config.kwargs["column"]): bool(r.success) for r in results}
    return summary_outcomes(plan, counts, verdicts)


def _rows(context: Any, rows_definition: Any, suite: gx.ExpectationSuite, df: DataFrame,
          run_id: Any, key: str, *, detail: bool) -> tuple[list[ExpectationOutcome], Any]:
    """Step 2: the suite over the rows; the outcomes, and the validation result to draw.

    With ``detail`` (a failed verdict) it fetches the unexpected values and sample keys at once;
    otherwise it first runs with ``BASIC`` results, and again with them only if that fails.
    """
    if not detail:
        results, shown = _check(context, rows_definition, suite, df, VERDICT_FORMAT, run_id)
        if all(r.success for r in results):
            return [_outcome(r, key) for r in results], shown
        context.validation_results_store.remove_key(shown)  # drawn: the detail only
    results, shown = _check(context, rows_definition, suite, df, {
        "result_format": "SUMMARY", "unexpected_index_column_names": [key],
        "partial_unexpected_count": MAX_SAMPLE_KEYS}, run_id)
    return [_outcome(r, key) for r in results], shown


def run_suite(
    df: DataFrame | None,
    suite: gx.ExpectationSuite,
    *,
    key: str,
    docs_dir: Path,
    run_name: str,
    run_time: datetime,
) -> tuple[list[ExpectationOutcome], str | None]:
    """Validate ``df`` against ``suite``, and redraw the Data Docs site in ``docs_dir`` if needed.

    A pass runs the verdict step only, unless Data Docs must be redrawn; a failure adds the
    rows step (module docstring).

    Args:
        df: the rows to validate; ``None`` validates nothing and only documents the suite.
        suite: the expectations (a fresh, unsaved suite).
        key: the dedup key column, reported as the sample key of unexpected rows.
        docs_dir: the folder of the Data Docs site (created if missing).
        run_name: the run's id, shown in Data Docs.
        run_time: when the validation ran, shown in Data Docs.

    Returns:
        The outcomes (empty when ``df`` is ``None``), and the ``file://`` URL of the Data Docs
        index page (``None`` if GX built no site).
    """
    docs_dir.mkdir(parents=True, exist_ok=True)
    context, rows_definition, summary_definition = _context(docs_dir)
    suite = context.suites.add_or_update(suite)
    outcomes: list[ExpectationOutcome] = []
    if df is not None:
        run_id = gx.RunIdentifier(run_name=run_name, run_time=run_time)
        try:
            outcomes = _judged(context, summary_definition, suite, df, run_id) or []
            passed = bool(outcomes) and all(o.success for o in outcomes)
            if not passed or needs_rebuild(docs_dir, suite.name, True):
                outcomes, shown = _rows(context, rows_definition, suite, df, run_id, key,
                                        detail=bool(outcomes) and not passed)
                success = all(o.success for o in outcomes)
                if needs_rebuild(docs_dir, suite.name, success):
                    context.build_data_docs(site_names=[SITE_NAME], resource_identifiers=[shown])
                    remember(docs_dir, suite.name, success)
        finally:
            df.unpersist()
    elif not (docs_dir / "index.html").is_file():
        context.build_data_docs(site_names=[SITE_NAME])
    urls = context.get_docs_sites_urls(site_name=SITE_NAME)
    url = urls[0].get("site_url") if urls else None
    return outcomes, str(url) if url else None
