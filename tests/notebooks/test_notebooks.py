"""The Databricks notebooks, run locally end to end with a ``dbutils`` stand-in.

Each notebook's source is executed cell by cell (as a job task would) against the real embedded
Kafka broker and Delta tables in a temp lake, with ``spark`` and ``dbutils`` as globals.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from pipelines import jobs, widgets
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.errors import ConfigError, QualityError
from pipelines.ops.maintenance import MIN_RETAIN_HOURS
from pipelines.kafka.produce import ProduceSummary, produce_events
from pipelines.sink.metrics import RunResult
from quality.model import ValidationReport
from quality.suites import QUARANTINE_EXPECTATION
from tests.support.dbutils import (
    DBUtils,
    declared_widgets,
    is_markdown,
    make_dbutils,
    notebook_cells,
    run_notebook,
)

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
ENTRY = {"ingest.py": "ingest", "validate.py": "validate", "maintenance.py": "maintain"}
DASHBOARD = NOTEBOOKS / "dashboards" / "quality.lvdash.json"


def pipeline_params(lake: Path, bootstrap: str, topic: str) -> dict[str, str]:
    """The widgets every notebook shares, pointing at local paths in ``lake``."""
    return {
        "pipeline_name": "orders_bronze", "bootstrap_servers": bootstrap, "topics": topic,
        "target": str(lake / "orders"), "quarantine": str(lake / "orders_quarantine"),
        "checkpoint": str(lake / "_checkpoints" / "orders_bronze"),
        "quality_results": str(lake / "_quality" / "results"),
        "run_metrics": str(lake / "_quality" / "run_metrics"),
        "quality_docs": str(lake / "_quality" / "docs"),
    }


def ingest_params(lake: Path, bootstrap: str, topic: str) -> dict[str, str]:
    return {**pipeline_params(lake, bootstrap, topic), "trigger": "available-now",
            "interval": "1s", "secret_scope": "", "sasl_mechanism": ""}


@pytest.mark.parametrize("name", sorted(ENTRY))
def test_notebook_is_databricks_source_with_widgets_then_one_call(name: str) -> None:
    path = NOTEBOOKS / name
    assert path.read_text(encoding="utf-8").startswith("# Databricks notebook source\n")
    cells = notebook_cells(path)
    assert is_markdown(cells[0]) and cells[0].startswith("# MAGIC %md")
    code = [c for c in cells if not is_markdown(c)]
    assert len(code) == 2, "a widgets cell, then one call"
    widgets_cell, call_cell = (ast.parse(c) for c in code)
    assert "dbutils.widgets.text(" in code[0]
    constant = f"{name.removesuffix('.py').upper()}_WIDGETS"
    assert f"params = jobs.read_widgets(dbutils.widgets.get, jobs.{constant})" in code[0]
    (statement,) = call_cell.body
    assert isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Call)
    func = statement.value.func
    assert isinstance(func, ast.Attribute) and func.attr == ENTRY[name]
    assert isinstance(func.value, ast.Name) and func.value.id == "jobs"
    assert all(isinstance(s, ast.Import | ast.ImportFrom | ast.Expr | ast.Assign)
               for s in widgets_cell.body)


@pytest.mark.parametrize(("name", "drop"), [
    ("ingest.py", "bootstrap_servers"), ("validate.py", "target"),
    ("maintenance.py", "checkpoint"),
])
def test_missing_widget_fails_fast_naming_it(
    name: str, drop: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    called: list[str] = []
    monkeypatch.setattr(jobs, ENTRY[name], lambda *a, **k: called.append(name))
    params = {**ingest_params(tmp_path, "127.0.0.1:9", "orders"), "full": "true",
              "run_id": "", "retain_hours": "168"}
    del params[drop]

    with pytest.raises(ConfigError, match=f"missing or empty: {drop}\\. Set them"):
        run_notebook(NOTEBOOKS / name, make_dbutils(params), spark=None)
    assert called == [], "nothing may run after a missing widget"


def test_empty_required_widget_is_reported_with_every_other_one(tmp_path: Path) -> None:
    params = {**ingest_params(tmp_path, "", "orders"), "topics": " "}
    with pytest.raises(ConfigError, match="missing or empty: bootstrap_servers, topics\\."):
        run_notebook(NOTEBOOKS / "ingest.py", make_dbutils(params), spark=None)


def test_ingest_reads_sasl_secrets_through_dbutils_and_never_prints_them(
    spark: SparkSession, lake: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import pipelines.run

    seen: dict[str, Any] = {}

    def fake_run(session: SparkSession, config: Any, **kwargs: Any) -> RunResult:
        seen.update(config=config, **kwargs)
        return RunResult(config.name, "run-secret", ())

    monkeypatch.setattr(pipelines.run, "run_pipeline", fake_run)
    params = {**ingest_params(lake, "broker:9093", "orders"), "secret_scope": "kafka",
              "sasl_mechanism": "SCRAM-SHA-512"}
    secrets = {("kafka", widgets.SASL_USERNAME_KEY): "svc-user",
               ("kafka", widgets.SASL_PASSWORD_KEY): "s3cr3t-pw"}
    dbutils = make_dbutils(params, secrets)

    run_notebook(NOTEBOOKS / "ingest.py", dbutils, spark)

    assert dbutils.secrets.read == [("kafka", widgets.SASL_USERNAME_KEY),
                                    ("kafka", widgets.SASL_PASSWORD_KEY)]
    options = seen["config"].source.kafka_options()
    assert options["security.protocol"] == "SASL_SSL"
    assert options["sasl.mechanism"] == "SCRAM-SHA-512"
    assert options["sasl.jaas.config"] == (
        'org.apache.kafka.common.security.scram.ScramLoginModule required '
        'username="svc-user" password="s3cr3t-pw";')
    assert seen["validate"] is False and seen["trigger"] == "available-now"
    assert "s3cr3t-pw" not in capsys.readouterr().out + repr(seen["config"])
    assert dbutils.jobs.taskValues.values == {"run_id": "run-secret"}


@pytest.fixture(scope="module")
def few_listing_tasks(spark: SparkSession) -> Iterator[None]:
    """VACUUM lists files with one task per ``parallelism`` slot (10000 by default)."""
    key = "spark.sql.sources.parallelPartitionDiscovery.parallelism"
    before = spark.conf.get(key)
    spark.conf.set(key, "4")
    yield
    spark.conf.set(key, before)


@dataclass(frozen=True)
class Ingested:
    """The ingest job run twice into one lake (so partitions hold several small files)."""

    lake: Path
    dbutils: DBUtils
    runs: tuple[RunResult, RunResult]
    sent: tuple[ProduceSummary, ProduceSummary]
    validation: ValidationReport


@pytest.fixture(scope="module")
def ingested(spark: SparkSession, broker: EmbeddedBroker,
             tmp_path_factory: pytest.TempPathFactory, few_listing_tasks: None) -> Ingested:
    """Events (with duplicates and a poison pill) ingested by two runs of the ingest notebook,
    then the second run validated by the validate notebook with the run id it published, as the
    ingest job's two tasks do."""
    lake = tmp_path_factory.mktemp("notebook-lake")
    runs, sent = [], []
    for seed, count in ((7, 200), (8, 100)):
        sent.append(produce_events(broker.bootstrap_servers, "nb_orders", count,
                                   duplicate_rate=0.1, poison_rate=0.005, seed=seed,
                                   id_prefix="nb"))
        dbutils = make_dbutils(ingest_params(lake, broker.bootstrap_servers, "nb_orders"))
        runs.append(run_notebook(NOTEBOOKS / "ingest.py", dbutils, spark)["result"])
    params = {**pipeline_params(lake, "unused:9092", "nb_orders"), "full": "false",
              "run_id": dbutils.jobs.taskValues.values["run_id"]}
    report = run_notebook(NOTEBOOKS / "validate.py", make_dbutils(params), spark)["report"]
    return Ingested(lake, dbutils, (runs[0], runs[1]), (sent[0], sent[1]), report)


