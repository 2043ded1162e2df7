"""The Databricks Asset Bundle: resolves for every target, and every job is a valid Jobs spec.

No workspace is reachable here, so ``tests/bundle/bundle.py`` resolves variables and includes the
way the CLI does and calls the bundle's ``python.resources`` function
(``pipelines.databricks.bundle``), which generates one set of jobs per config in
``notebooks/pipelines.d/``; each job goes through ``databricks.bundles.jobs.Job.from_dict``, which
rejects unknown or mistyped fields.
"""

from __future__ import annotations

import json
import re
import shutil
import tomllib
from pathlib import Path
from typing import Any

import pytest
from databricks.bundles.dashboards import Dashboard
from databricks.bundles.jobs import Job

from pipelines.databricks import bundle as generator
from pipelines.databricks import jobs as entry
from pipelines.errors import ConfigError
from pipelines.ops.maintenance import MIN_RETAIN_HOURS
from tests.bundle.bundle import (
    REQUIRED_VARS,
    ROOT,
    WORKSPACE_CONTEXT,
    LoadedBundle,
    MissingVariables,
    load_bundle,
    pipeline_jobs,
    python_resources,
    resolve_target,
    unresolved,
)
from tests.support.dbutils import declared_widgets

TARGETS = ("dev", "prod")
#: The bundle's two example pipelines: events_v1 on `orders`, the orders_v1 YAML schema on
#: `order_lines` (with its own crons and thresholds).
PIPELINES = ("orders_bronze", "order_lines")
JOB_KINDS = ("ingest", "maintenance", "continuous")
#: Which widget list each notebook must declare (and each task must pass).
NOTEBOOK_WIDGETS = {"ingest.py": entry.INGEST_WIDGETS, "validate.py": entry.VALIDATE_WIDGETS,
                    "maintenance.py": entry.MAINTENANCE_WIDGETS}


@pytest.fixture(scope="module")
def bundle() -> LoadedBundle:
    return load_bundle()


def resolved(bundle: LoadedBundle, target: str) -> dict[str, Any]:
    return resolve_target(bundle, target, REQUIRED_VARS)


def jobs_of(config: dict[str, Any], pipeline: str) -> dict[str, dict[str, Any]]:
    """Per kind, the job that runs ``pipeline``, with only its tasks."""
    found = pipeline_jobs(config["resources"]["jobs"], pipeline)
    assert set(found) == set(JOB_KINDS), pipeline
    return {kind: job for kind, (_, job) in found.items()}


def notebook_tasks(config: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(job_key, task) for job_key, job in config["resources"]["jobs"].items()
            for task in job["tasks"] if "notebook_task" in task]


def notebook_file(bundle: LoadedBundle, job_key: str, task: dict[str, Any]) -> Path:
    declared_in = bundle.origin[("jobs", job_key)].parent
    return (declared_in / task["notebook_task"]["notebook_path"]).resolve()


def local(params: dict[str, str]) -> dict[str, str]:
    """A task's parameters with the config's workspace path mapped to this checkout."""
    return {**params, "config": params["config"].replace(
        WORKSPACE_CONTEXT["workspace.file_path"], str(ROOT))}


def built(task: dict[str, Any], secrets: Any = None) -> Any:
    return entry.build_config(local(task["notebook_task"]["base_parameters"]), secrets,
                              environ={})


def test_bundle_is_named_and_generates_its_jobs_in_python(bundle: LoadedBundle) -> None:
    assert bundle.config["bundle"]["name"] == "deltasink"
    assert bundle.config["python"]["resources"] == ["pipelines.databricks.bundle:load_resources"]
    assert (ROOT / bundle.config["python"]["venv_path"]).name == ".venv"
    files = set(bundle.origin.values()) - {ROOT / "databricks.yml"}
    assert files == {ROOT / "notebooks" / "resources" / "dashboard.yml"}
    assert all(bundle.origin[("jobs", k)] == ROOT / "databricks.yml"
               for k in bundle.config["resources"]["jobs"])


