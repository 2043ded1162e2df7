"""Many pipelines, one job (issue 35): grouped scheduled jobs, and the ``databricks.group`` key.

The bundle here is a copy of the real one with three more configs, loaded through
``databricks.bundles.build`` as the CLI loads it (``tests/bundle/bundle.py``) and resolved per
target:

* ``payments`` sets no job setting: it shares ``orders_bronze``'s jobs and job cluster;
* ``lines_eu`` has ``order_lines``' schedule on serverless: it shares its serverless jobs;
* ``big`` names its own group (``databricks.group: big``): jobs and a cluster of its own.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from databricks.bundles.jobs import Job

from pipelines.databricks import bundle as generator
from pipelines.databricks.bundle_groups import cron_slug
from pipelines.errors import ConfigError
from tests.bundle.bundle import (
    REQUIRED_VARS,
    ROOT,
    LoadedBundle,
    load_bundle,
    pipeline_jobs,
    resolve_target,
)

TARGETS = ("dev", "prod")
CONFIG = ("source: {{topics: [{name}]}}\ntarget: {{table: main.x.{name}}}\n"
          "checkpoint: /tmp/ck/{name}\n")
EXTRA = {"payments": "",
         "lines_eu": "databricks: {compute: serverless, ingest_cron: '0 0/5 * * * ?', "
                     "maintenance_cron: '0 0 4 * * ?'}\n",
         "big": "databricks: {group: big}\n"}
#: Per group job: its pipelines, in config-file order.
GROUPED = {"ingest_default": ["orders_bronze", "payments"],
           "maintenance_default": ["orders_bronze", "payments"],
           "ingest_every_5m_serverless": ["lines_eu", "order_lines"],
           "maintenance_daily_0400_serverless": ["lines_eu", "order_lines"],
           "big_ingest": ["big"], "big_maintenance": ["big"]}
PIPELINES = ("orders_bronze", "order_lines", *EXTRA)


def write_configs(folder: Path, configs: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, extra in configs.items():
        (folder / f"{name}.yml").write_text(f"name: {name}\n{CONFIG.format(name=name)}{extra}",
                                            encoding="utf-8")


@pytest.fixture(scope="module")
def grouped(tmp_path_factory: pytest.TempPathFactory) -> LoadedBundle:
    root = tmp_path_factory.mktemp("bundle")
    shutil.copy(ROOT / "databricks.yml", root / "databricks.yml")
    shutil.copytree(ROOT / "notebooks", root / "notebooks",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "schemas", root / "schemas",
                    ignore=shutil.ignore_patterns("__pycache__"))
    write_configs(root / "notebooks" / "pipelines.d", EXTRA)
    return load_bundle(root)


def members(job: dict[str, Any]) -> list[str]:
    """The pipelines whose tasks a job runs, in task order, each once."""
    names = [Path(t["notebook_task"]["base_parameters"]["config"]).stem for t in job["tasks"]]
    return list(dict.fromkeys(names))


@pytest.mark.parametrize("target", TARGETS)
def test_one_scheduled_job_per_schedule_and_compute_one_task_chain_per_pipeline(
        grouped: LoadedBundle, target: str) -> None:
    jobs = resolve_target(grouped, target, REQUIRED_VARS)["resources"]["jobs"]
    scheduled = {k: members(j) for k, j in jobs.items() if "schedule" in j}
    assert scheduled == GROUPED
    assert {k for k, j in jobs.items() if "continuous" in j} == {
        f"{p}_continuous" for p in PIPELINES}
    for key, job in jobs.items():
        Job.from_dict(job)
        names = ", ".join(members(job))
        assert job["name"].endswith(f"({names})"), key
    for pipeline in PIPELINES:
        found = pipeline_jobs(jobs, pipeline)
        assert set(found) == {"ingest", "maintenance", "continuous"}, pipeline


@pytest.mark.parametrize("target", TARGETS)
def test_a_groups_tasks_share_one_compute_and_fail_and_retry_alone(
        grouped: LoadedBundle, target: str) -> None:
    config = resolve_target(grouped, target, REQUIRED_VARS)
    jobs = config["resources"]["jobs"]
    for key in GROUPED:
        job = jobs[key]
        serverless = "serverless" in key
        assert len(job["environments" if serverless else "job_clusters"]) == 1, key
        assert ("job_clusters" in job) != serverless, key
        for task in job["tasks"]:
            assert task.get("environment_key" if serverless else "job_cluster_key") == \
                "deltasink", (key, task["task_key"])
            pipeline = Path(task["notebook_task"]["base_parameters"]["config"]).stem
            assert task["task_key"].startswith(f"{pipeline}_"), task["task_key"]
            # Isolation: a task waits only for its own pipeline's ingest, never for another's.
            assert task.get("depends_on", []) in (
                [], [{"task_key": f"{pipeline}_ingest"}]), task["task_key"]
            notebook = ("validate.py" if task["task_key"].endswith("_validate") else
                        "maintenance.py" if "maintenance" in key else "ingest.py")
            assert task["notebook_task"]["notebook_path"] == f"notebooks/{notebook}"
            if task["task_key"].endswith(("_ingest", "_maintain")):
                assert task["max_retries"] >= 1, task["task_key"]
            else:
                assert task["max_retries"] == 0, task["task_key"]
        validates = [t for t in job["tasks"] if t["task_key"].endswith("_validate")]
        for validate in validates:
            ingest = validate["depends_on"][0]["task_key"]
            assert validate["notebook_task"]["base_parameters"]["run_id"] == \
                f"{{{{tasks.{ingest}.values.run_id}}}}"
    # The opted-out pipeline's cluster is its own: the same spec (the variables), its own job.
    assert jobs["big_ingest"]["job_clusters"] == jobs["ingest_default"]["job_clusters"]
    assert jobs["big_ingest"]["tags"]["group"] == "big"


def test_the_group_key_splits_by_pause_status_and_a_named_group_joins_any_config(
        tmp_path: Path) -> None:
    write_configs(tmp_path / "notebooks" / "pipelines.d", {
        "a": "", "b": "databricks: {schedule_pause_status: UNPAUSED}\n",
        "c": "databricks: {group: team_x}\n", "d": "databricks: {group: team_x}\n"})
    jobs = generator.bundle_jobs(generator.pipeline_configs(tmp_path))
    assert {k: members(j) for k, j in jobs.items() if "schedule" in j} == {
        "ingest_default": ["a"], "ingest_default_unpaused": ["b"], "team_x_ingest": ["c", "d"],
        "maintenance_default": ["a"], "maintenance_default_unpaused": ["b"],
        "team_x_maintenance": ["c", "d"]}
    assert jobs["ingest_default_unpaused"]["schedule"]["pause_status"] == "UNPAUSED"


def test_a_named_group_must_agree_on_its_jobs_settings(tmp_path: Path) -> None:
    write_configs(tmp_path / "notebooks" / "pipelines.d", {
        "c": "databricks: {group: team_x}\n",
        "d": "databricks: {group: team_x, compute: serverless}\n"})
    with pytest.raises(ConfigError, match=r"d\.yml: databricks\.group 'team_x' runs one ingest "
                                          r"job, .* differs from that of .*c\.yml"):
        generator.bundle_resources(tmp_path)


@pytest.mark.parametrize("value", ["team-x", "", "a b"])
def test_a_group_name_is_letters_digits_and_underscores(tmp_path: Path, value: str) -> None:
    write_configs(tmp_path / "notebooks" / "pipelines.d",
                  {"c": f"databricks: {{group: '{value}'}}\n"})
    with pytest.raises(ConfigError, match=r"databricks\.group: .*1-64 letters, digits or '_'"):
        generator.bundle_resources(tmp_path)


def test_naming_the_group_after_the_pipeline_keeps_its_jobs_keys(tmp_path: Path) -> None:
    write_configs(tmp_path / "notebooks" / "pipelines.d", {
        "orders": "databricks: {group: orders}\n", "other": ""})
    jobs = generator.bundle_jobs(generator.pipeline_configs(tmp_path))
    assert {"orders_ingest", "orders_maintenance", "orders_continuous"} <= set(jobs)
    assert jobs["orders_ingest"]["name"] == "deltasink ingest (orders)"


@pytest.mark.parametrize(("cron", "slug"), [
    ("0 0/15 * * * ?", "every_15m"), ("0 */5 * * * ?", "every_5m"),
    ("0 0 0/2 * * ?", "every_2h"), ("0 30 3 * * ?", "daily_0330"),
    ("0 0 4 ? * *", "daily_0400"), ("0 15 10 ? * MON-FRI", "0_15_10_q_x_MONtFRI"),
    ("0 0 4 * * ? 2027", "0_0_4_x_x_q_2027")])
def test_a_schedule_names_its_group(cron: str, slug: str) -> None:
    assert cron_slug(cron) == slug
