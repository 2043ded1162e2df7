"""The Databricks notebooks, run locally end to end with a ``dbutils`` stand-in.

Each notebook's source is executed cell by cell (as a job task would) against the real embedded
Kafka broker and Delta tables in a temp lake, with ``spark`` and ``dbutils`` as globals. The
widgets are the ones the bundle generates for each pipeline (``pipelines/databricks/bundle.py``),
with the config file pointing at a copy of the bundle's ``notebooks/pipelines.d`` (topics
renamed) and no Unity Catalog placement, so each config's own (temp) locations are used.
"""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from confluent_kafka import Producer
from pyspark.sql import SparkSession

from pipelines.databricks import jobs
from pipelines.errors import ConfigError, QualityError
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import ProduceSummary, produce_events
from pipelines.kafka.topics import ensure_topic
from pipelines.ops.maintenance import MIN_RETAIN_HOURS
from pipelines.runtime.connect_server import ConnectServer
from pipelines.sink.metrics import RunResult
from quality.model import ValidationReport
from quality.suites import QUARANTINE_EXPECTATION
from tests.bundle.bundle import REQUIRED_VARS, ROOT, load_bundle, resolve_target
from tests.support.dbutils import (
    DBUtils,
    declared_widgets,
    is_markdown,
    make_dbutils,
    notebook_cells,
    run_notebook,
)
from tests.support.orders import encode, order

NOTEBOOKS = ROOT / "notebooks"
CONFIGS = "notebooks/pipelines.d"
ENTRY = {"ingest.py": "ingest", "validate.py": "validate", "maintenance.py": "maintain"}
DASHBOARD = NOTEBOOKS / "dashboards" / "quality.lvdash.json"


def local_bundle(root: Path, topics: dict[str, str]) -> Path:
    """Copy the bundle's pipeline configs (and the example schema they use) under ``root``,
    with each pipeline's topic renamed; the configs' relative paths land in ``root/lake``."""
    (root / CONFIGS).mkdir(parents=True)
    for file in (ROOT / CONFIGS).glob("*.yml"):
        raw = yaml.safe_load(file.read_text(encoding="utf-8"))
        if raw["name"] in topics:
            raw["source"]["topics"] = [topics[raw["name"]]]
        (root / CONFIGS / file.name).write_text(yaml.safe_dump(raw), encoding="utf-8")
    shutil.copytree(ROOT / "schemas" / "examples", root / "schemas" / "examples",
                    dirs_exist_ok=True)
    return root / "lake"


@cache
def generated_params(pipeline: str, job: str, task: str) -> dict[str, str]:
    """The base_parameters the bundle gives a task (dev target, variable defaults)."""
    config = resolve_target(load_bundle(), "dev", REQUIRED_VARS)
    # Jobs are grouped (one per schedule and compute): a pipeline's task is <pipeline>_<task>.
    (found,) = [t for j in config["resources"]["jobs"].values() for t in j["tasks"]
                if t["task_key"] == f"{pipeline}_{task}"]
    return dict(found["notebook_task"]["base_parameters"])


def task_params(root: Path, pipeline: str, job: str, task: str, bootstrap: str = "",
                **changes: str) -> dict[str, str]:
    """A generated task's widgets, run locally: the copied config, no catalog placement."""
    return {**generated_params(pipeline, job, task), "config": str(root / CONFIGS /
                                                                    f"{pipeline}.yml"),
            "catalog": "", "schema": "", "volume": "", "bootstrap_servers": bootstrap,
            **changes}


def ingest_params(root: Path, bootstrap: str, pipeline: str = "orders_bronze") -> dict[str, str]:
    return task_params(root, pipeline, "ingest", "ingest", bootstrap, interval="1s")


def produce_lines(bootstrap: str, topic: str, records: list[dict[str, Any]]) -> None:
    """Order lines (the orders_v1 schema) with their trace-id header."""
    ensure_topic(bootstrap, topic, partitions=2)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i, record in enumerate(records):
        producer.produce(topic, value=encode(record), headers=[("trace-id", f"t-{i}".encode())])
    assert producer.flush(30) == 0


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


