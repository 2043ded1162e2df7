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


class BrokerError(DeltasinkError):
    """The Kafka broker is unreachable, or the embedded broker failed to start or stop."""


class BrokerAuthError(BrokerError):
    """Kafka refused the client: wrong credentials, or a TLS handshake that failed."""


class SourceError(DeltasinkError):
    """The Kafka source cannot be read as configured (missing topic, lost offsets)."""


class CheckpointError(DeltasinkError):
    """The streaming checkpoint is corrupt, or in use by another run."""


class CheckpointMismatchError(CheckpointError):
    """The checkpoint and the target table disagree on what was ingested (rolled back, copied)."""


class CommitError(DeltasinkError):
    """A Delta commit failed after all retries."""


class QualityError(DeltasinkError):
    """A data-quality expectation failed."""


class RegistryError(DeltasinkError):
    """The schema registry could not be reached, refused the credentials, or answered an error."""