def test_ingest_notebook_lands_every_event_once(spark: SparkSession, ingested: Ingested) -> None:
    lake, (first, second) = ingested.lake, ingested.runs
    target = spark.read.format("delta").load(str(lake / "orders"))
    ids = {i for summary in ingested.sent for i in summary.event_ids}
    assert target.count() == len(ids) == 300
    assert {r.event_id for r in target.select("event_id").collect()} == ids
    quarantined = spark.read.format("delta").load(str(lake / "orders_quarantine")).count()
    poison = sum(sum(s.poison.values()) for s in ingested.sent)
    assert quarantined == poison == first.quarantined + second.quarantined > 0
    assert (first.inserted, second.inserted) == (200, 100)
    assert (first.records_in, second.records_in) == tuple(s.sent for s in ingested.sent)
    assert ingested.dbutils.jobs.taskValues.values["run_id"] == second.run_id
    metrics = spark.read.format("delta").load(str(lake / "_quality" / "run_metrics"))
    for run in (first, second):
        assert metrics.where(metrics.run_id == run.run_id).count() == len(run.batches) > 0


def test_validate_notebook_passes_for_the_ingested_run(spark: SparkSession,
                                                       ingested: Ingested) -> None:
    lake, run, report = ingested.lake, ingested.runs[1], ingested.validation
    assert ingested.dbutils.jobs.taskValues.values["run_id"] == run.run_id
    assert report.success and report.run_id == run.run_id
    quarantine = next(r for r in report.results if r.expectation == QUARANTINE_EXPECTATION)
    assert f"{run.quarantined}/{run.records_in}" in quarantine.observed_value
    assert any(r.expectation == "expect_column_values_to_be_unique" for r in report.results)
    rows = spark.read.format("delta").load(str(lake / "_quality" / "results"))
    assert rows.where(rows.run_id == run.run_id).count() == len(report.results)


