"""What a pipeline's jobs run on: ``databricks.compute``, through ``databricks.bundles.build``.

The bundle's two example pipelines take one shape each, so every test over the real bundle
covers both: ``orders_bronze`` leaves ``compute`` out (``job_cluster``, the default, i.e. the
jobs of a config written before the key existed) and ``order_lines`` sets ``serverless``. The
jobs come from the CLI's own entry point (``tests/bundle/bundle.py``), resolved per target, and
are parsed by ``databricks.bundles.jobs.Job`` (unknown or mistyped fields fail).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from databricks.bundles.jobs import Job

from pipelines.databricks import bundle as generator
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
JOB_KINDS = ("ingest", "maintenance", "continuous")
SCHEDULED = ("ingest", "maintenance")
CLASSIC, SERVERLESS = "orders_bronze", "order_lines"
#: The wheel as a job-cluster library and as a serverless environment's dependency.
WHEEL, WHEEL_DEPENDENCY = "dist/*.whl", "./dist/*.whl"
#: What only says where a job or task runs; everything else must not depend on the compute.
COMPUTE_FIELDS = frozenset({"job_clusters", "environments", "job_cluster_key",
                            "environment_key", "libraries"})


@pytest.fixture(scope="module")
def bundle() -> LoadedBundle:
    return load_bundle()


def jobs_of(config: dict[str, Any], pipeline: str) -> dict[str, dict[str, Any]]:
    """Per kind, the job that runs ``pipeline``, with only its tasks."""
    found = pipeline_jobs(config["resources"]["jobs"], pipeline)
    assert set(found) == set(JOB_KINDS), pipeline
    return {kind: job for kind, (_, job) in found.items()}


def job_cluster(variables: dict[str, Any]) -> dict[str, Any]:
    """The one job cluster every classic job has had: dedicated (single user) access mode."""
    return {"job_cluster_key": "deltasink", "new_cluster": {
        "spark_version": variables["spark_version"], "node_type_id": variables["node_type_id"],
        "num_workers": variables["num_workers"], "data_security_mode": "SINGLE_USER"}}


def assert_on_the_job_cluster(job: dict[str, Any], variables: dict[str, Any]) -> None:
    assert job["job_clusters"] == [job_cluster(variables)]
    assert "environments" not in job
    for task in job["tasks"]:
        assert task["job_cluster_key"] == "deltasink", task["task_key"]
        assert task["libraries"] == [{"whl": WHEEL}], task["task_key"]
        assert "environment_key" not in task, task["task_key"]


@pytest.mark.parametrize("target", TARGETS)
def test_a_config_without_compute_keeps_every_job_on_a_dedicated_job_cluster(
        bundle: LoadedBundle, target: str) -> None:
    config = resolve_target(bundle, target, REQUIRED_VARS)
    (pipeline,) = [p for p in generator.pipeline_configs(ROOT) if p.config.name == CLASSIC]
    assert "compute" not in pipeline.config.databricks.model_fields_set
    for kind, job in jobs_of(config, CLASSIC).items():
        Job.from_dict(job)
        assert_on_the_job_cluster(job, config["variables"])


@pytest.mark.parametrize("target", TARGETS)
def test_serverless_scheduled_jobs_install_the_wheel_through_their_environment(
        bundle: LoadedBundle, target: str) -> None:
    config = resolve_target(bundle, target, REQUIRED_VARS)
    version = config["variables"]["serverless_environment_version"]
    assert version == "4"
    for kind in SCHEDULED:
        job = jobs_of(config, SERVERLESS)[kind]
        assert "job_clusters" not in job, kind
        assert job["environments"] == [{"environment_key": "deltasink", "spec": {
            "environment_version": version, "dependencies": [WHEEL_DEPENDENCY]}}], kind
        for task in job["tasks"]:
            assert task["environment_key"] == "deltasink", (kind, task["task_key"])
            assert not {"job_cluster_key", "existing_cluster_id", "new_cluster",
                        "libraries"} & set(task), (kind, task["task_key"])
        assert "maven" not in json.dumps(job), kind
        parsed = Job.from_dict(job)
        assert parsed.environments[0].spec is not None
        assert parsed.environments[0].spec.dependencies == [WHEEL_DEPENDENCY]
        assert all(t.environment_key == "deltasink" for t in parsed.tasks)
    # The dependency is the wheel the bundle builds (the CLI uploads it and rewrites the path).
    artifact = config["artifacts"]["default"]
    origin = bundle.origin[("jobs", "ingest_every_5m_serverless")].parent
    assert (origin / WHEEL_DEPENDENCY).resolve() == (ROOT / artifact["path"]).resolve() / WHEEL


@pytest.mark.parametrize("target", TARGETS)
def test_the_continuous_job_keeps_its_job_cluster_under_serverless(
        bundle: LoadedBundle, target: str) -> None:
    config = resolve_target(bundle, target, REQUIRED_VARS)
    job = jobs_of(config, SERVERLESS)["continuous"]
    Job.from_dict(job)
    assert_on_the_job_cluster(job, config["variables"])


@pytest.mark.parametrize("target", TARGETS)
def test_no_serverless_task_runs_anything_but_an_available_now_trigger(
        bundle: LoadedBundle, target: str) -> None:
    """Serverless streaming runs only availableNow triggers: a serverless task never gets the
    continuous (processing-time) trigger, whatever the pipeline's compute."""
    config = resolve_target(bundle, target, REQUIRED_VARS)
    shapes = set()
    for key, job in config["resources"]["jobs"].items():
        for task in job["tasks"]:
            trigger = task["notebook_task"]["base_parameters"].get("trigger")
            serverless = "environment_key" in task
            shapes.add(serverless)
            assert serverless == ("environments" in job), (key, task["task_key"])
            if serverless:
                assert trigger in (None, "available-now"), (key, task["task_key"])
            if trigger == "continuous":
                assert task["job_cluster_key"] == "deltasink", key
    assert shapes == {True, False}, "the bundle's examples cover both shapes"


