"""The Kafka authentication guide's examples: each loads, and each translates as its table says.

None is refused: a login librdkafka can do becomes its settings (full checks), and one it cannot
do is a named gap (the run reads with Spark's source alone, with reduced checks).
"""

from __future__ import annotations

import pytest
import yaml

from pipelines.config.loader import load_config
from pipelines.errors import OwnClientUnavailable
from pipelines.kafka.client_conf import librdkafka_config
from pipelines.kafka.source import client_options
from tests.docs.sources import ROOT, blocks
from tests.support.configs import write_config

GUIDE = ROOT / "docs" / "guides" / "kafka-auth.md"
#: What each example's own client does, by its bootstrap host: the settings it must have, or
#: the gap it must name.
EXPECTED = {
    "pkc-xxxxx.eu-west-1.aws.confluent.cloud:9092": {"sasl.username": "<API key>"},
    "kafka-1.internal:9094": {"sasl.mechanism": "SCRAM-SHA-512"},
    "kafka.example.com:9093": {"sasl.oauthbearer.method": "oidc"},
    "kafka-1.internal:9093": {"ssl.key.pem": None},
    "b-1.orders.abc123.c2.kafka.eu-west-1.amazonaws.com:9098": {"oauth_cb": None},
    "kafka-1.corp.example.com:9093": {"sasl.mechanism": "GSSAPI"},
}
GAPS = {"msk-orders-reader": "AWS_MSK_IAM via databricks.serviceCredential"}


def examples() -> list[dict[str, object]]:
    return [yaml.safe_load(b.text)["source"] for b in blocks(GUIDE) if b.lang == "yaml"]


def test_the_guide_has_an_example_per_login() -> None:
    assert len(examples()) == 7


@pytest.mark.parametrize("source", examples(), ids=lambda s: str(s["bootstrap_servers"]))
def test_an_example_starts_with_full_or_named_reduced_checks(
        source: dict[str, object], tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    from pathlib import Path

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLETEST")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "example-secret-key")
    lake = Path(str(tmp_path))
    file = write_config(lake, str(source["bootstrap_servers"]), "orders", source=source)
    config = load_config(file)
    options = client_options(config.source)
    gap = next((why for marker, why in GAPS.items() if marker in options.values()), None)
    if gap is not None:
        with pytest.raises(OwnClientUnavailable, match=gap):
            librdkafka_config(options)
        return
    if "keystore" in str(options.get("ssl.keystore.location")):  # the store is on the user's
        from pipelines.kafka import client_conf  # machine: only the key is stubbed

        monkeypatch.setattr(client_conf, "_keystore", lambda _o, _l: {"ssl.key.pem": "k"})
        monkeypatch.setattr(client_conf, "_as_pem", lambda *_a: "/ca.pem")
    elif str(options.get("ssl.truststore.type")) == "JKS":
        from pipelines.kafka import client_conf

        monkeypatch.setattr(client_conf, "_as_pem", lambda *_a: "/ca.pem")
    conf = librdkafka_config(options)
    for key, value in EXPECTED[str(source["bootstrap_servers"])].items():
        assert key in conf, (key, sorted(conf))
        if value is not None:
            assert conf[key] == value
