"""Every login the stream can read, end to end against the embedded broker's listeners.

One broker (``sasl_broker``) serves each login on a listener of its own
(:mod:`pipelines.kafka.broker_auth`). Each test runs a pipeline through Spark's Kafka source
and deltasink's own client (preflight, topic ids, offsets, lag) with the same options, and
checks that every event landed once; where the own client cannot log in, the run names its
reduced checks and still lands every event once.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.cli import main
from pipelines.config.loader import load_config
from pipelines.config.model import PipelineConfig
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import ProduceSummary, produce_events
from pipelines.ops.status import collect_status, format_status
from pipelines.run import run_pipeline
from pipelines.runtime.connect_server import ConnectServer
from tests.support.checker import check
from tests.support.configs import make_config, write_config
from tests.support.oidc import TokenEndpoint, token_endpoint

_OAUTH = "org.apache.kafka.common.security.oauthbearer"
_CLIENT, _SECRET = "deltasink-ingest", "oidc-secret-7c1e9"


@pytest.fixture(scope="module")
def oidc(sasl_broker: EmbeddedBroker) -> Iterator[TokenEndpoint]:
    creds = sasl_broker.sasl_credentials()
    with token_endpoint(creds.oidc_signing_key, {_CLIENT: _SECRET}) as endpoint:
        yield endpoint


def _oidc_options(endpoint: TokenEndpoint, secret: str = _SECRET) -> dict[str, str]:
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
            "sasl.login.callback.handler.class": f"{_OAUTH}.OAuthBearerLoginCallbackHandler",
            "sasl.oauthbearer.token.endpoint.url": endpoint.url,
            "sasl.jaas.config": f"{_OAUTH}.OAuthBearerLoginModule required "
                                f'clientId="{_CLIENT}" clientSecret="{secret}" scope="kafka";'}


def _mtls_options(broker: EmbeddedBroker, store: str, folder: Path) -> dict[str, str]:
    creds = broker.sasl_credentials()
    trust = {"security.protocol": "SSL", "ssl.truststore.type": "PEM",
             "ssl.truststore.location": str(creds.ca_pem)}
    if store == "JKS":
        return {**trust, "ssl.keystore.type": "JKS",
                "ssl.keystore.location": str(creds.client_keystore),
                "ssl.keystore.password": creds.store_password}
    if store == "PKCS12":
        return {**trust, "ssl.keystore.type": "PKCS12",
                "ssl.keystore.location": str(creds.client_pkcs12),
                "ssl.keystore.password": creds.store_password}
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        NoEncryption,
        PrivateFormat,
        pkcs12,
    )

    p12 = pkcs12.load_pkcs12(creds.client_pkcs12.read_bytes(), creds.store_password.encode())
    assert p12.key is not None and p12.cert is not None
    pem = folder / "client.pem"
    pem.write_bytes(p12.key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
                    + p12.cert.certificate.public_bytes(Encoding.PEM))
    return {**trust, "ssl.keystore.type": "PEM", "ssl.keystore.location": str(pem)}


def _land(spark: SparkSession, broker: EmbeddedBroker, lake: Path, topic: str, login: str,
          options: dict[str, str]) -> tuple[PipelineConfig, list[str], ProduceSummary]:
    """Produce 60 events (some duplicated, some poison), run the pipeline, check exactly-once."""
    sent = produce_events(broker.bootstrap_servers, topic, 60, partitions=2,
                          duplicate_rate=0.1, poison_rate=0.05, seed=len(topic))
    config = make_config(lake, broker.auth_bootstrap_servers(login), topic,
                         source={"options": options, "broker_timeout": 30})
    said: list[str] = []
    result = run_pipeline(spark, config, validate=False, progress=said.append)
    assert result.inserted == len(sent.event_ids), said
    verdict = check(spark, config, sent.event_ids, sum(sent.poison.values()))
    assert verdict.clean, verdict
    return config, said, sent


@pytest.mark.extended
def test_oidc_client_credentials_land_exactly_once_with_every_own_check(
        spark: SparkSession, sasl_broker: EmbeddedBroker, lake: Path,
        oidc: TokenEndpoint) -> None:
    config, said, _ = _land(spark, sasl_broker, lake, "login-oidc", "oidc",
                            _oidc_options(oidc))
    assert not any("own client unavailable" in line for line in said), said
    assert oidc.issued.get(_CLIENT, 0) >= 2  # the stream's Java client and deltasink's own
    status = collect_status(spark, config)
    assert status["lag"]["records"] == 0, status["lag"]  # asked of Kafka by the own client
    assert all(_SECRET not in line for line in said)


@pytest.mark.extended
def test_a_wrong_oidc_secret_is_one_line_and_exit_1(
        sasl_broker: EmbeddedBroker, lake: Path, oidc: TokenEndpoint,
        capsys: pytest.CaptureFixture[str]) -> None:
    wrong = "not-the-oidc-secret-31"
    config = write_config(lake, sasl_broker.auth_bootstrap_servers("oidc"), "login-oidc",
                          source={"options": _oidc_options(oidc, wrong), "broker_timeout": 10})
    code = main(["run", "--config", str(config)])
    err = capsys.readouterr().err
    assert code == 1, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "refused the connection" in lines[0], err
    assert wrong not in err and _SECRET not in err and "Traceback" not in err
    assert _CLIENT in oidc.refused and not (lake / "orders").exists()


#: PEM in `make test`; the two key-store formats go the same way after loading (make extended).
@pytest.mark.parametrize("store", [pytest.param("JKS", marks=pytest.mark.extended),
                                   pytest.param("PKCS12", marks=pytest.mark.extended), "PEM"])
def test_mtls_key_stores_land_exactly_once_with_every_own_check(
        spark: SparkSession, sasl_broker: EmbeddedBroker, lake: Path, store: str) -> None:
    options = _mtls_options(sasl_broker, store, lake)
    config, said, _ = _land(spark, sasl_broker, lake, f"login-mtls-{store.lower()}", "mtls",
                            options)
    assert not any("own client unavailable" in line for line in said), said
    assert collect_status(spark, config)["lag"]["records"] == 0
    password = sasl_broker.sasl_credentials().store_password
    assert all(password not in line for line in said)


def _java_only_options() -> dict[str, str]:
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
            "sasl.login.callback.handler.class":
                f"{_OAUTH}.internals.unsecured.OAuthBearerUnsecuredLoginCallbackHandler",
            "sasl.jaas.config": f"{_OAUTH}.OAuthBearerLoginModule required "
                                'unsecuredLoginStringClaim_sub="alice";'}


@pytest.mark.extended
def test_a_java_only_login_lands_exactly_once_and_names_its_reduced_checks(
        spark: SparkSession, sasl_broker: EmbeddedBroker, lake: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A login callback class librdkafka cannot load (Kafka's own unsecured-token handler,
    named explicitly, as a team's own class would be): the stream reads, deltasink's own client
    does not, and the run says which checks come from the stream."""
    config, said, sent = _land(spark, sasl_broker, lake, "login-java-only", "unsecured",
                               _java_only_options())
    reduced = [line for line in said if line.startswith("kafka: own client unavailable for ")]
    assert len(reduced) == 1, said
    assert "OAUTHBEARER through the Java class OAuthBearerUnsecuredLoginCallbackHandler" \
        in reduced[0]
    for check_name in ("topics and partitions", "retention loss", "lag from the stream",
                       "broker outages"):
        assert check_name in reduced[0]
    # status cannot ask Kafka: it shows the lag the stream last saw, with its time
    status = collect_status(spark, config)
    assert status["lag"]["records"] is None
    assert "the stream saw 0 records behind at " in status["lag"]["describe"], status["lag"]
    assert any(line.startswith("lag             own client unavailable for OAUTHBEARER")
               for line in format_status(status))
    # a second run resumes from the checkpoint and lands only the new events, once
    more = produce_events(sasl_broker.bootstrap_servers, "login-java-only", 40, partitions=2,
                          seed=99)
    again = run_pipeline(spark, config, validate=False, progress=lambda _l: None)
    assert again.inserted == len(set(more.event_ids) - set(sent.event_ids)) > 0
    verdict = check(spark, config, set(sent.event_ids) | set(more.event_ids),
                    sum(sent.poison.values()))
    assert verdict.clean, verdict
    # what needs the own client and has no safe stream-side figure is refused in one line,
    # changing nothing: a replay by time, and a rewind (it must know Kafka still has the records)
    file = write_config(lake, sasl_broker.auth_bootstrap_servers("unsecured"), "login-java-only",
                        source={"options": _java_only_options(), "broker_timeout": 30})
    version = collect_status(spark, config)["table_version"]
    for argv in (["replay", "--from-timestamp", "2026-01-01T00:00:00Z"],
                 ["rewind", "--to-version", "1"]):
        code = main([*argv, "--config", str(file)])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 1 and len(err) == 1, err
        assert "own Kafka client" in err[0] and "OAUTHBEARER through the Java class" in err[0]
    assert collect_status(spark, config)["table_version"] == version