@pytest.mark.parametrize("name", sorted(ENTRY))
def test_missing_config_widget_fails_fast_naming_it(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    called: list[str] = []
    monkeypatch.setattr(jobs, ENTRY[name], lambda *a, **k: called.append(name))
    params = {**ingest_params(tmp_path, "127.0.0.1:9"), "full": "true", "run_id": "",
              "retain_hours": "168"}
    del params["config"]

    with pytest.raises(ConfigError, match="missing or empty: config\\. Set them"):
        run_notebook(NOTEBOOKS / name, make_dbutils(params), spark=None)
    assert called == [], "nothing may run after a missing widget"


def test_empty_required_widget_is_reported_with_every_other_one(tmp_path: Path) -> None:
    params = {**ingest_params(tmp_path, ""), "config": " ", "trigger": ""}
    with pytest.raises(ConfigError, match="missing or empty: config, trigger\\."):
        run_notebook(NOTEBOOKS / "ingest.py", make_dbutils(params), spark=None)


def test_ingest_reads_the_configs_secrets_through_dbutils_and_never_prints_them(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import pipelines.run

    seen: dict[str, Any] = {}

    def fake_run(session: SparkSession, config: Any, **kwargs: Any) -> RunResult:
        seen.update(config=config, **kwargs)
        return RunResult(config.name, "run-secret", ())

    monkeypatch.setattr(pipelines.run, "run_pipeline", fake_run)
    local_bundle(tmp_path, {})
    config = tmp_path / CONFIGS / "orders_bronze.yml"
    raw = yaml.safe_load(config.read_text(encoding="utf-8"))
    raw["source"]["options"] = {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"}
    raw["databricks"] = {"secrets": {"DELTASINK_SOURCE__OPTIONS__SASL_JAAS_CONFIG": "jaas"}}
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    jaas = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
            'username="svc-user" password="s3cr3t-pw";')
    scope = generated_params("orders_bronze", "ingest", "ingest")["secret_scope"]
    dbutils = make_dbutils(ingest_params(tmp_path, "broker:9093"), {(scope, "jaas"): jaas})

    run_notebook(NOTEBOOKS / "ingest.py", dbutils, spark)

    assert dbutils.secrets.read == [(scope, "jaas")]
    options = seen["config"].source.kafka_options()
    assert options["sasl.jaas.config"] == jaas and options["security.protocol"] == "SASL_SSL"
    assert seen["validate"] is False and seen["trigger"] == "available-now"
    assert "s3cr3t-pw" not in capsys.readouterr().out + repr(seen["config"])
    assert dbutils.jobs.taskValues.values == {"run_id": "run-secret"}


@dataclass(frozen=True)
class Ingested:
    """Two bundle pipelines run by the notebooks into one lake (sharing the quality tables, as
    in the bundle): ``orders_bronze`` ingested by one run in micro-batches of
    :data:`ORDERS_BATCH_RECORDS` (so partitions hold several small files) and validated,
    ``order_lines`` (its YAML schema, composite key) ingested and validated."""

    root: Path
    lake: Path
    bootstrap: str
    dbutils: DBUtils
    run: RunResult
    sent: ProduceSummary
    validation: ValidationReport
    lines_run: RunResult
    lines_validation: ValidationReport


#: Order lines: 40 distinct (order_id, line_no), 8 redelivered, 1 poison (line_no "12").
LINES = [order(f"o-{i // 4}", i % 4 + 1) for i in range(40)]
LINE_COPIES = LINES[:8]
LINE_POISON = order("o-x", line_no="12")
#: orders_bronze's micro-batch size (``source.max_records_per_batch``) in the ingested lake: its
#: 300 events (about 330 records) land in two batches, each writing its own files.
ORDERS_BATCH_RECORDS = 200


def ingest_and_validate(spark: SparkSession, root: Path, pipeline: str,
                        bootstrap: str) -> tuple[RunResult, DBUtils, ValidationReport]:
    """The ingest job's two tasks: ingest, then validate the run id it published."""
    dbutils = make_dbutils(ingest_params(root, bootstrap, pipeline))
    run = run_notebook(NOTEBOOKS / "ingest.py", dbutils, spark)["result"]
    params = task_params(root, pipeline, "ingest", "validate", bootstrap,
                         run_id=dbutils.jobs.taskValues.values["run_id"])
    report = run_notebook(NOTEBOOKS / "validate.py", make_dbutils(params), spark)["report"]
    return run, dbutils, report


@pytest.fixture(scope="module")
def ingested(spark: SparkSession, broker: EmbeddedBroker,
             tmp_path_factory: pytest.TempPathFactory) -> Ingested:
    root = tmp_path_factory.mktemp("notebook-bundle")
    lake = local_bundle(root, {"orders_bronze": "nb_orders", "order_lines": "nb_order_lines"})
    bootstrap = broker.bootstrap_servers
    config = root / CONFIGS / "orders_bronze.yml"
    raw = yaml.safe_load(config.read_text(encoding="utf-8"))
    raw["source"]["max_records_per_batch"] = ORDERS_BATCH_RECORDS
    config.write_text(yaml.safe_dump(raw), encoding="utf-8")
    sent = produce_events(bootstrap, "nb_orders", 300, duplicate_rate=0.1, poison_rate=0.005,
                          seed=7, id_prefix="nb")
    run, dbutils, report = ingest_and_validate(spark, root, "orders_bronze", bootstrap)
    produce_lines(bootstrap, "nb_order_lines", [*LINES, *LINE_COPIES, LINE_POISON])
    lines_run, _, lines_report = ingest_and_validate(spark, root, "order_lines", bootstrap)
    return Ingested(root, lake, bootstrap, dbutils, run, sent, report, lines_run, lines_report)


def test_ingest_notebook_lands_every_event_once(spark: SparkSession, ingested: Ingested) -> None:
    lake, run, sent = ingested.lake, ingested.run, ingested.sent
    target = spark.read.format("delta").load(str(lake / "orders_bronze"))
    ids = set(sent.event_ids)
    assert target.count() == len(ids) == 300
    assert {r.event_id for r in target.select("event_id").collect()} == ids
    quarantine = spark.read.format("delta").load(str(lake / "orders_bronze_quarantine"))
    assert quarantine.count() == sum(sent.poison.values()) == run.quarantined > 0
    assert (run.inserted, run.records_in) == (300, sent.sent)
    # max_records_per_batch split the run: every batch landed rows, and has its metrics row
    assert len(run.batches) >= 2 and all(b.inserted > 0 for b in run.batches), run.batches
    assert ingested.dbutils.jobs.taskValues.values["run_id"] == run.run_id
    metrics = spark.read.format("delta").load(str(lake / "_quality" / "run_metrics"))
    recorded = metrics.where(metrics.run_id == run.run_id).select("batch_id", "inserted")
    assert sorted((r.batch_id, r.inserted) for r in recorded.collect()) == [
        (b.batch_id, b.inserted) for b in run.batches]


def test_two_bundle_pipelines_each_land_their_own_table_exactly_once(
        spark: SparkSession, ingested: Ingested) -> None:
    lake, run = ingested.lake, ingested.lines_run
    lines = spark.read.format("delta").load(str(lake / "order_lines"))
    keys = {(r["order_id"], r["line_no"]) for r in LINES}
    assert lines.count() == len(keys) == 40
    assert {(r.order_id, r.line_no) for r in lines.select("order_id", "line_no").collect()} == keys
    assert lines.where("trace_id IS NULL").count() == 0  # the schema's header column
    assert (run.pipeline, run.records_in, run.inserted, run.quarantined) == (
        "order_lines", len(LINES) + len(LINE_COPIES) + 1, 40, 1)
    quarantine = spark.read.format("delta").load(str(lake / "order_lines_quarantine"))
    assert [r.reason for r in quarantine.select("reason").collect()] == ["bad_type:line_no"]
    # Neither pipeline saw the other's topic; both validated into the shared results table.
    orders = spark.read.format("delta").load(str(lake / "orders_bronze"))
    assert "order_id" not in orders.columns and "event_id" not in lines.columns
    assert ingested.lines_validation.success
    results = spark.read.format("delta").load(str(lake / "_quality" / "results"))
    assert {r.pipeline for r in results.select("pipeline").distinct().collect()} == {
        "orders_bronze", "order_lines"}


def test_validate_notebook_passes_for_the_ingested_run(spark: SparkSession,
                                                       ingested: Ingested) -> None:
    lake, run, report = ingested.lake, ingested.run, ingested.validation
    assert ingested.dbutils.jobs.taskValues.values["run_id"] == run.run_id
    assert report.success and report.run_id == run.run_id
    quarantine = next(r for r in report.results if r.expectation == QUARANTINE_EXPECTATION)
    assert f"{run.quarantined}/{run.records_in}" in quarantine.observed_value
    assert any(r.expectation == "expect_column_values_to_be_unique" for r in report.results)
    rows = spark.read.format("delta").load(str(lake / "_quality" / "results"))
    assert rows.where(rows.run_id == run.run_id).count() == len(report.results)


@pytest.mark.extended
def test_maintenance_notebook_optimizes_vacuums_and_validates_the_whole_table(
    spark: SparkSession, ingested: Ingested
) -> None:
    lake = ingested.lake
    orders = f"delta.`{lake / 'orders_bronze'}`"
    partitions = spark.sql(f"SELECT DISTINCT event_date FROM {orders}").count()
    assert spark.sql(f"DESCRIBE DETAIL {orders}").collect()[0].numFiles > partitions
    params = task_params(ingested.root, "orders_bronze", "maintenance", "maintain",
                         retain_hours=str(MIN_RETAIN_HOURS))

    report = run_notebook(NOTEBOOKS / "maintenance.py", make_dbutils(params), spark)["report"]

    for table in ("orders_bronze", "orders_bronze_quarantine", "_quality/results",
                  "_quality/run_metrics"):
        described = f"delta.`{lake / table}`"
        # the target's default dedup window is on event time: compacted in event-time order
        order = " ZORDER BY `event_time`" if table == "orders_bronze" else ""
        assert f"OPTIMIZE {described}{order}" in report.actions
        assert f"VACUUM {described} RETAIN {MIN_RETAIN_HOURS} HOURS" in report.actions
    assert report.validation is not None and report.validation.success
    history = spark.sql(f"DESCRIBE HISTORY {orders}").collect()
    assert {"OPTIMIZE", "VACUUM START", "VACUUM END"} <= {r.operation for r in history}
    # Compacted: one file per event_date partition.
    assert spark.sql(f"DESCRIBE DETAIL {orders}").collect()[0].numFiles == partitions


def test_maintenance_refuses_a_retention_below_the_replay_horizon(
    spark: SparkSession, ingested: Ingested
) -> None:
    params = task_params(ingested.root, "orders_bronze", "maintenance", "maintain",
                         retain_hours="24")
    with pytest.raises(ConfigError, match="below the 168h minimum"):
        run_notebook(NOTEBOOKS / "maintenance.py", make_dbutils(params), spark)


def test_dashboard_queries_run_against_the_tables_the_notebooks_wrote(
    spark: SparkSession, ingested: Ingested
) -> None:
    lake, runs = ingested.lake, (ingested.run, ingested.lines_run)
    spark.read.format("delta").load(str(lake / "_quality" / "run_metrics")) \
        .createOrReplaceTempView("deltasink_run_metrics")
    spark.read.format("delta").load(str(lake / "_quality" / "results")) \
        .createOrReplaceTempView("deltasink_quality_results")
    definition = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    out = {d["name"]: spark.sql("".join(d["queryLines"])).collect()
           for d in definition["datasets"]}
    assert sum(r.inserted for r in out["batches"]) == sum(run.inserted for run in runs) == 340
    assert sum(r.quarantined for r in out["batches"]) == sum(run.quarantined for run in runs)
    assert sum(r.duplicates_dropped for r in out["batches"]) == sum(
        b.duplicates_in_batch + b.duplicates_by_merge for run in runs for b in run.batches)
    assert {r.pipeline for r in out["batches"]} == {"orders_bronze", "order_lines"}
    verdict = {r.run_id: r.verdict for r in out["verdicts"]}
    assert verdict[runs[0].run_id] == verdict[runs[1].run_id] == "PASSED"
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
    spark: SparkSession, ingested: Ingested, tmp_path: Path
) -> None:
    # A copy of the lake the notebooks ingested (tables, checkpoints, quality tables): the
    # other tests keep theirs clean, and no ingest run of its own is needed.
    lake = local_bundle(tmp_path, {"orders_bronze": "nb_orders"})
    shutil.copytree(ingested.lake, lake)
    target = spark.read.format("delta").load(str(lake / "orders_bronze"))
    assert target.count() == target.select("event_id").distinct().count() > 0
    target.limit(1).write.format("delta").mode("append").save(str(lake / "orders_bronze"))
    # the real broker: its lag check answers at once (at the config's address it would wait 10 s)
    params = task_params(tmp_path, "orders_bronze", "ingest", "validate", ingested.bootstrap,
                         run_id="", full="true")

    with pytest.raises(QualityError, match="expect_column_values_to_be_unique"):
        run_notebook(NOTEBOOKS / "validate.py", make_dbutils(params), spark)


def test_every_notebook_declares_the_widgets_its_entry_point_reads() -> None:
    specs = {"ingest.py": jobs.INGEST_WIDGETS, "validate.py": jobs.VALIDATE_WIDGETS,
             "maintenance.py": jobs.MAINTENANCE_WIDGETS}
    for name, spec in specs.items():
        assert tuple(declared_widgets(NOTEBOOKS / name)) == spec, name


@pytest.mark.extended
@pytest.mark.slow
def test_ingest_and_validate_notebooks_run_with_a_spark_connect_session(
        spark: SparkSession, broker: EmbeddedBroker, connect_server: ConnectServer,
        tmp_path: Path) -> None:
    """Serverless and standard access mode hand the notebook a Spark Connect ``spark``."""
    root = tmp_path / "bundle"
    lake = local_bundle(root, {"orders_bronze": "nbc_orders"})
    bootstrap = broker.bootstrap_servers
    sent = produce_events(bootstrap, "nbc_orders", 200, duplicate_rate=0.1, poison_rate=0.01,
                          seed=9, id_prefix="nbc")
    done = subprocess.run([sys.executable, "-m", "tests.notebooks.connect_child",
                           connect_server.url, str(root), bootstrap], cwd=ROOT,
                          capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    poison = sum(sent.poison.values())
    assert got == {"session": "pyspark.sql.connect.session", "side_session": True,
                   "records_in": sent.sent,
                   "inserted": 200, "quarantined": poison, "success": True}, got
    target = spark.read.format("delta").load(str(lake / "orders_bronze"))
    assert target.count() == target.select("event_id").distinct().count() == 200
