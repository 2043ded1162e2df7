"""Scenario 8: bad config and environment fail fast, say what to do, and create nothing."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from pipelines.config.model import PipelineConfig
from pipelines.errors import (
    BrokerError,
    ConfigError,
    DeltasinkError,
    EnvironmentSetupError,
    SchemaError,
    SourceError,
)
from pipelines.kafka.broker import EmbeddedBroker, free_port_pair
from pipelines.kafka.topics import ensure_topic
from pipelines.run import run_pipeline
from pipelines.runtime import jvm
from tests.chaos.conftest import PROFILES, Profile, record
from tests.support import runner
from tests.support.configs import make_config, write_config
from tests.support.jobs import spark_jobs


def refused(spark: SparkSession, cfg: PipelineConfig, error: type[DeltasinkError],
            *created: str) -> str:
    """Run, expect ``error``; assert that nothing but ``created`` paths exist afterwards."""
    with pytest.raises(error) as failed:
        run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)
    for path in (cfg.target.ref.path, cfg.target.quarantine_ref.path, cfg.checkpoint):
        if path not in created:
            assert not Path(str(path)).exists(), f"{path} was created by a failed run"
    return str(failed.value)


@pytest.mark.parametrize("profile", PROFILES)
def test_unreachable_broker(spark: SparkSession, lake: Path, profile: Profile) -> None:
    cfg = make_config(lake, f"127.0.0.1:{free_port_pair()}", "orders",
                      source={"broker_timeout": "3s"})
    started = time.monotonic()
    with spark_jobs(spark) as ran:
        message = refused(spark, cfg, BrokerError)
    took = time.monotonic() - started
    assert ran.jobs == 0  # refused before any Spark work: the broker is asked first
    # A guard against a hang, not a speed bound (broker_timeout is 3 s).
    assert took < 120, f"hung: no BrokerError {took:.0f} s into a run with broker_timeout=3s"
    assert "did not answer" in message and "Is the broker running" in message
    assert "broker_timeout=3s; nothing was written" in message
    record("8 unreachable broker", profile, None, "BrokerError, nothing created")


@pytest.mark.parametrize("profile", PROFILES)
def test_missing_topic(spark: SparkSession, broker: EmbeddedBroker, lake: Path, topic: str,
                       profile: Profile) -> None:
    cfg = make_config(lake, broker.bootstrap_servers, topic)
    message = refused(spark, cfg, SourceError)
    assert f"topic(s) {topic} do not exist" in message and "create them" in message
    record("8 missing topic", profile, None, "SourceError, nothing created")


@pytest.mark.parametrize("profile", PROFILES)
def test_unwritable_target_path(spark: SparkSession, broker: EmbeddedBroker, lake: Path,
                                topic: str, profile: Profile) -> None:
    ensure_topic(broker.bootstrap_servers, topic, 1)
    blocker = lake / "not-a-folder"
    blocker.write_text("a regular file where a folder should be")
    cfg = make_config(lake, broker.bootstrap_servers, topic,
                      target={"path": str(blocker / "orders")})
    message = refused(spark, cfg, ConfigError)
    assert f"target.path {blocker / 'orders'} cannot be created: {blocker} is a file" in message
    record("8 unwritable target path", profile, None, "ConfigError, nothing created")


@pytest.mark.parametrize("profile", PROFILES)
def test_existing_target_with_incompatible_schema(spark: SparkSession, broker: EmbeddedBroker,
                                                  lake: Path, topic: str,
                                                  profile: Profile) -> None:
    ensure_topic(broker.bootstrap_servers, topic, 1)
    cfg = make_config(lake, broker.bootstrap_servers, topic)
    other = StructType([StructField("event_id", IntegerType()),
                        StructField("note", StringType())])
    spark.createDataFrame([(1, "x")], other).write.format("delta").save(cfg.target.ref.path)
    message = refused(spark, cfg, SchemaError, str(cfg.target.ref.path))
    assert "the schema changed incompatibly with table" in message
    assert "column 'event_id' is int in the table but string in the schema" in message
    assert "new column 'event_time' (timestamp) is required" in message
    record("8 target with incompatible schema", profile, None, "SchemaError, nothing created")


@pytest.mark.parametrize("profile", PROFILES)
def test_java_missing(lake: Path, topic: str, profile: Profile, tmp_path: Path) -> None:
    path = write_config(lake, "127.0.0.1:9", topic)  # never contacted: Java is checked first
    empty_bin = tmp_path / "bin"
    empty_bin.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(empty_bin)
    done = runner.run(path, env=env, timeout=120)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "Java 17+ was not found (no JAVA_HOME, no `java` on PATH)" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (lake / "orders").exists() and not (lake / "_checkpoints").exists()
    record("8 Java missing", profile, None, "EnvironmentSetupError, exit 1")


@pytest.mark.parametrize("profile", PROFILES)
def test_maven_unreachable_with_an_empty_cache(tmp_path: Path, profile: Profile,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / ".m2").mkdir(parents=True)
    settings = home / ".m2" / "settings.xml"
    settings.write_text(
        "<settings><offline>false</offline><mirrors><mirror><id>nowhere</id>"
        "<mirrorOf>*</mirrorOf><url>http://127.0.0.1:9/maven2</url></mirror></mirrors>"
        "</settings>\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("MAVEN_OPTS", f"-Duser.home={home}")  # mvn reads user.home, not $HOME
    monkeypatch.setenv("MAVEN_ARGS", f"-s {settings}")
    monkeypatch.setenv("DELTASINK_M2", str(tmp_path / "m2"))
    monkeypatch.setenv("DELTASINK_JVM_CACHE", str(tmp_path / "cache"))
    started = time.monotonic()
    with pytest.raises(EnvironmentSetupError) as failed:
        jvm.broker_classpath()
    took = time.monotonic() - started
    assert took < 300, f"hung: the fetch from an unreachable mirror took {took:.0f} s"
    message = str(failed.value)
    assert "could not fetch the JVM artifacts for kafka-broker" in message
    assert f"not cached in {tmp_path / 'm2'}" in message
    assert "Check network access to Maven Central" in message
    record("8 Maven unreachable, empty cache", profile, None, "EnvironmentSetupError")
