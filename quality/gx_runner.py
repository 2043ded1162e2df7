"""Run a suite against a Spark DataFrame in an ephemeral GX context, and build Data Docs.

Nothing is kept between calls: each validation builds its own in-memory context, whose only
durable output is the Data Docs site written into a filesystem folder. The history of verdicts
lives in the quality-results Delta table, not here.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import great_expectations as gx
from great_expectations.checkpoint.actions import UpdateDataDocsAction
from great_expectations.data_context.types.base import (
    DataContextConfig,
    InMemoryStoreBackendDefaults,
    ProgressBarsConfig,
)
from pyspark.sql import DataFrame

from quality.model import ExpectationOutcome

#: The name of the Data Docs site in the GX context.
SITE_NAME = "deltasink"
#: At most this many sample keys are kept per expectation.
MAX_SAMPLE_KEYS = 20


def _context(docs_dir: Path) -> Any:
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


def run_suite(
    df: DataFrame | None,
    suite: gx.ExpectationSuite,
    *,
    key: str,
    docs_dir: Path,
    run_name: str,
    run_time: datetime,
) -> tuple[list[ExpectationOutcome], str | None]:
    """Validate ``df`` against ``suite`` and (re)build the Data Docs site in ``docs_dir``.

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
    context = _context(docs_dir)
    suite = context.suites.add(suite)
    outcomes: list[ExpectationOutcome] = []
    if df is not None:
        asset = context.data_sources.add_spark("target").add_dataframe_asset("rows")
        batch_definition = asset.add_batch_definition_whole_dataframe("snapshot")
        validation = context.validation_definitions.add(
            gx.ValidationDefinition(name=suite.name, data=batch_definition, suite=suite))
        checkpoint = context.checkpoints.add(gx.Checkpoint(
            name=suite.name,
            validation_definitions=[validation],
            actions=[UpdateDataDocsAction(name="data_docs", site_names=[SITE_NAME])],
            result_format={"result_format": "SUMMARY", "unexpected_index_column_names": [key],
                           "partial_unexpected_count": MAX_SAMPLE_KEYS},
        ))
        try:
            result = checkpoint.run(batch_parameters={"dataframe": df},
                                    run_id=gx.RunIdentifier(run_name=run_name, run_time=run_time))
        finally:
            df.unpersist()
        for validation_result in result.run_results.values():
            outcomes.extend(_outcome(r, key) for r in validation_result.results)
    else:
        context.build_data_docs(site_names=[SITE_NAME])
    urls = context.get_docs_sites_urls(site_name=SITE_NAME)
    url = urls[0].get("site_url") if urls else None
    return outcomes, str(url) if url else None
