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
from datetime import timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from pipelines.config.avro import AvroConfig
from pipelines.config.cadence import Cadence, default_cadence
from pipelines.config.databricks import DatabricksConfig
from pipelines.config.schema import defaults_from_schema
from pipelines.config.units import parse_duration, parse_window
from pipelines.config.upsert import KAFKA_SEQUENCE, Mode, check_mode
from pipelines.config.window import DATE_COLUMN, DEFAULT_DEDUP_WINDOW, fill_window
from pipelines.storage.tables import TableRef
from schemas import EventSchema, resolve_schema
from schemas.loader import is_schema_file

_FROZEN = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)
__all__ = ["DATE_COLUMN", "DEFAULT_MASTER", "PipelineConfig", "QualityConfig", "SourceConfig",
           "SparkConfig", "TargetConfig"]
#: target.dedup_window's bound, in days (its default: pipelines/config/window.py).
MAX_DEDUP_WINDOW_DAYS = 366
#: spark.master's default: this machine, two cores.
DEFAULT_MASTER = "local[2]"


class SourceConfig(BaseModel):
    """Where and how to read Kafka."""

    model_config = _FROZEN

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
    format: Literal["json", "avro"] = "json"
    """How record values are encoded: ``json``, or ``avro`` (the Confluent wire format; needs
    ``source.avro``)."""
    avro: AvroConfig | None = None
    """``format: avro``: where writer schemas come from (pipelines/config/avro.py)."""

    _seconds = field_validator("broker_timeout", mode="before")(parse_duration)

    @model_validator(mode="after")
    def _one_subscription(self) -> SourceConfig:
        """Exactly one of ``topics`` and ``topic_pattern``; ``format: avro`` exactly when a
        ``source.avro`` section is set."""
        if bool(self.topics) == bool(self.topic_pattern):
            raise ValueError("set exactly one of source.topics or source.topic_pattern")
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