def test_compute_changes_only_where_the_jobs_run() -> None:
    (pipeline,) = [p for p in generator.pipeline_configs(ROOT) if p.config.name == SERVERLESS]
    settings = pipeline.config.databricks
    classic = dataclasses.replace(pipeline, config=pipeline.config.model_copy(
        update={"databricks": settings.model_copy(update={"compute": "job_cluster"})}))

    def without_compute(jobs: dict[str, dict[str, Any]]) -> dict[str, Any]:
        return {key: {**{k: v for k, v in job.items() if k not in COMPUTE_FIELDS},
                      "tasks": [{k: v for k, v in t.items() if k not in COMPUTE_FIELDS}
                                for t in job["tasks"]]}
                for key, job in jobs.items()}

    serverless_jobs = generator.bundle_jobs([pipeline])
    classic_jobs = generator.bundle_jobs([classic])
    # The compute is part of the group, so of the scheduled jobs' keys (and tags).
    assert set(serverless_jobs) == {"ingest_every_5m_serverless",
                                    "maintenance_daily_0400_serverless", "order_lines_continuous"}
    assert set(classic_jobs) == {"ingest_every_5m", "maintenance_daily_0400",
                                 "order_lines_continuous"}

    def shapes(jobs: dict[str, dict[str, Any]]) -> list[str]:
        """Each job without its compute, its group tag and its key, in a comparable order."""
        return sorted(json.dumps({**job, "tags": {**job["tags"], "group": None}}, sort_keys=True)
                      for job in without_compute(jobs).values())

    assert shapes(serverless_jobs) == shapes(classic_jobs)
    assert serverless_jobs[f"{SERVERLESS}_continuous"] == classic_jobs[f"{SERVERLESS}_continuous"]
    assert serverless_jobs != classic_jobs


@pytest.mark.parametrize("value", ["Serverless", "all_purpose", ""])
def test_compute_is_serverless_or_job_cluster_naming_the_key(tmp_path: Path, value: str) -> None:
    folder = tmp_path / "notebooks" / "pipelines.d"
    folder.mkdir(parents=True)
    (folder / "bad.yml").write_text(
        "name: bad\nsource: {topics: [t]}\ncheckpoint: /c\ntarget: {table: a.b}\n"
        f"databricks: {{compute: '{value}'}}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"(?s)bad\.yml: invalid config.*databricks\.compute: "
                                          r"Input should be 'serverless' or 'job_cluster'"):
        generator.bundle_resources(tmp_path)
