"""Which configured values are secrets, and how they are masked in anything printed.

The ground floor of the house: the CLI's failure printer (``pipelines/cli/failures.py``) and
the Kafka wing (its one-line broker errors) both mask with it, and it imports nothing above the
config. Masked: the loaded config's Kafka options (but the public ones below), Spark conf values,
schema-registry credentials, the secret environment overrides, and the credentials inside a
JAAS config.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from pipelines.config import env
from pipelines.config.avro import SECRET_KEYS as AVRO_SECRET_KEYS

if TYPE_CHECKING:
    from pipelines.config.model import PipelineConfig

#: A JAAS config's credentials: ``username``, ``password``, OIDC's ``clientSecret`` (values
#: may escape quotes).
JAAS_CREDENTIAL = re.compile(r'\b(username|password|clientSecret)\s*=\s*"((?:[^"\\]|\\.)*)"')

#: Kafka options whose values name a mechanism, a protocol or a file, never a credential: they
#: stay readable in errors ("invalid credentials with SASL mechanism SCRAM-SHA-512"). Every other
#: option value (and every Spark conf value) is masked.
PUBLIC_OPTIONS = frozenset({
    "security.protocol", "sasl.mechanism", "sasl.kerberos.service.name",
    "ssl.endpoint.identification.algorithm", "ssl.protocol", "ssl.enabled.protocols",
    "ssl.truststore.type", "ssl.keystore.type", "ssl.truststore.location",
    "ssl.keystore.location", "sasl.login.callback.handler.class",
    "sasl.client.callback.handler.class", "sasl.oauthbearer.token.endpoint.url",
    "client.dns.lookup", "isolation.level",
})


def secret_values(options: Mapping[str, str], conf: Mapping[str, str] | None = None
                  ) -> set[str]:
    """The values to mask: every Spark conf value, and every Kafka option value except those of
    :data:`PUBLIC_OPTIONS`."""
    return {v for k, v in options.items() if k not in PUBLIC_OPTIONS} | set((conf or {}).values())


def config_secrets(config: PipelineConfig) -> set[str]:
    """The secret values of one loaded config: its Kafka options (but the public ones), its
    Spark conf, and its schema registry's credentials."""
    found = secret_values(config.source.kafka_options(), config.spark.spark_conf())
    if config.source.avro is not None:
        found |= config.source.avro.secrets()
    return found


def redact(text: str, known: Iterable[str] = (),
           environ: Mapping[str, str] | None = None) -> str:
    """``text`` with every secret value masked as ``***``.

    Args:
        text: what is about to be printed.
        known: secret values of the loaded config.
        environ: the environment whose secret overrides are masked (default: this process's).
    """
    environ = os.environ if environ is None else environ
    secrets = set(known)
    for var, path in env.overrides(environ).items():
        key = "_".join(path[2:]).replace("_", ".")  # as the loader names the option
        public = path[:2] == ["source", "options"] and key in PUBLIC_OPTIONS
        if path[:2] in (["source", "options"], ["spark", "conf"]) and not public:
            secrets.add(environ[var])
        if path[:2] == ["source", "avro"] and path[2:] and path[2] in AVRO_SECRET_KEYS:
            secrets.add(environ[var])  # the schema registry's credentials
    for value in list(secrets):
        secrets.update(secret for _, secret in JAAS_CREDENTIAL.findall(value))
    for value in sorted((v for v in secrets if len(v) >= 4), key=len, reverse=True):
        text = text.replace(value, "***")
    return text
