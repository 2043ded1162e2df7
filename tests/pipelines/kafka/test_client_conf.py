"""The stream's Java-client Kafka options, as the Python client's configuration."""

from __future__ import annotations

import base64
import time
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from pipelines.errors import ConfigError, OwnClientUnavailable
from pipelines.kafka.client_conf import librdkafka_config

SECRET = "s3cr3t-Pa55"
_OAUTH = "org.apache.kafka.common.security.oauthbearer"
_MSK_HOST = "b-1.demo.abc123.c2.kafka.eu-west-1.amazonaws.com:9098"


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


def test_oidc_client_credentials_become_librdkafkas_oidc_method() -> None:
    """Databricks' shaded class name translates as Kafka's own does."""
    conf = librdkafka_config({
        "security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
        "sasl.login.callback.handler.class":
            f"kafkashaded.{_OAUTH}.secured.OAuthBearerLoginCallbackHandler",
        "sasl.oauthbearer.token.endpoint.url": "https://idp.example/oauth2/token",
        "sasl.login.connect.timeout.ms": "15000",
        "sasl.jaas.config": f'kafkashaded.{_OAUTH}.OAuthBearerLoginModule required '
                            f'clientId="deltasink" clientSecret="{SECRET}" scope="kafka" '
                            'extension_logicalCluster="lkc-1";'})
    assert conf["sasl.oauthbearer.method"] == "oidc"
    assert conf["sasl.oauthbearer.client.id"] == "deltasink"
    assert conf["sasl.oauthbearer.client.secret"] == SECRET
    assert conf["sasl.oauthbearer.scope"] == "kafka"
    assert conf["sasl.oauthbearer.token.endpoint.url"] == "https://idp.example/oauth2/token"
    assert conf["sasl.oauthbearer.extensions"] == "logicalCluster=lkc-1"
    assert "sasl.login.connect.timeout.ms" not in conf and "sasl.jaas.config" not in conf


def test_kafkas_unsecured_test_tokens_become_an_unsecured_jwt() -> None:
    conf = librdkafka_config({
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
        "sasl.jaas.config": f'{_OAUTH}.OAuthBearerLoginModule required '
                            'unsecuredLoginStringClaim_sub="alice";'})
    assert conf["enable.sasl.oauthbearer.unsecure.jwt"] is True
    assert conf["sasl.oauthbearer.config"] == "principal=alice lifeSeconds=3600"