class TargetConfig(BaseModel):
    """The Delta tables the sink writes."""

    model_config = _FROZEN

    path: str | None = None
    """The target Delta table's folder or URI. Set exactly one of ``path`` and ``table``."""
    table: str | None = None
    """The target as a catalog table name (``catalog.schema.table``)."""
    quarantine_path: str | None = None
    """The quarantine table's folder or URI. Default: the target's location +
    ``_quarantine``."""
    quarantine_table: str | None = None
    """The quarantine as a catalog table name; at most one of ``quarantine_path`` and
    ``quarantine_table``."""
    dedup_key: str | tuple[str, ...] = "event_id"
    """The column, or list of columns, that identifies an event: one row per key. Default: the
    schema's ``key``. It must be a required, non-blank field of the schema."""
    partition_by: tuple[str, ...] = ("event_date",)
    """The target's partition columns; ``event_date`` is the UTC date of the event time."""
    commit_retries: int = Field(10, ge=0)
    """How many times a commit that conflicts with a concurrent writer is retried (the whole
    MERGE, with backoff)."""
    compact_while_streaming: bool = True
    """``--trigger continuous`` only: each batch's target MERGE runs with Delta's
    auto-compaction on, so a date partition is compacted once it holds
    ``spark.databricks.delta.autoCompact.minNumFiles`` (50) small files, and a stream of weeks
    keeps its live files bounded between maintenance runs. Its ``OPTIMIZE`` commits hold no
    ``txn`` and change no data; deltasink's log reader skips them. Scheduled runs leave the
    compaction to the maintenance job."""
    dedup_window: int | timedelta = Field(DEFAULT_DEDUP_WINDOW, validate_default=True)
    """How far apart two rows with one key may be and still count as copies (the later is dropped).

    * **Whole days** (``0d``, ``1d``, ``72h``, or a bare number of days): the MERGE matches
      ``dedup_key`` in any ``event_date`` partition within +-N days of the incoming row's date
      (0: the same date only), and reads those whole partitions: each day costs two more
      partitions per batch date. Needs ``event_date`` in ``partition_by``.
    * **Any other duration** (``1h``, ``15m``, ``36h``): an event-time window. A key matches a
      target row whose time field is at most that far from the incoming row's, on any date, and
      the MERGE reads only the target files whose time statistics reach within the window of the
      batch's events (:mod:`pipelines.sink.event_window`): a slice of a day, not the day.

    A copy whose time moved further than the window lands as a second row, and the run's
    validation fails on it (the key is checked against every date of the table).

    Left out (or null), the default depends on the pipeline (:mod:`pipelines.config.window`):
    ``15m`` for an insert-only pipeline whose schema's time is a field of the event (a retry,
    a replay or a transactional copy is the same record, with the same event time: caught on
    any date, for a slice of the day read per batch); ``1d`` when the schema's time is the
    Kafka timestamp, which every send sets again (``0d`` without ``event_date`` in
    ``partition_by``); ``0d`` with ``mode: upsert``. A window written in the config is kept.
    """
    mode: Mode = "insert_only"
    """``upsert``: keep each key's highest ``sequence_by`` version (pipelines/sink/upsert.py)."""
    sequence_by: str = KAFKA_SEQUENCE
    """``mode: upsert`` only: what orders a key's versions, a required schema column or
    ``kafka`` (the Kafka coordinates)."""
    delete_when: str | None = None
    """``mode: upsert`` only: a Spark SQL boolean over the parsed columns; a version for which
    it is true is stored as a tombstone (``_deleted = true``)."""

    _window = field_validator("dedup_window", mode="before")(parse_window)
    _window_default = model_validator(mode="before")(fill_window)

    @model_validator(mode="after")
    def _one_location(self) -> TargetConfig:
        """Exactly one of ``path`` and ``table``, at most one of ``quarantine_path`` and
        ``quarantine_table``; ``dedup_window`` at most 366 days, and a whole-day window needs
        ``event_date`` in ``partition_by``; ``sequence_by`` and ``delete_when`` only with
        ``mode: upsert``, which needs ``dedup_window: 0d`` (its default)."""
        if bool(self.path) == bool(self.table):
            raise ValueError("set exactly one of target.path or target.table")
        if self.quarantine_path and self.quarantine_table:
            raise ValueError("set at most one of target.quarantine_path or target.quarantine_table")
        if isinstance(self.dedup_window, int) and not \
                0 <= self.dedup_window <= MAX_DEDUP_WINDOW_DAYS:
            raise ValueError("target.dedup_window must be greater than or equal to 0 and less "
                             f"than or equal to {MAX_DEDUP_WINDOW_DAYS} days, or a duration "
                             "such as 1h")
        if self.time_window is not None and self.time_window > timedelta(
                days=MAX_DEDUP_WINDOW_DAYS):
            raise ValueError("target.dedup_window must be less than or equal to "
                             f"{MAX_DEDUP_WINDOW_DAYS} days")
        if self.date_window and DATE_COLUMN not in self.partition_by:
            raise ValueError(f"target.dedup_window needs '{DATE_COLUMN}' in target.partition_by "
                             "(without it the key is matched across all dates anyway); "
                             "set dedup_window: 0d")
        check_mode(self.mode, self.sequence_by, self.delete_when, self.dedup_window)
        return self

    @property
    def date_window(self) -> int:
        """``dedup_window`` in whole days (0 for an event-time window)."""
        return self.dedup_window if isinstance(self.dedup_window, int) else 0

    @property
    def time_window(self) -> timedelta | None:
        """``dedup_window`` as an event-time window, or None for a whole-day one."""
        return self.dedup_window if isinstance(self.dedup_window, timedelta) else None

    @property
    def dedup_keys(self) -> tuple[str, ...]:
        """The dedup key's columns (one, or several for a composite key)."""
        return (self.dedup_key,) if isinstance(self.dedup_key, str) else self.dedup_key

    @property
    def ref(self) -> TableRef:
        """The target table."""
        return TableRef(path=self.path, name=self.table)

    @property
    def quarantine_ref(self) -> TableRef:
        """The quarantine table (defaults to the target's location + ``_quarantine``)."""
        if self.quarantine_path or self.quarantine_table:
            return TableRef(path=self.quarantine_path, name=self.quarantine_table)
        if self.table:
            return TableRef(name=f"{self.table}_quarantine")
        return TableRef(path=f"{self.path}_quarantine")


