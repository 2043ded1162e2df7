"""A pipeline against the embedded broker's SASL_SSL listener (SCRAM-SHA-512, private JKS CA).

The secrets (the JAAS config and the truststore password) come from environment overrides and
must not appear in the output, the driver log or the Spark conf.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.config import env
from pipelines.config.loader import load_config
from pipelines.errors import ConfigError
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import produce_events
from pipelines.kafka.source import read_stream
from tests.support.checker import check
from tests.support.configs import write_config
from tests.support.runner import run

_JAAS = "DELTASINK_SOURCE__OPTIONS__SASL_JAAS_CONFIG"
_STORE = "DELTASINK_SOURCE__OPTIONS__SSL_TRUSTSTORE_PASSWORD"


def _setup(lake: Path, node: EmbeddedBroker, topic: str, password: str | None = None
           ) -> tuple[Path, dict[str, str]]:
    """A config naming the SASL_SSL listener; the secrets as environment overrides."""
    creds = node.sasl_credentials()
    options = creds.java_options(password)
    secrets = {_JAAS: options.pop("sasl.jaas.config"),
               _STORE: options.pop("ssl.truststore.password")}
    config = write_config(lake, node.sasl_bootstrap_servers, topic,
                          source={"options": options, "broker_timeout": 30})
    environ = {**os.environ, env.SPARK_LOG: str(lake / "driver.log"), **secrets}
    return config, environ


@pytest.mark.extended
def test_a_pipeline_reads_a_sasl_ssl_listener_exactly_once(
        spark: SparkSession, sasl_broker: EmbeddedBroker, lake: Path) -> None:
    sent = produce_events(sasl_broker.bootstrap_servers, "sasl-orders", 200, partitions=3,
                          duplicate_rate=0.1, poison_rate=0.05, seed=21)
    config, environ = _setup(lake, sasl_broker, "sasl-orders")
    done = run(config, env=environ)
    assert done.returncode == 0, done.stderr
    creds = sasl_broker.sasl_credentials()
    logged = (lake / "driver.log").read_text(errors="replace")
    for text in (done.stdout, done.stderr, logged):
        assert creds.password not in text and creds.store_password not in text
    verdict = check(spark, load_config(config, environ=environ), sent.event_ids,
                    sum(sent.poison.values()))
    assert verdict.clean, verdict


def test_a_wrong_password_is_one_line_naming_kafkas_reason(
        sasl_broker: EmbeddedBroker, lake: Path) -> None:
    produce_events(sasl_broker.bootstrap_servers, "sasl-denied", 3, seed=22)
    wrong = "not-the-password-4711"
    config, environ = _setup(lake, sasl_broker, "sasl-denied", password=wrong)
    done = run(config, env=environ)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "refused the connection" in lines[0], done.stderr
    assert "authentication" in lines[0].lower(), done.stderr  # Kafka's own reason
    assert "Traceback" not in done.stderr and not (lake / "orders").exists()
    logged = (lake / "driver.log").read_text(errors="replace")
    for text in (done.stdout, done.stderr, logged):
        assert wrong not in text and sasl_broker.sasl_credentials().store_password not in text


def test_secret_options_never_become_spark_confs(
        spark: SparkSession, sasl_broker: EmbeddedBroker, lake: Path) -> None:
    config, environ = _setup(lake, sasl_broker, "sasl-conf")
    loaded = load_config(config, environ=environ)
    read_stream(spark, loaded, "earliest")
    dump = repr(spark.sparkContext.getConf().getAll())
    creds = sasl_broker.sasl_credentials()
    assert creds.password not in dump and creds.store_password not in dump


def test_the_jks_truststore_is_read_as_the_same_ca_the_broker_uses(
        sasl_broker: EmbeddedBroker, tmp_path: Path) -> None:
    from pipelines.kafka.truststore import as_pem_file

    creds = sasl_broker.sasl_credentials()
    pem = as_pem_file(str(creds.truststore), "JKS", creds.store_password, tmp_path)
    assert Path(pem).read_text().split() == creds.ca_pem.read_text().split()
    with pytest.raises(ConfigError, match=r"password .* does not open it"):
        as_pem_file(str(creds.truststore), "JKS", "wrong-password", tmp_path)