def test_msk_iam_signs_a_token_with_the_region_of_the_bootstrap_host(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """AWS's signer, with static test credentials: the token is made here, no network call."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLETEST")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    conf = librdkafka_config({
        "bootstrap.servers": _MSK_HOST, "security.protocol": "SASL_SSL",
        "sasl.mechanism": "AWS_MSK_IAM",
        "sasl.jaas.config": "software.amazon.msk.auth.iam.IAMLoginModule required;",
        "sasl.client.callback.handler.class":
            "software.amazon.msk.auth.iam.IAMClientCallbackHandler"})
    assert conf["sasl.mechanism"] == "OAUTHBEARER" and conf["security.protocol"] == "SASL_SSL"
    token, expiry = conf["oauth_cb"]("")
    url = urlparse(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode())
    query = parse_qs(url.query)
    assert url.netloc == "kafka.eu-west-1.amazonaws.com"
    assert query["Action"] == ["kafka-cluster:Connect"]
    assert query["X-Amz-Credential"][0].startswith("AKIDEXAMPLETEST/")
    assert "/eu-west-1/kafka-cluster/" in query["X-Amz-Credential"][0]
    assert time.time() < expiry < time.time() + 3600
    assert SECRET not in token


def test_msk_iam_without_a_region_leaves_the_stream_as_the_only_client(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(OwnClientUnavailable, match="AWS_MSK_IAM: the cluster's region"):
        librdkafka_config({"bootstrap.servers": "kafka.internal:9098",
                           "security.protocol": "SASL_SSL", "sasl.mechanism": "AWS_MSK_IAM",
                           "sasl.jaas.config": "software.amazon.msk.auth.iam.IAMLoginModule "
                                               "required;"})


@pytest.mark.parametrize(("options", "named"), [
    ({"databricks.serviceCredential": "msk-prod"},
     "AWS_MSK_IAM via databricks.serviceCredential"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
      "sasl.login.callback.handler.class": "com.acme.kafka.VaultTokenHandler",
      "sasl.jaas.config": f'{_OAUTH}.OAuthBearerLoginModule required secret="{SECRET}";'},
     "OAUTHBEARER through the Java class VaultTokenHandler"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
      "sasl.login.callback.handler.class": f"{_OAUTH}.OAuthBearerLoginCallbackHandler",
      "sasl.oauthbearer.token.endpoint.url": "file:///var/run/token",
      "sasl.jaas.config": f"{_OAUTH}.OAuthBearerLoginModule required;"},
     "token endpoint that is not http"),
])
def test_logins_librdkafka_cannot_do_are_named_not_refused(
        options: dict[str, str], named: str) -> None:
    with pytest.raises(OwnClientUnavailable) as caught:
        librdkafka_config(options)
    assert named in str(caught.value) and SECRET not in str(caught.value)


def test_kerberos_keytab_login_is_translated() -> None:
    conf = librdkafka_config({
        "security.protocol": "SASL_SSL", "sasl.kerberos.service.name": "kafka",
        "sasl.jaas.config": "com.sun.security.auth.module.Krb5LoginModule required "
                            'useKeyTab=true keyTab="/etc/kafka.keytab" principal="svc@EX.COM";'})
    assert conf["sasl.mechanism"] == "GSSAPI" and conf["sasl.kerberos.service.name"] == "kafka"
    assert conf["sasl.kerberos.keytab"] == "/etc/kafka.keytab"
    assert conf["sasl.kerberos.principal"] == "svc@EX.COM"


@pytest.mark.parametrize(("options", "named"), [
    ({"ssl.truststore.location": "/no/such/trust.jks", "ssl.truststore.password": SECRET},
     "ssl.truststore.location"),
    ({"ssl.keystore.location": "/no/such/key.jks", "ssl.keystore.password": SECRET},
     "ssl.keystore.location"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
      "sasl.jaas.config": f'org.example.Nope required secret="{SECRET}";'}, "sasl.jaas.config"),
])
def test_a_broken_option_is_one_line_naming_it_without_secrets(
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


def test_a_jks_key_store_is_opened_into_pem_in_memory(tmp_path: Path) -> None:
    """The key keytool sealed in a JKS store, opened with the key password, equals the key
    keytool exports to PKCS#12 itself."""
    import subprocess

    from cryptography.hazmat.primitives.serialization import load_pem_private_key, pkcs12

    store = tmp_path / "client.jks"
    subprocess.run(["keytool", "-genkeypair", "-alias", "c", "-keyalg", "RSA", "-keysize", "2048",
                    "-dname", "CN=client", "-validity", "2", "-storetype", "JKS", "-keystore",
                    str(store), "-storepass", "store-pw", "-keypass", "key-pwd"],
                   check=True, capture_output=True)
    subprocess.run(["keytool", "-importkeystore", "-srckeystore", str(store), "-srcstorepass",
                    "store-pw", "-srckeypass", "key-pwd", "-srcalias", "c", "-destkeystore",
                    str(tmp_path / "c.p12"), "-deststoretype", "PKCS12", "-deststorepass",
                    "p12-pwd", "-destkeypass", "p12-pwd"], check=True, capture_output=True)
    conf = librdkafka_config({"ssl.keystore.location": str(store),
                              "ssl.keystore.password": "store-pw", "ssl.key.password": "key-pwd"})
    assert "ssl.key.password" not in conf and not list(tmp_path.glob("*.pem"))
    key = load_pem_private_key(str(conf["ssl.key.pem"]).encode(), None)
    exported = pkcs12.load_pkcs12((tmp_path / "c.p12").read_bytes(), b"p12-pwd")
    assert exported.key is not None
    assert key.private_numbers() == exported.key.private_numbers()  # type: ignore[union-attr]
    assert "BEGIN CERTIFICATE" in str(conf["ssl.certificate.pem"])
    with pytest.raises(ConfigError, match=r"key password .* does not open the key"):
        librdkafka_config({"ssl.keystore.location": str(store),
                           "ssl.keystore.password": "store-pw", "ssl.key.password": "wrong-pw"})
