"""Environment variables: process settings and config overrides live in namespaces apart."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest
import yaml

from pipelines.config import env
from pipelines.config.loader import load_config
from pipelines.errors import ConfigError

BASE = {"name": "orders_bronze",
        "source": {"bootstrap_servers": "127.0.0.1:9092", "topics": ["orders"]},
        "target": {"path": "./lake/orders"}, "checkpoint": "./lake/_checkpoints/orders"}

#: A value for every process setting, as an operator might set them all at once.
EVERY_SETTING = {env.SPARK_LOG: "/tmp/driver.log", env.SPARK_LOG_LEVEL: "WARN",
                 env.M2: "/tmp/m2", env.JVM_CACHE: "/tmp/cache",
                 env.FAULT: "before_target_commit@999", env.CHAOS_SEED: "7",
                 env.VOLUMES_ROOT: "/tmp/volumes"}


def write(tmp_path: Path, data: dict[str, object]) -> Path:
    path = tmp_path / "pipeline.yml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_every_process_setting_is_listed_here_and_in_the_docs() -> None:
    from pipelines.reference import environment

    assert set(EVERY_SETTING) == set(env.PROCESS_SETTINGS)
    page = environment.render()  # the docs' environment variables reference
    for name in env.PROCESS_SETTINGS:
        assert f"`{name}`" in page, f"{name} is not in the docs' environment reference"


def test_process_settings_cannot_collide_with_config_overrides() -> None:
    for name in env.PROCESS_SETTINGS:
        assert env.override_path(name) is None
        assert env.SEPARATOR not in name[len(env.PREFIX):]
    assert not {f"{env.PREFIX}{k.upper()}" for k in env.TOP_LEVEL_KEYS} & set(env.PROCESS_SETTINGS)


def test_every_process_setting_alongside_a_config_loads_it_unchanged(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = write(tmp_path, BASE)
    plain = load_config(path, environ={})
    with caplog.at_level(logging.WARNING, logger="deltasink"):
        cfg = load_config(path, environ={**EVERY_SETTING,
                                         "DELTASINK_SOURCE__BROKER_TIMEOUT": "30s"})
    assert cfg.source.broker_timeout == 30.0
    assert cfg.model_copy(update={"source": plain.source}) == plain
    assert caplog.records == []  # known settings are not warned about


def test_documented_override_names_still_work(tmp_path: Path) -> None:
    environ = {"DELTASINK_SOURCE__OPTIONS__SASL_JAAS_CONFIG": "jaas-secret",
               "DELTASINK_SPARK__MASTER": "local[1]",
               "DELTASINK_SPARK__CONF__SPARK_EXECUTOR_MEMORY": "1g",
               "DELTASINK_TARGET__DEDUP_WINDOW": "2d",
               "DELTASINK_QUALITY__ENABLED": "false",
               "DELTASINK_CHECKPOINT": "/data/checkpoints/x",  # top-level keys: single part
               "DELTASINK_NAME": "other_name"}
    cfg = load_config(write(tmp_path, BASE), environ=environ)
    assert cfg.source.kafka_options() == {"sasl.jaas.config": "jaas-secret"}
    assert cfg.spark.master == "local[1]"
    assert cfg.spark.spark_conf() == {"spark.executor.memory": "1g"}
    assert cfg.target.dedup_window == 2 and cfg.quality.enabled is False
    assert cfg.checkpoint == "/data/checkpoints/x" and cfg.name == "other_name"


def test_an_unknown_single_part_variable_is_ignored_with_a_warning(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="deltasink"):
        cfg = load_config(write(tmp_path, BASE),
                          environ={"DELTASINK_SOME_FUTURE_SETTING": "hunter2"})
    assert cfg.name == "orders_bronze"
    assert "ignoring environment variable DELTASINK_SOME_FUTURE_SETTING" in caplog.text
    assert "hunter2" not in caplog.text


def test_an_override_of_an_unknown_key_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(write(tmp_path, BASE), environ={"DELTASINK_SOURCE__TOPICZ": "[a]"})
    assert re.search(r"unknown key 'source.topicz' \(set by environment variable "
                     r"DELTASINK_SOURCE__TOPICZ\)", str(err.value))


def test_an_override_that_is_not_yaml_is_refused_without_echoing_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(write(tmp_path, BASE), environ={"DELTASINK_TARGET__PATH": "a: b: s3cr3t"})
    assert "DELTASINK_TARGET__PATH" in str(err.value) and "s3cr3t" not in str(err.value)


def test_process_settings_are_read_through_one_function(monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    from pipelines.runtime import jvm, spark

    monkeypatch.setenv(env.SPARK_LOG, str(tmp_path / "driver.log"))
    monkeypatch.setenv(env.M2, str(tmp_path / "m2"))
    monkeypatch.setenv(env.JVM_CACHE, str(tmp_path / "cache"))
    assert spark.jvm_log_path() == tmp_path / "driver.log"
    assert jvm.m2_repository() == tmp_path / "m2"
    assert jvm.cache_dir() == tmp_path / "cache"
    with pytest.raises(KeyError):
        env.setting("DELTASINK_NOT_A_SETTING")
