"""One typed, frozen configuration object for a pipeline.

The YAML file is the single source of truth; environment variables named
``DELTASINK_<SECTION>__<KEY>`` override single keys (useful for secrets). Under
``source.options`` the key's underscores become dots, so
``DELTASINK_SOURCE__OPTIONS__SASL_JAAS_CONFIG`` sets the Kafka option ``sasl.jaas.config``; the
same holds under ``spark.conf`` (``DELTASINK_SPARK__CONF__SPARK_EXECUTOR_MEMORY``).
Option and Spark conf values are treated as secrets: they never show in ``repr``, logs or errors.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field, SecretStr, field_validator, model_validator

from pipelines.config.avro import AvroConfig
from pipelines.config.databricks import DatabricksConfig
from pipelines.config.frozen import FROZEN
from pipelines.config.modes import check_change_stream
from pipelines.config.quality import QualityConfig
from pipelines.config.schema import defaults_from_schema
from pipelines.config.target import TargetConfig
from pipelines.config.units import parse_duration
from pipelines.config.window import DATE_COLUMN
from pipelines.storage.tables import TableRef
from schemas import EventSchema, resolve_schema
from schemas.changes import CHANGE_SCHEMA, PinnedField, pinned_fields
from schemas.loader import is_schema_file

__all__ = ["DATE_COLUMN", "DEFAULT_MASTER", "PipelineConfig", "QualityConfig", "SourceConfig",
           "SparkConfig", "TargetConfig"]
#: spark.master's default: this machine, two cores.
DEFAULT_MASTER = "local[2]"


class SourceConfig(BaseModel):
    """Where and how to read Kafka."""

    model_config = FROZEN

    bootstrap_servers: str = "127.0.0.1:9092"
    """Kafka bootstrap servers, ``host:port[,host:port]`` (the default suits the embedded
    broker of ``deltasink broker start``)."""
    topics: tuple[str, ...] = ()
    """The topics to read. Set exactly one of ``topics`` and ``topic_pattern``."""
    topic_pattern: str | None = None
    """A regular expression of topic names to read (Spark's ``subscribePattern``), instead of
    ``topics``."""
    starting_offsets: Literal["earliest", "latest"] = "earliest"
    """Where a brand-new pipeline starts reading: ``earliest`` or ``latest``. Used only when
    neither a checkpoint nor offsets recorded in the target exist."""
    max_records_per_batch: int = Field(500_000, gt=0)  # measured: bench/README.md
    """At most this many records per micro-batch (Spark's ``maxOffsetsPerTrigger``); lower it
    for wide records, to bound the driver's memory."""
    isolation_level: Literal["read_committed", "read_uncommitted"] = "read_committed"
    """Kafka's isolation level; ``read_committed`` skips records of aborted transactions."""
    fail_on_data_loss: bool = True
    """Offsets that Kafka retention deleted before the pipeline read them: ``true`` refuses to
    start (naming the partitions and offsets), ``false`` reports how many and skips them."""
    max_record_bytes: int = Field(1_048_576, gt=0)
    """Record values longer than this are quarantined as ``oversized``."""
    broker_timeout: float = 120.0
    """How long a run waits for an unreachable broker before it stops with a ``BrokerError``
    (a duration: ``2m``, ``30s``)."""
    options: Mapping[str, SecretStr] = Field(default_factory=dict)
    """Extra Kafka client settings (``security.protocol``, ``sasl.*``, ``ssl.*``), passed to
    Spark's source as ``kafka.<option>``. Values are masked in output, except those of
    ``PUBLIC_OPTIONS`` (pipelines/config/secrets.py); set secret ones with
    ``DELTASINK_SOURCE__OPTIONS__<OPTION>``."""
    format: Literal["json", "avro", "debezium"] = "json"
    """How record values are encoded: ``json``, ``avro`` (the Confluent wire format; needs
    ``source.avro``), or ``debezium``: Debezium change events through Kafka Connect's JSON
    converter, schemas on (or off, with the columns pinned in ``schema.fields``); the target
    is then the source table's replica (``target.mode: upsert``) or its history (``scd2``),
    its columns learned from the events (docs/guides/cdc.md)."""
    avro: AvroConfig | None = None
    """``format: avro``: where writer schemas come from (pipelines/config/avro.py)."""

    _seconds = field_validator("broker_timeout", mode="before")(parse_duration)

    @model_validator(mode="after")
    def _one_subscription(self) -> SourceConfig:
        """Exactly one of ``topics`` and ``topic_pattern``; ``format: avro`` exactly when a
        ``source.avro`` section is set."""
        if bool(self.topics) == bool(self.topic_pattern):
            raise ValueError("set exactly one of source.topics or source.topic_pattern")
        if self.format == "debezium" and self.avro is not None:
            raise ValueError("source.format: debezium reads Kafka Connect's JSON converter only: "
                             "Debezium through Avro and a schema registry is not supported yet "
                             "(docs/guides/cdc.md); leave source.avro out")
        if (self.format == "avro") != (self.avro is not None):
            raise ValueError("source.format: avro needs a source.avro section (registry_url or "
                             "schema_file), and source.avro needs format: avro")
        return self

    def kafka_options(self) -> dict[str, str]:
        """Return the extra Kafka client settings, with secret values revealed.

        Returns:
            A plain dict for the Kafka client; never log it.
        """
        return {k: v.get_secret_value() for k, v in self.options.items()}


class SparkConfig(BaseModel):
    """Where Spark runs outside Databricks (on Databricks the runtime's session is used as is)."""

    model_config = FROZEN

    master: str = DEFAULT_MASTER
    """The Spark master of a local classic session (``local[2]``, ``local-cluster[2,1,1024]``,
    ``spark://host:7077``)."""
    remote: str | None = None
    """A Spark Connect server (``sc://host:port``): run as its client, with no JVM here.
    ``SPARK_REMOTE`` sets it too, as in PySpark; unset, a local classic session is used."""
    conf: Mapping[str, SecretStr] = Field(default_factory=dict)
    """Extra Spark settings, applied last; values are masked in output.
    ``spark.driver.extraJavaOptions`` here replaces the local JVMs' JIT settings."""

    @field_validator("remote")
    @classmethod
    def _connect_url(cls, value: str | None) -> str | None:
        """``remote`` is a Spark Connect URL, ``sc://host:port``."""
        if value and not value.startswith("sc://"):
            raise ValueError("spark.remote must be a Spark Connect URL such as "
                             "sc://127.0.0.1:15002")
        return value or None

    def spark_conf(self) -> dict[str, str]:
        """Return the extra Spark settings, with values revealed (they may hold secrets).

        Returns:
            A plain dict for the session builder; never log it.
        """
        return {k: v.get_secret_value() for k, v in self.conf.items()}


class PipelineConfig(BaseModel):
    """Everything one pipeline needs: source, schema, target, checkpoint and quality."""

    model_config = FROZEN

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,100}$")
    """The pipeline's name (letters, digits, ``_``, ``.``, ``-``); part of every commit's
    ``txnAppId``."""
    source: SourceConfig
    """Where and how to read Kafka."""
    schema_source: str | dict[str, Any] = Field("events_v1", alias="schema")
    """A registered schema's name, an inline YAML schema, or the path of a YAML schema file.
    With ``source.format: debezium``: only ``fields`` (column -> type), to pin columns the
    events' own schema does not give (schemas/changes.py); left out, every column is learned."""
    target: TargetConfig
    """The Delta tables the sink writes."""
    checkpoint: str
    """The streaming checkpoint's folder or URI; one run at a time holds its lease."""
    quality: QualityConfig = Field(default_factory=QualityConfig)  # type: ignore[arg-type]
    """Validation, its result tables and its reports."""
    spark: SparkConfig = Field(default_factory=SparkConfig)  # type: ignore[arg-type]
    """Where Spark runs outside Databricks."""
    databricks: DatabricksConfig = Field(default_factory=DatabricksConfig)
    """How the bundle deploys this pipeline's jobs; ignored by a local run."""
    config_file: str | None = Field(None, exclude=True)

    _from_schema = model_validator(mode="before")(defaults_from_schema)

    @model_validator(mode="after")
    def _fits_the_source(self) -> PipelineConfig:
        """A change stream's settings (see :func:`check_change_stream`); its ``schema`` holds
        only pinned fields."""
        change_stream = self.source.format == "debezium"
        target = self.target
        check_change_stream(change_stream, target.mode, target.sequence_by, target.delete_when,
                            "delete_retention" in target.model_fields_set)
        if change_stream and "schema_source" in self.model_fields_set:
            self.pinned_fields()  # a SchemaError (one line) if it is not a mapping of fields
        return self

    @property
    def change_stream(self) -> bool:
        """Whether the source is a change stream (``source.format: debezium``)."""
        return self.source.format == "debezium"

    def companion_tables(self) -> list[tuple[str, TableRef]]:
        """The tables a mode keeps beside its target, with the config key that places each: an
        SCD2 history's changes, a change stream replica's deletes."""
        target = self.target
        if target.mode == "scd2":
            return [("target.changes", target.changes_ref)]
        if self.change_stream and target.mode == "upsert":
            return [("target.deletes", target.deletes_ref)]
        return []

    def pinned_fields(self) -> tuple[PinnedField, ...]:
        """A change stream's pinned columns (``schema.fields``); none for an event topic.

        Raises:
            SchemaError: ``schema`` is not a mapping of pinned fields.
        """
        if not self.change_stream or "schema_source" not in self.model_fields_set:
            return ()
        return pinned_fields(self.schema_source)

    @property
    def schema_name(self) -> str:
        """The event schema's name."""
        if self.change_stream:
            return CHANGE_SCHEMA.name
        return self.event_schema().name if isinstance(self.schema_source, dict) or \
            is_schema_file(self.schema_source) else self.schema_source

    def event_schema(self) -> EventSchema:
        """The event schema: registered, inline or from its file.

        A change stream's is :data:`schemas.changes.CHANGE_SCHEMA` (the change's own
        columns): its data columns are learned from the events.

        Raises:
            SchemaError: unknown, unreadable or invalid.
        """
        if self.change_stream:
            return CHANGE_SCHEMA
        return resolve_schema(self.schema_source)

    @property
    def describe(self) -> str:
        """A one-line, secret-free summary for logs."""
        topics = ",".join(self.source.topics) or f"/{self.source.topic_pattern}/"
        return (f"pipeline {self.name}: kafka {self.source.bootstrap_servers} [{topics}] -> "
                f"{self.target.ref.describe()} (schema {self.schema_name})")
