"""What the ``deltasink`` command prints when a command fails: one masked line, and an exit code.

Errors deltasink raises on purpose (:mod:`pipelines.errors`) already read as one line. Anything
else (Kafka, ``OSError``, Py4J, Spark, a bug) is described here in one line that names what
failed; ``--debug`` prints the traceback before it. Every secret the process knows of is masked
in both: the loaded config's Kafka options, Spark conf and schema-registry credentials, the
secret environment overrides, and the credentials inside a JAAS config.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Iterable, Mapping

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


def redact(text: str, known: Iterable[str] = (),
           environ: Mapping[str, str] | None = None) -> str:
    """``text`` with every secret value masked as ``***``.

    Args:
        text: what is about to be printed.
        known: secret values of the loaded config.
        environ: the environment whose secret overrides are masked (default: this process's).
    """
    from pipelines.config import env
    from pipelines.config.avro import SECRET_KEYS as AVRO_SECRET_KEYS
    from pipelines.kafka.topics import JAAS_CREDENTIAL

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


def describe_failure(exc: BaseException) -> str:
    """One line for an exception deltasink did not raise on purpose: what failed, and where."""
    text = str(exc)
    kind = type(exc).__name__
    module = type(exc).__module__
    if module.startswith("py4j"):
        # "An error occurred while calling o42.load.\n: java.io.IOException: ...\n\tat ..."
        java = next((ln[2:] for ln in text.splitlines() if ln.startswith(": ")), None)
        kind, text = "Spark JVM", java or text
    elif module.startswith("pyspark"):
        kind = f"Spark {kind}"
    elif module.startswith("confluent_kafka") or kind == "KafkaException":
        error_str = getattr(exc.args[0] if exc.args else None, "str", None)  # a KafkaError
        kind, text = "Kafka", str(error_str()) if callable(error_str) else text
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "(no message)")
    return f"{kind}: {first[:500]}"


def report_failure(exc: BaseException, code: int, line: str, *, debug: bool,
                   known: Iterable[str] = ()) -> int:
    """Print ``line`` (after the traceback, with ``debug``) to stderr, masked; return ``code``.

    Args:
        exc: the exception.
        code: the exit code to return.
        line: the one line the user sees.
        debug: print the traceback first (masked too: a Kafka or Spark message may quote a
            secret option).
        known: secret values of the loaded config.
    """
    if debug:
        print(redact("".join(traceback.format_exception(exc)), known), file=sys.stderr, end="")
    print(redact(line, known), file=sys.stderr, flush=True)
    return code
