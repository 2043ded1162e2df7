"""The Databricks Asset Bundle: resolves for every target, and every job is a valid Jobs spec.

No workspace is reachable here, so ``tests/bundle/bundle.py`` resolves variables and includes the
way the CLI does, and each job goes through ``databricks.bundles.jobs.Job.from_dict``, which
rejects unknown or mistyped fields.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from databricks.bundles.dashboards import Dashboard
from databricks.bundles.jobs import Job

from pipelines import jobs as entry
from pipelines.ops.maintenance import MIN_RETAIN_HOURS
from tests.bundle.bundle import (
    REQUIRED_VARS,
    ROOT,
    LoadedBundle,
    MissingVariables,
    load_bundle,
    resolve_target,
    unresolved,
)
from tests.support.dbutils import declared_widgets

TARGETS = ("dev", "prod")
#: Which widget list each notebook must declare (and each task must pass).
NOTEBOOK_WIDGETS = {"ingest.py": entry.INGEST_WIDGETS, "validate.py": entry.VALIDATE_WIDGETS,
                    "maintenance.py": entry.MAINTENANCE_WIDGETS}


@pytest.fixture(scope="module")
def bundle() -> LoadedBundle:
    return load_bundle()


def resolved(bundle: LoadedBundle, target: str) -> dict[str, Any]:
    return resolve_target(bundle, target, REQUIRED_VARS)


def notebook_tasks(config: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(job_key, task) for job_key, job in config["resources"]["jobs"].items()
            for task in job["tasks"] if "notebook_task" in task]


def notebook_file(bundle: LoadedBundle, job_key: str, task: dict[str, Any]) -> Path:
    declared_in = bundle.origin[("jobs", job_key)].parent
    return (declared_in / task["notebook_task"]["notebook_path"]).resolve()


def test_bundle_is_named_and_includes_only_files_under_notebooks(bundle: LoadedBundle) -> None:
    assert bundle.config["bundle"]["name"] == "deltasink"
    files = set(bundle.origin.values()) - {ROOT / "databricks.yml"}
    assert files, "resources are expected in notebooks/resources/*.yml"
    assert all(f.is_relative_to(ROOT / "notebooks") for f in files)


def test_every_variable_is_described(bundle: LoadedBundle) -> None:
    for name, spec in bundle.config["variables"].items():
        assert spec.get("description", "").strip(), f"variable {name} has no description"


@pytest.mark.parametrize(("target", "missing"), [
    ("dev", {"kafka_bootstrap_servers", "warehouse_id"}),
    ("prod", {"kafka_bootstrap_servers", "warehouse_id", "service_principal"}),
])
def test_required_variables_must_be_passed(bundle: LoadedBundle, target: str,
                                           missing: set[str]) -> None:
    with pytest.raises(MissingVariables) as err:
        resolve_target(bundle, target)
    assert re.findall(r"'([a-z_]+)'", str(err.value)) == sorted(missing)


@pytest.mark.parametrize("target", TARGETS)
def test_every_reference_resolves(bundle: LoadedBundle, target: str) -> None:
    config = resolved(bundle, target)
    assert unresolved(config) == set()


def test_job_validation_rejects_unknown_fields() -> None:
    with pytest.raises(Exception, match="max_concurrent_run"):
        Job.from_dict({"name": "x", "max_concurrent_run": 1})  # type: ignore[typeddict-unknown-key]


@pytest.mark.parametrize("target", TARGETS)
def test_every_job_is_a_valid_jobs_spec(bundle: LoadedBundle, target: str) -> None:
    config = resolved(bundle, target)
    assert set(config["resources"]["jobs"]) == {
        "deltasink_ingest", "deltasink_maintenance", "deltasink_ingest_continuous"}
    for key, job in config["resources"]["jobs"].items():
        parsed = Job.from_dict(job)
        assert parsed.max_concurrent_runs == 1, key
        assert parsed.email_notifications is not None, key
        assert parsed.email_notifications.on_failure == ["someone@example.com"], key


def test_dev_is_the_default_development_target(bundle: LoadedBundle) -> None:
    dev = resolved(bundle, "dev")
    assert dev["mode"] == "development" and dev["default"] is True
    assert [t for t, s in bundle.config["targets"].items() if s.get("default")] == ["dev"]
    assert dev["presets"]["artifacts_dynamic_version"] is True
    for key in ("deltasink_ingest", "deltasink_maintenance"):
        assert dev["resources"]["jobs"][key]["schedule"]["pause_status"] == "PAUSED"


def test_prod_runs_as_the_service_principal_from_a_fixed_root(bundle: LoadedBundle) -> None:
    prod = resolved(bundle, "prod")
    assert prod["mode"] == "production"
    assert prod["workspace"]["root_path"] == "/Workspace/Shared/.bundle/deltasink/prod"
    assert prod["run_as"] == {"service_principal_name": REQUIRED_VARS["service_principal"]}
    assert bundle.config["targets"]["prod"]["run_as"]["service_principal_name"] == \
        "${var.service_principal}"
    for key in ("deltasink_ingest", "deltasink_maintenance"):
        assert prod["resources"]["jobs"][key]["schedule"]["pause_status"] == "UNPAUSED"
    continuous = prod["resources"]["jobs"]["deltasink_ingest_continuous"]
    assert continuous["continuous"]["pause_status"] == "PAUSED"


def test_every_notebook_path_exists_under_notebooks(bundle: LoadedBundle) -> None:
    tasks = notebook_tasks(resolved(bundle, "dev"))
    assert len(tasks) == 4
    for job_key, task in tasks:
        path = notebook_file(bundle, job_key, task)
        assert path.is_file(), path
        assert path.parent == ROOT / "notebooks"


def test_widgets_match_base_parameters_exactly(bundle: LoadedBundle) -> None:
    for job_key, task in notebook_tasks(resolved(bundle, "dev")):
        path = notebook_file(bundle, job_key, task)
        widgets = declared_widgets(path)
        assert len(widgets) == len(set(widgets)), f"{path.name} declares a widget twice"
        params = task["notebook_task"]["base_parameters"]
        assert set(widgets) == set(params), f"{job_key}.{task['task_key']} vs {path.name}"
        assert tuple(widgets) == NOTEBOOK_WIDGETS[path.name]
        assert all(isinstance(v, str) for v in params.values()), "widget values are strings"


def test_ingest_job_runs_ingest_then_validate_on_a_schedule_with_retries(
    bundle: LoadedBundle,
) -> None:
    job = resolved(bundle, "dev")["resources"]["jobs"]["deltasink_ingest"]
    ingest, validate = job["tasks"]
    assert ingest["task_key"] == "ingest" and "depends_on" not in ingest
    assert validate["depends_on"] == [{"task_key": "ingest"}]
    assert Path(ingest["notebook_task"]["notebook_path"]).name == "ingest.py"
    assert Path(validate["notebook_task"]["notebook_path"]).name == "validate.py"
    assert ingest["notebook_task"]["base_parameters"]["trigger"] == "available-now"
    assert ingest["max_retries"] >= 1 and ingest["min_retry_interval_millis"] >= 10_000
    assert validate["max_retries"] == 0, "a quality failure must not be retried"
    # The validate task reads the run id that jobs.ingest publishes as a task value.
    assert validate["notebook_task"]["base_parameters"]["run_id"] == \
        "{{tasks.ingest.values.run_id}}"
    assert job["timeout_seconds"] > 0 and all(t["timeout_seconds"] > 0 for t in job["tasks"])
    schedule = job["schedule"]
    assert len(schedule["quartz_cron_expression"].split()) in (6, 7)
    raw = bundle.config["resources"]["jobs"]["deltasink_ingest"]["schedule"]
    assert raw["pause_status"] == "${var.schedule_pause_status}"


def test_maintenance_job_vacuums_safely_on_a_schedule(bundle: LoadedBundle) -> None:
    job = resolved(bundle, "prod")["resources"]["jobs"]["deltasink_maintenance"]
    (task,) = job["tasks"]
    assert Path(task["notebook_task"]["notebook_path"]).name == "maintenance.py"
    assert int(task["notebook_task"]["base_parameters"]["retain_hours"]) >= MIN_RETAIN_HOURS
    assert job["schedule"]["pause_status"] == "UNPAUSED"
    assert len(job["schedule"]["quartz_cron_expression"].split()) in (6, 7)


def test_continuous_variant_streams_and_has_no_schedule(bundle: LoadedBundle) -> None:
    jobs = resolved(bundle, "dev")["resources"]["jobs"]
    job = jobs["deltasink_ingest_continuous"]
    assert "schedule" not in job and job["continuous"]["pause_status"] == "PAUSED"
    (task,) = job["tasks"]
    assert task["notebook_task"]["base_parameters"]["trigger"] == "continuous"
    assert "max_retries" not in task


def test_validate_task_takes_the_lag_thresholds_from_the_bundle_variables(
        bundle: LoadedBundle) -> None:
    job = resolved(bundle, "prod")["resources"]["jobs"]["deltasink_ingest"]
    validate = next(t for t in job["tasks"] if t["task_key"] == "validate")
    params = validate["notebook_task"]["base_parameters"]
    assert job["email_notifications"]["on_failure"]  # a breach fails the task: someone is mailed
    variables = bundle.config["variables"]
    built = entry.build_config(params).quality
    assert built.max_lag_records == int(variables["max_lag_records"]["default"])
    assert built.max_staleness == float(variables["max_staleness"]["default"])
    off = entry.build_config({**params, "max_lag_records": "", "max_staleness": ""}).quality
    assert (off.max_lag_records, off.max_staleness) == (None, None)
    on = entry.build_config({**params, "max_lag_records": "5000", "max_staleness": "30m"})
    assert (on.quality.max_lag_records, on.quality.max_staleness) == (5000, 1800.0)


@pytest.mark.parametrize("target", TARGETS)
def test_continuous_job_health_rules_use_the_validation_thresholds(
        bundle: LoadedBundle, target: str) -> None:
    job = resolved(bundle, target)["resources"]["jobs"]["deltasink_ingest_continuous"]
    (task,) = job["tasks"]
    quality = entry.build_config(task["notebook_task"]["base_parameters"],
                                 secrets=lambda scope, key: "x").quality
    rules = {r["metric"]: (r["op"], r["value"]) for r in job["health"]["rules"]}
    assert rules == {
        "STREAMING_BACKLOG_RECORDS": ("GREATER_THAN", str(quality.max_lag_records)),
        "STREAMING_BACKLOG_SECONDS": ("GREATER_THAN", f"{quality.max_staleness:.0f}"),
    }
    parsed = Job.from_dict(job)  # the values are whole numbers, as the Jobs API requires
    assert parsed.health is not None and len(parsed.health.rules or []) == 2
    assert job["email_notifications"]["on_streaming_backlog_exceeded"] == ["someone@example.com"]
    raw = bundle.config["resources"]["jobs"]["deltasink_ingest_continuous"]
    assert {r["value"] for r in raw["health"]["rules"]} == {
        "${var.max_lag_records}", "${var.max_staleness}"}


def test_continuous_job_validates_on_the_configured_cadence(bundle: LoadedBundle) -> None:
    job = resolved(bundle, "prod")["resources"]["jobs"]["deltasink_ingest_continuous"]
    (task,) = job["tasks"]
    params = task["notebook_task"]["base_parameters"]
    quality = entry.build_config(params, secrets=lambda scope, key: "x").quality
    assert quality.validate_every.seconds == 900.0 and quality.on_failure == "continue"
    stop = entry.build_config({**params, "validate_every": "20 batches", "on_failure": "stop"},
                              secrets=lambda scope, key: "x").quality
    assert (stop.validate_every.batches, stop.on_failure) == (20, "stop")


def test_all_tasks_build_the_same_pipeline_on_unity_catalog(bundle: LoadedBundle) -> None:
    config = resolved(bundle, "prod")
    catalog, schema = config["variables"]["catalog"], config["variables"]["schema"]
    built = [entry.build_config(task["notebook_task"]["base_parameters"],
                                secrets=lambda scope, key: f"<{key}>")
             for _, task in notebook_tasks(config)]
    first = built[0]
    # The same tables; the thresholds and cadence are passed only to the tasks that check them.
    checks = {"max_lag_records", "max_staleness", "validate_every", "on_failure"}
    for other in built[1:]:
        assert other.target == first.target
        assert other.quality.model_dump(exclude=checks) == first.quality.model_dump(exclude=checks)
        assert other.checkpoint == first.checkpoint
    assert first.target.table == f"{catalog}.{schema}.orders_bronze"
    assert first.target.quarantine_table == f"{catalog}.{schema}.orders_bronze_quarantine"
    assert first.quality.results_table == f"{catalog}.{schema}.deltasink_quality_results"
    assert first.quality.metrics_table == f"{catalog}.{schema}.deltasink_run_metrics"
    volume = f"/Volumes/{catalog}/{schema}/{config['variables']['volume']}/"
    assert first.checkpoint.startswith(volume) and first.quality.docs_dir.startswith(volume)


def test_wheel_artifact_is_built_from_pyproject_and_installed_by_every_task(
    bundle: LoadedBundle,
) -> None:
    config = resolved(bundle, "dev")
    artifact = config["artifacts"]["default"]
    assert artifact["type"] == "whl"
    assert (ROOT / artifact["path"] / "pyproject.toml").is_file()
    assert "--wheel-dir dist" in artifact["build"]
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["scripts"]["deltasink"] == "pipelines.cli:main"
    assert "pipelines*" in pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    for job_key, task in notebook_tasks(config):
        declared_in = bundle.origin[("jobs", job_key)].parent
        (library,) = task["libraries"]
        wheel_glob = (declared_in / library["whl"]).resolve()
        assert wheel_glob == (ROOT / artifact["path"]).resolve() / "dist" / "*.whl"


def _dashboard(bundle: LoadedBundle, target: str) -> tuple[dict[str, Any], dict[str, Any]]:
    resource = resolved(bundle, target)["resources"]["dashboards"]["deltasink_quality"]
    path = bundle.origin[("dashboards", "deltasink_quality")].parent / resource["file_path"]
    assert path.is_file(), path
    assert path.name.endswith(".lvdash.json")
    return resource, json.loads(path.read_text(encoding="utf-8"))


def dashboard_tables(definition: dict[str, Any]) -> set[str]:
    """The tables named after FROM/JOIN in the dashboard's datasets."""
    sql = " ".join("".join(d["queryLines"]) for d in definition["datasets"])
    return set(re.findall(r"\b(?:FROM|JOIN)\s+([`\w.]+)", sql, flags=re.IGNORECASE))


