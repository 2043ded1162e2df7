"""The deltasink error hierarchy.

Every failure the user can act on is one of these; the CLI prints the message and exits non-zero
without a traceback. Messages never include secret values.
"""

from __future__ import annotations


class DeltasinkError(Exception):
    """Base class for every error deltasink raises on purpose."""


class ConfigError(DeltasinkError):
    """The configuration file or an environment override is invalid."""


class SchemaError(DeltasinkError):
    """An event schema is unknown, or a table's schema is incompatible with it."""


class EnvironmentSetupError(DeltasinkError):
    """Java, Maven or the JVM artifacts needed to run are missing."""


class JarsMissingError(EnvironmentSetupError):
    """The config needs JVM jars that ``deltasink setup`` fetches only when asked (S3A's).

    Exit 2, as a bad config: nothing ran, and the line names the command that fixes it.
    """


class BrokerError(DeltasinkError):
    """The Kafka broker is unreachable, or the embedded broker failed to start or stop."""


class BrokerAuthError(BrokerError):
    """Kafka refused the client: wrong credentials, or a TLS handshake that failed."""


class OwnClientUnavailable(DeltasinkError):
    """deltasink's own Kafka client (librdkafka) cannot log in the way the stream does.

    Not a failure of the run: Spark's Kafka source still reads with the options as given, and
    the checks that need the own client take their figures from the stream instead
    (:mod:`pipelines.kafka.reach`). The message names the login and why.
    """


class SourceError(DeltasinkError):
    """The Kafka source cannot be read as configured (missing topic, lost offsets)."""


class CheckpointError(DeltasinkError):
    """The streaming checkpoint is corrupt, or in use by another run."""


class CheckpointMismatchError(CheckpointError):
    """The checkpoint and the target table disagree on what was ingested (rolled back, copied)."""


class ConnectUnsupportedError(DeltasinkError):
    """An operation that needs the Spark driver's JVM was asked of a Spark Connect client."""


class CommitError(DeltasinkError):
    """A Delta commit failed after all retries."""


class QualityError(DeltasinkError):
    """A data-quality expectation failed."""


class RegistryError(DeltasinkError):
    """The schema registry could not be reached, refused the credentials, or answered an error."""


def failure_line(exc: BaseException | str, limit: int = 300) -> str:
    """The one line of a failure a user is shown: its first non-empty line, at most ``limit``.

    Where Spark hands that line over to a Python traceback (a ``foreachBatch`` body's failure
    ends ``Return Message: Traceback (most recent call last):``), the traceback's last line, the
    exception raised, takes the traceback's place: the line says what failed, with no traceback.
    """
    text = str(exc).strip()
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return (type(exc).__name__ if isinstance(exc, BaseException) else "")[:limit]
    first = lines[0]
    head, marker, _ = first.partition(_TRACEBACK)
    if marker:
        first = f"{head.rstrip()} {_raised(lines[1:])}".strip()
    return first[:limit]


_TRACEBACK = "Traceback (most recent call last)"
#: Lines of a Python traceback that are neither a frame nor the exception: chained tracebacks.
_CHAINING = (_TRACEBACK, "During handling of the above exception",
             "The above exception was the direct cause")


def _raised(lines: list[str]) -> str:
    """The exception line that ends a Python traceback (the last of a chain): its unindented
    lines that are not headers, up to what Spark appends (``=== Streaming Query ===``, the JVM's
    stack trace)."""
    raised = ""
    for line in lines:
        if line.startswith(("=== ", "JVM stacktrace")):
            break
        if line[:1] not in (" ", "\t") and not line.startswith(_CHAINING):
            raised = line.strip()
    return raised


def raised_in_batch(text: str) -> DeltasinkError | None:
    """The deltasink error a ``foreachBatch`` body raised, recovered from Spark's failure text.

    The body runs in Spark's Python callback (classic) or in a worker beside the server (Spark
    Connect); either way the client only sees the streaming failure's text, which carries the
    body's traceback and so its last line, ``pipelines.errors.<Class>: <message>``.

    Returns:
        The error, re-created with its class and one-line message; None when the failure was
        not one of ours.
    """
    import re

    found = re.findall(r"pipelines\.errors\.([A-Za-z]+Error): ([^\n]*)", text)
    if not found:
        return None
    name, message = found[-1]
    kind = globals().get(name)
    if not isinstance(kind, type) or not issubclass(kind, DeltasinkError):
        return None
    return kind(message.strip())