class QualityConfig(BaseModel):
    """Post-run validation, its result tables and its reports."""

    model_config = _FROZEN

    enabled: bool = True
    """``false``: no validation after a run or on a cadence, and no run-metrics rows."""
    docs_dir: str = "./lake/_quality/docs"
    """The folder of Great Expectations' Data Docs; the dashboard is written next to it."""
    results_path: str | None = "./lake/_quality/results"
    """The quality-results table's folder (one row per expectation per validation)."""
    results_table: str | None = None
    """The quality-results table as a catalog name; replaces ``results_path``."""
    metrics_path: str | None = "./lake/_quality/run_metrics"
    """The run-metrics table's folder (one row per micro-batch)."""
    metrics_table: str | None = None
    """The run-metrics table as a catalog name; replaces ``metrics_path``."""
    max_quarantine_ratio: float = Field(0.01, ge=0, le=1)
    """Fail validation when more than this share of a run's records was quarantined."""
    max_future_skew: float = 3600.0
    """Fail validation when an event time is later than now + this (a duration)."""
    max_lag_records: int | None = Field(None, ge=0)
    """Fail validation when Kafka holds more records than this past the target's newest
    commit (all partitions together). None (the default): not checked."""
    max_staleness: float | None = Field(None, gt=0)
    """Fail validation when Kafka holds unread records and the newest Kafka timestamp inserted
    is older than this (a duration: ``15m``, ``2h``). A caught-up pipeline on a quiet topic is
    never stale. None (the default): not checked."""
    validate_every: Cadence = Field(default_factory=default_cadence)
    """``--trigger continuous`` only: validate what was written since the last validation, this
    often (``15m``, the default; or ``20 batches``). See ``quality/cadence.py``."""
    metrics_every: float = Field(300.0, ge=0)
    """How often a running stream writes its batches' run-metrics rows (a duration; ``5m``, the
    default). Each write is one commit to the run-metrics table: about 288 a day, where every
    minute made 1,440. The rows arrive that much later on the dashboard; a run that ends writes
    the rest at once. ``0``: at every lag reading, once a minute, as a pipeline with
    ``max_staleness`` always does (its check reads the newest rows)."""
    on_failure: Literal["continue", "stop"] = "continue"
    """What a failed cadence validation does to a continuous stream (it is always recorded)."""
    count_other_date_copies: bool = False
    """Count, per batch, the copies ``target.dedup_window`` caught in another date's partition
    (``duplicates_other_date``). It costs a join of the batch with the target in every batch
    whose MERGE dropped rows, so it is off by default, and the column is then null."""

    _seconds = field_validator("max_future_skew", "metrics_every", mode="before")(parse_duration)

    @model_validator(mode="after")
    def _locations(self) -> QualityConfig:
        """``results_path`` or ``results_table``, and ``metrics_path`` or ``metrics_table``, are
        set (the paths have defaults)."""
        for table in ("results", "metrics"):
            if not (getattr(self, f"{table}_path") or getattr(self, f"{table}_table")):
                raise ValueError(f"set quality.{table}_path or quality.{table}_table")
        return self

    @field_validator("max_staleness", mode="before")
    @classmethod
    def _optional_seconds(cls, value: object) -> float | None:
        return None if value is None else parse_duration(value)

    @property
    def results_ref(self) -> TableRef:
        """The quality-results table (one row per expectation per validation)."""
        return TableRef(path=None if self.results_table else self.results_path,
                        name=self.results_table)

    @property
    def metrics_ref(self) -> TableRef:
        """The run-metrics table (one row per micro-batch)."""
        return TableRef(path=None if self.metrics_table else self.metrics_path,
                        name=self.metrics_table)


class SparkConfig(BaseModel):
    """Where Spark runs outside Databricks (on Databricks the runtime's session is used as is)."""

    model_config = _FROZEN

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

    model_config = _FROZEN

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,100}$")
    """The pipeline's name (letters, digits, ``_``, ``.``, ``-``); part of every commit's
    ``txnAppId``."""
    source: SourceConfig
    """Where and how to read Kafka."""
    schema_source: str | dict[str, Any] = Field("events_v1", alias="schema")
    """A registered schema's name, an inline YAML schema, or the path of a YAML schema file."""
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

    @property
    def schema_name(self) -> str:
        """The event schema's name."""
        return self.event_schema().name if isinstance(self.schema_source, dict) or \
            is_schema_file(self.schema_source) else self.schema_source

    def event_schema(self) -> EventSchema:
        """The event schema: registered, inline or from its file.

        Raises:
            SchemaError: unknown, unreadable or invalid.
        """
        return resolve_schema(self.schema_source)

    @property
    def describe(self) -> str:
        """A one-line, secret-free summary for logs."""
        topics = ",".join(self.source.topics) or f"/{self.source.topic_pattern}/"
        return (f"pipeline {self.name}: kafka {self.source.bootstrap_servers} [{topics}] -> "
                f"{self.target.ref.describe()} (schema {self.schema_name})")
