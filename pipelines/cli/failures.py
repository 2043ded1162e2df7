"""What the ``deltasink`` command prints when a command fails: one masked line, and an exit code.

Errors deltasink raises on purpose (:mod:`pipelines.errors`) already read as one line. Anything
else (Kafka, ``OSError``, Py4J, Spark, a bug) is described here in one line that names what
failed; ``--debug`` prints the traceback before it. Every secret the process knows of is masked
in both: the loaded config's Kafka options, Spark conf and schema-registry credentials, the
secret environment overrides, and the credentials inside a JAAS config.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Iterable

from pipelines.config.secrets import PUBLIC_OPTIONS, config_secrets, redact, secret_values
from pipelines.errors import (
    ConfigError,
    DeltasinkError,
    JarsMissingError,
    QualityError,
    SchemaError,
)

__all__ = ["PUBLIC_OPTIONS", "broken_by_stop", "classify", "config_secrets", "describe_failure",
           "redact", "report_failure", "secret_values"]


def broken_by_stop(exc: BaseException, signals: list[int]) -> bool:
    """Whether ``exc`` is what a stop signal broke (a cancelled batch, a closed call), to be
    reported as the stop: ``signals`` arrived, and ``exc`` is not a config, schema or quality
    verdict of its own, which stays what it is."""
    return bool(signals) and not isinstance(
        exc, ConfigError | SchemaError | QualityError | JarsMissingError)


def classify(exc: BaseException, debug: bool = False) -> tuple[int, str]:
    """The exit code and the one line of a failure (the epilog's exit codes).

    2 a bad config or schema (or one this install lacks the jars for), 3 a failed data-quality
    check, 130 Ctrl-C, 1 anything else.
    """
    if isinstance(exc, ConfigError | SchemaError | JarsMissingError):
        return 2, f"error: {exc}"
    if isinstance(exc, QualityError):
        return 3, f"data quality check failed: {exc}"
    if isinstance(exc, DeltasinkError):
        return 1, f"error: {exc}"
    if isinstance(exc, KeyboardInterrupt):
        return 130, "interrupted"
    hint = "" if debug else " (run with --debug for the traceback)"  # Kafka, OSError, Spark
    return 1, f"error: {describe_failure(exc)}{hint}"


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
        from pipelines.runtime.connect_client import connect_reason, gave_up_on

        gone = gave_up_on()
        if gone or kind == "RetriesExceeded":
            # A Connect server that died or stopped answering: name it, not PySpark's class.
            return (f"the Spark Connect server at {gone or 'spark.remote'} (spark.remote) "
                    f"stopped answering; gave up retrying ({connect_reason(exc)})")
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