def test_with_no_own_client_a_missing_topic_fails_the_run(
        spark: SparkSession, sasl_broker: EmbeddedBroker, lake: Path) -> None:
    """With no own client there is no preflight of the topics; Spark's source fails on a listed
    topic that does not exist, and the run names it in one line: never a silent no-op."""
    from pipelines.errors import SourceError

    produce_events(sasl_broker.bootstrap_servers, "login-present", 5, seed=5)
    config = make_config(lake, sasl_broker.auth_bootstrap_servers("unsecured"), "login-present",
                         source={"options": _java_only_options(), "broker_timeout": 30,
                                 "topics": ["login-present", "login-absent"]})
    with pytest.raises(SourceError, match=r"does not exist .*UnknownTopicOrPartition"):
        run_pipeline(spark, config, validate=False, progress=lambda _l: None)


def test_a_build_without_gssapi_leaves_the_stream_as_the_only_client(lake: Path) -> None:
    """This machine's confluent-kafka wheel has no GSSAPI (Kerberos); the translation is tried,
    and the build's answer turns into the named gap, not a refusal."""
    from pipelines.errors import OwnClientUnavailable
    from pipelines.kafka import admin

    config = make_config(lake, "127.0.0.1:9", "t", source={"options": {
        "security.protocol": "SASL_PLAINTEXT", "sasl.kerberos.service.name": "kafka",
        "sasl.jaas.config": "com.sun.security.auth.module.Krb5LoginModule required "
                            'useKeyTab=true keyTab="/etc/k.keytab" principal="svc@EX.COM";'}})
    with pytest.raises(OwnClientUnavailable, match="GSSAPI: this build of librdkafka"):
        admin.topic_partitions(None, config.source, timeout=1.0)


@pytest.mark.extended
def test_over_spark_connect_a_java_only_login_lands_exactly_once_with_reduced_checks(
        spark: SparkSession, sasl_broker: EmbeddedBroker, connect_server: ConnectServer,
        lake: Path) -> None:
    """The same fallback as a Spark Connect client: the source runs on the server, the client
    has no JVM and no own Kafka login, and says so."""
    from tests.support import runner

    sent = produce_events(sasl_broker.bootstrap_servers, "login-connect", 60, partitions=2,
                          duplicate_rate=0.1, poison_rate=0.05, seed=61)
    file = write_config(lake, sasl_broker.auth_bootstrap_servers("unsecured"), "login-connect",
                        spark={"remote": connect_server.url},
                        source={"options": _java_only_options(), "broker_timeout": 30})
    seen: set[str] = set()
    done = runner.run(file, children=seen)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "java" not in seen, f"the client started a JVM: {sorted(seen)}"
    assert ("kafka: own client unavailable for OAUTHBEARER through the Java class "
            "OAuthBearerUnsecuredLoginCallbackHandler; reduced checks:") in done.stdout
    config = load_config(file, environ={})
    verdict = check(spark, config, sent.event_ids, sum(sent.poison.values()))
    assert verdict.clean, verdict
