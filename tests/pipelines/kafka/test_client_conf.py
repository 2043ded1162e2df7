"""The stream's Java-client Kafka options, as the Python client's configuration."""

from __future__ import annotations

import pytest

from pipelines.errors import ConfigError
from pipelines.kafka.client_conf import librdkafka_config

SECRET = "s3cr3t-Pa55"


def test_sasl_credentials_and_shared_names_are_translated() -> None:
    conf = librdkafka_config({
        "bootstrap.servers": "b:9093", "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                            f'username="alice" password="{SECRET}\\"x";',
        "ssl.truststore.type": "PEM", "ssl.truststore.location": "/etc/ca.pem",
        "ssl.endpoint.identification.algorithm": "", "request.timeout.ms": "20000",
        "key.deserializer": "x.Y"})
    assert conf["sasl.username"] == "alice" and conf["sasl.password"] == f'{SECRET}"x'
    assert conf["security.protocol"] == "SASL_SSL" and conf["sasl.mechanism"] == "SCRAM-SHA-512"
    assert conf["ssl.ca.location"] == "/etc/ca.pem"
    assert conf["ssl.endpoint.identification.algorithm"] == "none"
    assert "sasl.jaas.config" not in conf and "request.timeout.ms" not in conf
    assert "key.deserializer" not in conf and "ssl.truststore.location" not in conf


@pytest.mark.parametrize(("options", "named"), [
    ({"ssl.truststore.location": "/no/such/trust.jks", "ssl.truststore.password": SECRET},
     "ssl.truststore.location"),
    ({"ssl.keystore.location": "/etc/key.jks", "ssl.keystore.password": SECRET},
     "ssl.keystore.location"),
    ({"sasl.jaas.config": "com.sun.security.auth.module.Krb5LoginModule required "
                          f'keyTab="/k" principal="{SECRET}";'}, "sasl.jaas.config"),
    ({"sasl.login.callback.handler.class": "software.amazon.msk.auth.iam.IAMClientCallback"},
     "sasl.login.callback.handler.class"),
])
def test_what_the_python_client_cannot_do_is_refused_in_one_line_without_secrets(
        options: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError) as caught:
        librdkafka_config(options)
    message = str(caught.value)
    assert f"source.options.{named}" in message and "\n" not in message
    assert SECRET not in message


def test_pem_and_pkcs12_stores_are_passed_on() -> None:
    pem = librdkafka_config({"ssl.keystore.type": "PEM", "ssl.keystore.location": "/k.pem"})
    assert pem["ssl.certificate.location"] == pem["ssl.key.location"] == "/k.pem"
    p12 = librdkafka_config({"ssl.keystore.type": "PKCS12", "ssl.keystore.location": "/k.p12",
                             "ssl.keystore.password": SECRET})
    assert p12["ssl.keystore.location"] == "/k.p12" and p12["ssl.keystore.password"] == SECRET
