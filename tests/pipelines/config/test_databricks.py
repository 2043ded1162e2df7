"""The config's ``databricks:`` section: per-job bundle settings and how secrets are named."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.config.loader import load_config
from pipelines.errors import ConfigError
from tests.support.configs import write_config


def test_a_local_run_accepts_and_ignores_the_databricks_section(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path, "127.0.0.1:9", "orders", databricks={
        "ingest_cron": "0 0/5 * * * ?", "schedule_pause_status": "UNPAUSED",
        "secret_scope": "kafka", "secrets": {
            "DELTASINK_SOURCE__OPTIONS__SASL_JAAS_CONFIG": "orders-jaas"}}), environ={})
    assert config.databricks.ingest_cron == "0 0/5 * * * ?"
    assert config.databricks.secrets == {
        "DELTASINK_SOURCE__OPTIONS__SASL_JAAS_CONFIG": "orders-jaas"}
    assert config.source.kafka_options() == {}  # secrets are read on Databricks only
    assert load_config(write_config(tmp_path, "127.0.0.1:9", "orders"),
                       environ={}).databricks.secrets == {}


@pytest.mark.parametrize(("section", "message"), [
    ({"secrets": {"SASL_PASSWORD": "pw"}}, "'SASL_PASSWORD' is not a config override name"),
    ({"secrets": {"DELTASINK_SPARK_LOG": "x"}}, "'DELTASINK_SPARK_LOG' is not a config override"),
    ({"secrets": {"DELTASINK_SOURCE__OPTIONS__X": "a/b"}}, "secret key for DELTASINK_SOURCE"),
    ({"maintenance_cron": "daily"}, "not a Quartz cron expression"),
    ({"continuous_pause_status": "OFF"}, "continuous_pause_status: Input should be 'PAUSED'"),
    ({"schedule": "x"}, "unknown key 'databricks.schedule'"),
])
def test_a_bad_databricks_section_fails_the_load_naming_the_key(
        tmp_path: Path, section: dict[str, object], message: str) -> None:
    path = write_config(tmp_path, "127.0.0.1:9", "orders", databricks=section)
    with pytest.raises(ConfigError, match=message):
        load_config(path, environ={})