def test_every_variable_is_described(bundle: LoadedBundle) -> None:
    for name, spec in bundle.config["variables"].items():
        assert spec.get("description", "").strip(), f"variable {name} has no description"


@pytest.mark.parametrize(("target", "missing"), [
    ("dev", {"warehouse_id"}),
    ("prod", {"warehouse_id", "service_principal"}),
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


#: The examples' jobs: each is alone in its groups (its own schedules and compute).
JOB_KEYS = {"orders_bronze": {"ingest": "ingest_default", "maintenance": "maintenance_default",
                              "continuous": "orders_bronze_continuous"},
            "order_lines": {"ingest": "ingest_every_5m_serverless",
                            "maintenance": "maintenance_daily_0400_serverless",
                            "continuous": "order_lines_continuous"}}


@pytest.mark.parametrize("target", TARGETS)
def test_each_pipeline_config_gets_its_three_jobs_as_valid_jobs_specs(
        bundle: LoadedBundle, target: str) -> None:
    config = resolved(bundle, target)
    assert set(config["resources"]["jobs"]) == {k for keys in JOB_KEYS.values()
                                                for k in keys.values()}
    for key, job in config["resources"]["jobs"].items():
        parsed = Job.from_dict(job)
        assert parsed.max_concurrent_runs == 1, key
        assert parsed.email_notifications is not None, key
        assert parsed.email_notifications.on_failure == ["someone@example.com"], key
    for pipeline in PIPELINES:
        found = pipeline_jobs(config["resources"]["jobs"], pipeline)
        assert {kind: key for kind, (key, _) in found.items()} == JOB_KEYS[pipeline]
        names = {kind: job["name"] for kind, (_, job) in found.items()}
        # A job of one pipeline keeps the name it had before jobs were grouped.
        assert names == {"ingest": f"deltasink ingest ({pipeline})",
                         "maintenance": f"deltasink maintenance ({pipeline})",
                         "continuous": f"deltasink continuous ingest ({pipeline})"}
        assert found["continuous"][1]["tags"]["pipeline"] == pipeline


def test_tasks_pass_their_pipelines_config_file_from_the_workspace(bundle: LoadedBundle) -> None:
    config = resolved(bundle, "dev")
    for pipeline in PIPELINES:
        for job in jobs_of(config, pipeline).values():
            for task in job["tasks"]:
                path = task["notebook_task"]["base_parameters"]["config"]
                assert path == (f"{WORKSPACE_CONTEXT['workspace.file_path']}/notebooks/"
                                f"pipelines.d/{pipeline}.yml")
                assert Path(local({"config": path})["config"]).is_file()


def test_adding_a_pipeline_is_adding_a_config_file(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "notebooks" / "pipelines.d", tmp_path / "notebooks" / "pipelines.d")
    shutil.copytree(ROOT / "schemas" / "examples", tmp_path / "schemas" / "examples")
    folder = tmp_path / "notebooks" / "pipelines.d"
    (folder / "payments.yml").write_text(
        "name: payments\nsource: {topics: [payments]}\ntarget: {table: main.pay.payments}\n"
        "checkpoint: /tmp/ck/payments\nschema: payments.schema.yml\n", encoding="utf-8")
    # A schema file beside the configs is not a config.
    (folder / "payments.schema.yml").write_text(
        "name: payments_v1\nkey: payment_id\nevent_time: kafka.timestamp\n"
        "fields: {payment_id: string}\n", encoding="utf-8")

    jobs = generator.bundle_resources(tmp_path).jobs

    # Its schedules and compute are orders_bronze's (the variables, a job cluster): it joins
    # that pipeline's jobs as tasks of its own, and gets its own continuous job.
    keys = {k for keys in JOB_KEYS.values() for k in keys.values()}
    assert set(jobs) == keys | {"payments_continuous"}
    ingest = jobs["ingest_default"].as_dict()
    assert ingest["name"] == "deltasink ingest (orders_bronze, payments)"
    tasks = {t["task_key"]: t for t in ingest["tasks"]}
    assert list(tasks) == ["orders_bronze_ingest", "orders_bronze_validate", "payments_ingest",
                           "payments_validate"]
    assert tasks["payments_ingest"]["notebook_task"]["base_parameters"]["config"] == \
        "${workspace.file_path}/notebooks/pipelines.d/payments.yml"
    assert [t["task_key"] for t in jobs["maintenance_default"].as_dict()["tasks"]] == [
        "orders_bronze_maintain", "payments_maintain"]


def test_an_invalid_pipeline_config_fails_the_bundle_naming_its_file(tmp_path: Path) -> None:
    folder = tmp_path / "notebooks" / "pipelines.d"
    folder.mkdir(parents=True)
    (folder / "bad.yml").write_text("name: bad\nsource: {topics: [t]}\ncheckpoint: /c\n"
                                    "target: {table: a.b}\ndatabricks: {ingest_cron: hourly}\n",
                                    encoding="utf-8")
    with pytest.raises(ConfigError,
                       match=r"(?s)bad\.yml: invalid config.*databricks\.ingest_cron: .*Quartz"):
        generator.bundle_resources(tmp_path)


def test_the_cli_reports_an_invalid_config_as_one_error_without_a_traceback(
        bundle: LoadedBundle, tmp_path: Path) -> None:
    shutil.copy(ROOT / "databricks.yml", tmp_path / "databricks.yml")
    shutil.copytree(ROOT / "notebooks", tmp_path / "notebooks")
    # The whole package, as in a real bundle root: the CLI runs load_resources with the bundle
    # root first on sys.path, where a bare schemas/examples folder would shadow the installed
    # `schemas` package as a namespace package (and `pipelines.databricks.bundle` would fail to
    # import).
    shutil.copytree(ROOT / "schemas", tmp_path / "schemas",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "notebooks" / "pipelines.d" / "bad.yml").write_text(
        "name: bad\nsource: {topics: [t]}\ncheckpoint: /c\ntarget: {table: a.b}\n"
        "databricks: {ingest_cron: hourly}\n", encoding="utf-8")

    with pytest.raises(ValueError, match="load_resources failed") as failed:
        python_resources(tmp_path, bundle.config)

    diagnostic = json.loads(str(failed.value).removeprefix("load_resources failed: "))
    assert diagnostic["severity"] == "error"
    assert diagnostic["summary"].startswith(
        f"{tmp_path}/notebooks/pipelines.d/bad.yml: invalid config:")
    assert "databricks.ingest_cron: Value error, not a Quartz cron" in diagnostic["summary"]
    assert "Traceback" not in str(failed.value)


def test_dev_is_the_default_development_target(bundle: LoadedBundle) -> None:
    dev = resolved(bundle, "dev")
    assert dev["mode"] == "development" and dev["default"] is True
    assert [t for t, s in bundle.config["targets"].items() if s.get("default")] == ["dev"]
    assert dev["presets"]["artifacts_dynamic_version"] is True
    for pipeline in PIPELINES:
        for kind in ("ingest", "maintenance"):
            assert jobs_of(dev, pipeline)[kind]["schedule"]["pause_status"] == "PAUSED"


def test_prod_runs_as_the_service_principal_from_a_fixed_root(bundle: LoadedBundle) -> None:
    prod = resolved(bundle, "prod")
    assert prod["mode"] == "production"
    assert prod["workspace"]["root_path"] == "/Workspace/Shared/.bundle/deltasink/prod"
    assert prod["run_as"] == {"service_principal_name": REQUIRED_VARS["service_principal"]}
    assert bundle.config["targets"]["prod"]["run_as"]["service_principal_name"] == \
        "${var.service_principal}"
    for pipeline in PIPELINES:
        jobs = jobs_of(prod, pipeline)
        for kind in ("ingest", "maintenance"):
            assert jobs[kind]["schedule"]["pause_status"] == "UNPAUSED"
        assert jobs["continuous"]["continuous"]["pause_status"] == "PAUSED"


def test_schedules_come_from_the_config_else_the_variables(bundle: LoadedBundle) -> None:
    prod = resolved(bundle, "prod")
    variables = prod["variables"]
    crons = {p: (jobs_of(prod, p)["ingest"]["schedule"]["quartz_cron_expression"],
                 jobs_of(prod, p)["maintenance"]["schedule"]["quartz_cron_expression"])
             for p in PIPELINES}
    assert crons == {"orders_bronze": (variables["ingest_cron"], variables["maintenance_cron"]),
                     "order_lines": ("0 0/5 * * * ?", "0 0 4 * * ?")}


def test_every_notebook_path_exists_under_notebooks(bundle: LoadedBundle) -> None:
    tasks = notebook_tasks(resolved(bundle, "dev"))
    assert len(tasks) == 4 * len(PIPELINES)
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


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_ingest_job_runs_ingest_then_validate_on_a_schedule_with_retries(
    bundle: LoadedBundle, pipeline: str,
) -> None:
    job = jobs_of(resolved(bundle, "dev"), pipeline)["ingest"]
    ingest, validate = job["tasks"]
    assert ingest["task_key"] == f"{pipeline}_ingest" and "depends_on" not in ingest
    assert validate["task_key"] == f"{pipeline}_validate"
    assert validate["depends_on"] == [{"task_key": f"{pipeline}_ingest"}]
    assert Path(ingest["notebook_task"]["notebook_path"]).name == "ingest.py"
    assert Path(validate["notebook_task"]["notebook_path"]).name == "validate.py"
    assert ingest["notebook_task"]["base_parameters"]["trigger"] == "available-now"
    assert ingest["max_retries"] >= 1 and ingest["min_retry_interval_millis"] >= 10_000
    assert validate["max_retries"] == 0, "a quality failure must not be retried"
    # The validate task reads the run id that jobs.ingest publishes as a task value.
    assert validate["notebook_task"]["base_parameters"]["run_id"] == \
        f"{{{{tasks.{pipeline}_ingest.values.run_id}}}}"
    assert job["timeout_seconds"] > 0 and all(t["timeout_seconds"] > 0 for t in job["tasks"])
    assert len(job["schedule"]["quartz_cron_expression"].split()) in (6, 7)
    raw = bundle.config["resources"]["jobs"][JOB_KEYS[pipeline]["ingest"]]["schedule"]
    assert raw["pause_status"] == "${var.schedule_pause_status}"


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_maintenance_job_vacuums_safely_on_a_schedule(bundle: LoadedBundle,
                                                      pipeline: str) -> None:
    job = jobs_of(resolved(bundle, "prod"), pipeline)["maintenance"]
    (task,) = job["tasks"]
    assert Path(task["notebook_task"]["notebook_path"]).name == "maintenance.py"
    assert int(task["notebook_task"]["base_parameters"]["retain_hours"]) >= MIN_RETAIN_HOURS
    assert job["schedule"]["pause_status"] == "UNPAUSED"
    assert len(job["schedule"]["quartz_cron_expression"].split()) in (6, 7)


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_continuous_variant_streams_and_has_no_schedule(bundle: LoadedBundle,
                                                        pipeline: str) -> None:
    job = jobs_of(resolved(bundle, "dev"), pipeline)["continuous"]
    assert "schedule" not in job and job["continuous"]["pause_status"] == "PAUSED"
    (task,) = job["tasks"]
    assert task["notebook_task"]["base_parameters"]["trigger"] == "continuous"
    assert "max_retries" not in task


def test_thresholds_come_from_the_config_else_the_bundle_variables(bundle: LoadedBundle) -> None:
    prod = resolved(bundle, "prod")
    variables = prod["variables"]
    for pipeline, expected in (("orders_bronze", (int(variables["max_lag_records"]),
                                                  float(variables["max_staleness"]))),
                               ("order_lines", (50_000, 1800.0))):
        validate = next(t for t in jobs_of(prod, pipeline)["ingest"]["tasks"]
                        if t["task_key"].endswith("_validate"))
        quality = built(validate).quality
        assert (quality.max_lag_records, quality.max_staleness) == expected, pipeline
    # A widget left empty keeps the config's value; a set one replaces it.
    lines = next(t for t in jobs_of(prod, "order_lines")["ingest"]["tasks"]
                 if t["task_key"].endswith("_validate"))
    assert lines["notebook_task"]["base_parameters"]["max_lag_records"] == ""
    params = {**lines["notebook_task"]["base_parameters"], "max_staleness": "1h"}
    assert built({"notebook_task": {"base_parameters": params}}).quality.max_staleness == 3600


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("pipeline", PIPELINES)
def test_continuous_job_health_rules_use_the_validation_thresholds(
        bundle: LoadedBundle, target: str, pipeline: str) -> None:
    job = jobs_of(resolved(bundle, target), pipeline)["continuous"]
    (task,) = job["tasks"]
    quality = built(task).quality
    rules = {r["metric"]: (r["op"], str(r["value"])) for r in job["health"]["rules"]}
    assert rules == {
        "STREAMING_BACKLOG_RECORDS": ("GREATER_THAN", str(quality.max_lag_records)),
        "STREAMING_BACKLOG_SECONDS": ("GREATER_THAN", f"{quality.max_staleness:.0f}"),
    }
    parsed = Job.from_dict(job)  # the values are whole numbers, as the Jobs API requires
    assert parsed.health is not None and len(parsed.health.rules or []) == 2
    assert job["email_notifications"]["on_streaming_backlog_exceeded"] == ["someone@example.com"]


def test_continuous_job_validates_on_the_configured_cadence(bundle: LoadedBundle) -> None:
    job = jobs_of(resolved(bundle, "prod"), "orders_bronze")["continuous"]
    (task,) = job["tasks"]
    params = task["notebook_task"]["base_parameters"]
    quality = built(task).quality
    assert quality.validate_every.seconds == 900.0 and quality.on_failure == "continue"
    stop = built({"notebook_task": {"base_parameters": {
        **params, "validate_every": "20 batches", "on_failure": "stop"}}}).quality
    assert (stop.validate_every.batches, stop.on_failure) == (20, "stop")


def test_each_pipeline_lands_in_its_own_unity_catalog_tables(bundle: LoadedBundle) -> None:
    config = resolved(bundle, "prod")
    catalog, schema = config["variables"]["catalog"], config["variables"]["schema"]
    volume = f"/Volumes/{catalog}/{schema}/{config['variables']['volume']}/"
    checkpoints = set()
    for pipeline in PIPELINES:
        tasks = [t for j in jobs_of(config, pipeline).values() for t in j["tasks"]]
        configs = [built(t) for t in tasks]
        first = configs[0]
        for other in configs[1:]:  # every task of a pipeline touches the same tables
            assert other.target == first.target and other.checkpoint == first.checkpoint
            assert other.quality.results_ref == first.quality.results_ref
        assert first.name == pipeline
        assert first.target.table == f"{catalog}.{schema}.{pipeline}"
        assert first.target.quarantine_table == f"{catalog}.{schema}.{pipeline}_quarantine"
        assert first.quality.results_table == f"{catalog}.{schema}.deltasink_quality_results"
        assert first.quality.metrics_table == f"{catalog}.{schema}.deltasink_run_metrics"
        assert first.checkpoint == f"{volume}checkpoints/{pipeline}"
        assert first.quality.docs_dir == f"{volume}quality_docs/{pipeline}"
        checkpoints.add(first.checkpoint)
    assert len(checkpoints) == len(PIPELINES)
    lines = built(jobs_of(config, "order_lines")["ingest"]["tasks"][0])
    assert lines.schema_name == "orders_v1" and lines.target.dedup_keys == ("order_id", "line_no")
    assert lines.source.topics == ("order_lines",) and lines.target.dedup_window == 2


def test_bootstrap_servers_variable_replaces_the_configs(bundle: LoadedBundle) -> None:
    config = resolve_target(bundle, "dev", {**REQUIRED_VARS,
                                            "kafka_bootstrap_servers": "b-1.example.com:9096"})
    for pipeline in PIPELINES:
        task = jobs_of(config, pipeline)["ingest"]["tasks"][0]
        assert built(task).source.bootstrap_servers == "b-1.example.com:9096"
    task = jobs_of(resolved(bundle, "dev"), "orders_bronze")["ingest"]["tasks"][0]
    assert built(task).source.bootstrap_servers == "127.0.0.1:9092"  # empty: the config's


def test_a_configs_secrets_come_from_its_secret_scope_and_are_never_shown(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "notebooks" / "pipelines.d"
    folder.mkdir(parents=True)
    (folder / "paid.yml").write_text("""name: paid
source:
  topics: [paid]
  options: {security.protocol: SASL_SSL, sasl.mechanism: SCRAM-SHA-512}
target: {table: main.pay.paid}
checkpoint: /tmp/ck/paid
databricks:
  secret_scope: kafka-prod
  secrets:
    DELTASINK_SOURCE__OPTIONS__SASL_JAAS_CONFIG: paid-jaas
""", encoding="utf-8")
    jaas = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
            'username="svc" password="s3cr3t-pw";')
    read: list[tuple[str, str]] = []

    def secrets(scope: str, key: str) -> str:
        read.append((scope, key))
        return jaas

    (task, _) = generator.bundle_jobs(generator.pipeline_configs(tmp_path))[
        "ingest_default"]["tasks"]
    generated = task["notebook_task"]["base_parameters"]
    # Local placement; the bundle variables (unresolved here) left empty.
    params = {**{k: "" if "${" in v else v for k, v in generated.items()},
              "config": str(folder / "paid.yml")}
    assert generated["secret_scope"] == "kafka-prod"  # the config's scope, not var.secret_scope

    config = entry.build_config(params, secrets, environ={})
    assert read == [("kafka-prod", "paid-jaas")]
    assert config.source.kafka_options()["sasl.jaas.config"] == jaas
    assert "s3cr3t-pw" not in repr(config) + config.describe + config.model_dump_json()

    monkeypatch.setenv("DATABRICKS_RUNTIME_VERSION", "17.3")  # the runtime shades the client
    shaded = entry.build_config(params, secrets, environ={})
    assert shaded.source.kafka_options()["sasl.jaas.config"] == "kafkashaded." + jaas

    def missing(scope: str, key: str) -> str:
        raise KeyError(f"Secret does not exist with scope: {scope} and key: {key}")

    with pytest.raises(ConfigError, match=r"secret 'paid-jaas' .* scope 'kafka-prod': KeyError"):
        entry.build_config(params, missing, environ={})


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
        if "environment_key" in task:  # serverless: the job's environment installs it
            (environment,) = [e for e in config["resources"]["jobs"][job_key]["environments"]
                              if e["environment_key"] == task["environment_key"]]
            (wheel,) = environment["spec"]["dependencies"]
        else:  # a job cluster: the task's library
            (library,) = task["libraries"]
            wheel = library["whl"]
        wheel_glob = (declared_in / wheel).resolve()
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
        quality = built(task).quality
        written |= {quality.results_table, quality.metrics_table}
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
