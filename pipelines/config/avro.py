"""The config's ``source.avro`` section: where Avro writer schemas come from.

``source.format: avro`` reads values in the Confluent wire format (magic byte 0, a 4-byte
big-endian schema id, Avro binary). Each record's writer schema comes from a schema registry, by
id, or from one ``.avsc`` file (``schema_file``, relative to the config file like other paths).
The registry's credentials are secrets: override them with
``DELTASINK_SOURCE__AVRO__REGISTRY_USER`` / ``..._PASSWORD``; they never show in ``repr``, logs
or errors.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from pipelines.config.units import parse_duration

#: The keys of ``source.avro`` that hold credentials (masked in every error line).
SECRET_KEYS = ("registry_user", "registry_password")


class AvroConfig(BaseModel):
    """Where the writer schemas of ``source.format: avro`` come from: a registry or a file."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    registry_url: str | None = None
    """The schema registry's base URL (``https://psrc-xxxx.region.aws.confluent.cloud``)."""
    registry_user: SecretStr | None = None
    """The registry's basic-auth user (Confluent Cloud: an API key); a secret, masked in
    output. Set it with ``DELTASINK_SOURCE__AVRO__REGISTRY_USER``."""
    registry_password: SecretStr | None = None
    """The registry's basic-auth password; a secret. Set it with
    ``DELTASINK_SOURCE__AVRO__REGISTRY_PASSWORD``."""
    registry_timeout: float = Field(30.0, gt=0)
    """Timeout of each registry request (a duration)."""
    subjects: tuple[str, ...] = ()
    """The registry subjects whose versions a record may be written with. Default: each
    topic's ``<topic>-value`` (the TopicNameStrategy), or, with ``topic_pattern``, every
    ``<topic>-value`` subject whose topic matches it."""
    schema_file: str | None = None
    """An ``.avsc`` file: every record is decoded with it, whatever its schema id."""

    _seconds = field_validator("registry_timeout", mode="before")(parse_duration)

    @model_validator(mode="after")
    def _one_origin(self) -> AvroConfig:
        """Exactly one of ``registry_url`` (an ``http://`` or ``https://`` URL) and
        ``schema_file``; ``registry_user`` and ``registry_password`` together or not at all."""
        if bool(self.registry_url) == bool(self.schema_file):
            raise ValueError("set exactly one of source.avro.registry_url or "
                             "source.avro.schema_file")
        if self.registry_url and not self.registry_url.startswith(("http://", "https://")):
            raise ValueError("source.avro.registry_url must be an http:// or https:// URL")
        if bool(self.registry_user) != bool(self.registry_password):
            raise ValueError("set both source.avro.registry_user and registry_password, or "
                             "neither")
        return self

    def credentials(self) -> tuple[str, str] | None:
        """The registry's basic-auth user and password, revealed (never log them), or None."""
        if self.registry_user is None or self.registry_password is None:
            return None
        return self.registry_user.get_secret_value(), self.registry_password.get_secret_value()

    def secrets(self) -> set[str]:
        """The secret values of this section (to mask in errors)."""
        creds = self.credentials()
        return set(creds) if creds else set()
