"""The S3 connector's jars: fetched by ``deltasink setup --s3``, given to a session only when the
pipeline has an S3 location, and refused to it until fetched (no JVM starts here)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from pipelines.config.model import PipelineConfig
from pipelines.errors import JarsMissingError
from pipelines.runtime import jvm
from pipelines.runtime import spark as spark_module


def config(location: str, **spark: Any) -> PipelineConfig:
    return PipelineConfig.model_validate({
        "name": "p", "source": {"bootstrap_servers": "127.0.0.1:9092", "topics": ["t"]},
        "target": {"path": f"{location}/orders"}, "checkpoint": f"{location}/_checkpoints/p",
        "quality": {"results_path": f"{location}/r", "metrics_path": f"{location}/m"},
        "spark": spark})


@pytest.fixture
def sessions(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """What ``spark_for`` asks ``get_spark`` for, instead of a session."""
    asked: list[dict[str, Any]] = []
    monkeypatch.setattr(spark_module, "get_spark",
                        lambda app_name, **kwargs: asked.append(kwargs))
    return asked


def test_a_pipeline_on_s3_gets_the_connector_and_its_settings_beneath_its_own(
        sessions: list[dict[str, Any]]) -> None:
    own = {"spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:9000",
           "spark.hadoop.fs.s3a.aws.credentials.provider": "mine"}
    spark_module.spark_for(config("s3://bucket/bronze", conf=own))
    asked = sessions[0]
    assert asked["packages"] == jvm.S3_PACKAGES == ("org.apache.hadoop:hadoop-aws:3.4.1",)
    assert asked["conf"]["spark.hadoop.fs.s3.impl"] == "org.apache.hadoop.fs.s3a.S3AFileSystem"
    assert asked["conf"]["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:9000"
    assert asked["conf"]["spark.hadoop.fs.s3a.aws.credentials.provider"] == "mine"


def test_other_pipelines_and_connect_clients_get_no_s3_jar_and_no_s3_setting(
        sessions: list[dict[str, Any]]) -> None:
    spark_module.spark_for(config("/lake"))
    spark_module.spark_for(config("s3a://bucket/bronze", remote="sc://127.0.0.1:15002"))
    for asked in sessions:
        assert asked["packages"] == ()
        assert not any("s3" in key for key in asked["conf"])


def test_the_s3_jars_count_as_fetched_only_with_their_whole_classpath_in_todays_m2(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No network: stand-in jar files in a Maven repository of this test's own."""
    m2, cache = tmp_path / "m2", tmp_path / "cache"
    monkeypatch.setenv("DELTASINK_M2", str(m2))
    monkeypatch.setenv("DELTASINK_JVM_CACHE", str(cache))
    aws = jvm.Coordinate.parse(jvm.HADOOP_AWS).jar_in(m2)
    sdk = jvm.Coordinate.parse("software.amazon.awssdk:bundle:2.24.6").jar_in(m2)
    listed = cache / "s3" / "classpath.txt"

    def fetched() -> bool:
        try:
            jvm.require_fetched(jvm.S3_PACKAGES)
        except JarsMissingError:
            return False
        return True

    assert not fetched()  # no classpath
    jvm.require_fetched(())  # a session that does not ask for S3A is never refused
    listed.parent.mkdir(parents=True)
    listed.write_text(os.pathsep.join(map(str, (aws, sdk))))
    assert not fetched()  # listed, but the jars are not there
    for jar in (aws, sdk):
        jar.parent.mkdir(parents=True)
        jar.write_bytes(b"")
    assert fetched()
    sdk.unlink()
    assert not fetched()  # one jar gone
    monkeypatch.setenv("DELTASINK_M2", str(tmp_path / "elsewhere"))
    sdk.write_bytes(b"")
    assert not fetched()  # another repository: its jars are not those listed


@pytest.mark.slow
@pytest.mark.chaos
def test_the_s3_classpath_is_hadoop_aws_and_the_aws_sdk_bundle(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Resolved by mvn from ~/.m2, as ``deltasink setup`` does: 26 s at a load of 11 with the
    jars already there, so in ``make chaos``; every S3 run of make test resolves the same jars
    through Spark."""
    monkeypatch.setenv("DELTASINK_JVM_CACHE", str(tmp_path))
    names = {p.name for p in jvm.s3_classpath()}
    assert {"hadoop-aws-3.4.1.jar", "bundle-2.24.6.jar"} <= names, names
    assert (tmp_path / "s3" / "classpath.txt").exists()