@pytest.mark.parametrize("target", TARGETS)
def test_dashboard_queries_the_tables_the_jobs_write(bundle: LoadedBundle, target: str) -> None:
    resource, definition = _dashboard(bundle, target)
    config = resolved(bundle, target)
    Dashboard.from_dict(resource)  # rejects unknown fields
    assert resource["warehouse_id"] == REQUIRED_VARS["warehouse_id"]
    raw = bundle.config["resources"]["dashboards"]["deltasink_quality"]
    assert raw["warehouse_id"] == "${var.warehouse_id}"
    qualified = {f"{resource['dataset_catalog']}.{resource['dataset_schema']}.{t}"
                 for t in dashboard_tables(definition)}
    written = set()
    for _, task in notebook_tasks(config):
        built = entry.build_config(task["notebook_task"]["base_parameters"],
                                   secrets=lambda scope, key: "x")
        written |= {built.quality.results_table, built.quality.metrics_table}
    assert qualified == written


def test_dashboard_widgets_use_declared_datasets(bundle: LoadedBundle) -> None:
    _, definition = _dashboard(bundle, "dev")
    names = {d["name"] for d in definition["datasets"]}
    used = {q["query"]["datasetName"] for page in definition["pages"]
            for item in page["layout"] for q in item["widget"].get("queries", [])}
    assert used == names
    widget_names = [item["widget"]["name"] for page in definition["pages"]
                    for item in page["layout"]]
    assert len(widget_names) == len(set(widget_names))
    for page in definition["pages"]:
        for item in page["layout"]:
            pos = item["position"]
            assert pos["x"] + pos["width"] <= 6, item["widget"]["name"]