def test_maintenance_notebook_optimizes_vacuums_and_validates_the_whole_table(
    spark: SparkSession, ingested: Ingested
) -> None:
    lake = ingested.lake
    orders = f"delta.`{lake / 'orders'}`"
    partitions = spark.sql(f"SELECT DISTINCT event_date FROM {orders}").count()
    assert spark.sql(f"DESCRIBE DETAIL {orders}").first().numFiles > partitions
    params = {**pipeline_params(lake, "unused:9092", "nb_orders"),
              "retain_hours": str(MIN_RETAIN_HOURS)}

    report = run_notebook(NOTEBOOKS / "maintenance.py", make_dbutils(params), spark)["report"]

    for table in ("orders", "orders_quarantine", "_quality/results", "_quality/run_metrics"):
        described = f"delta.`{lake / table}`"
        assert f"OPTIMIZE {described}" in report.actions
        assert f"VACUUM {described} RETAIN {MIN_RETAIN_HOURS} HOURS" in report.actions
    assert report.validation is not None and report.validation.success
    history = spark.sql(f"DESCRIBE HISTORY {orders}").collect()
    assert {"OPTIMIZE", "VACUUM START", "VACUUM END"} <= {r.operation for r in history}
    # Compacted: one file per event_date partition.
    assert spark.sql(f"DESCRIBE DETAIL {orders}").first().numFiles == partitions


def test_maintenance_refuses_a_retention_below_the_replay_horizon(
    spark: SparkSession, ingested: Ingested
) -> None:
    lake = ingested.lake
    params = {**pipeline_params(lake, "unused:9092", "nb_orders"), "retain_hours": "24"}
    with pytest.raises(ConfigError, match="below the 168h minimum"):
        run_notebook(NOTEBOOKS / "maintenance.py", make_dbutils(params), spark)


def test_dashboard_queries_run_against_the_tables_the_notebooks_wrote(
    spark: SparkSession, ingested: Ingested
) -> None:
    lake, runs = ingested.lake, ingested.runs
    spark.read.format("delta").load(str(lake / "_quality" / "run_metrics")) \
        .createOrReplaceTempView("deltasink_run_metrics")
    spark.read.format("delta").load(str(lake / "_quality" / "results")) \
        .createOrReplaceTempView("deltasink_quality_results")
    definition = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    out = {d["name"]: spark.sql("".join(d["queryLines"])).collect()
           for d in definition["datasets"]}
    assert sum(r.inserted for r in out["batches"]) == sum(run.inserted for run in runs) == 300
    assert sum(r.quarantined for r in out["batches"]) == sum(run.quarantined for run in runs)
    assert sum(r.duplicates_dropped for r in out["batches"]) == sum(
        b.duplicates_in_batch + b.duplicates_by_merge for run in runs for b in run.batches)
    verdict = {r.run_id: r.verdict for r in out["verdicts"]}
    assert verdict[runs[1].run_id] == "PASSED"
    assert out["failures"] == []
    for dataset in definition["datasets"]:
        columns = set(spark.sql("".join(dataset["queryLines"])).columns)
        for page in definition["pages"]:
            for item in page["layout"]:
                for query in item["widget"].get("queries", []):
                    if query["query"]["datasetName"] == dataset["name"]:
                        for fld in query["query"]["fields"]:
                            names = set(fld["expression"].replace("`", " ").split())
                            assert names & columns, (item["widget"]["name"], fld)


def test_validate_notebook_fails_the_task_when_the_table_has_duplicates(
    spark: SparkSession, broker: EmbeddedBroker, lake: Path
) -> None:
    produce_events(broker.bootstrap_servers, "nb_dupes", 20, seed=3, id_prefix="dup")
    dbutils = make_dbutils(ingest_params(lake, broker.bootstrap_servers, "nb_dupes"))
    run_notebook(NOTEBOOKS / "ingest.py", dbutils, spark)
    target = spark.read.format("delta").load(str(lake / "orders"))
    target.limit(1).write.format("delta").mode("append").save(str(lake / "orders"))
    params = {**pipeline_params(lake, "unused:9092", "nb_dupes"), "run_id": "", "full": "true"}

    with pytest.raises(QualityError, match="expect_column_values_to_be_unique"):
        run_notebook(NOTEBOOKS / "validate.py", make_dbutils(params), spark)


def test_every_notebook_declares_the_widgets_its_entry_point_reads() -> None:
    specs = {"ingest.py": jobs.INGEST_WIDGETS, "validate.py": jobs.VALIDATE_WIDGETS,
             "maintenance.py": jobs.MAINTENANCE_WIDGETS}
    for name, spec in specs.items():
        assert tuple(declared_widgets(NOTEBOOKS / name)) == spec, name
