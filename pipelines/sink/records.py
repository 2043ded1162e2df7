"""A pipeline's records as the batch sees them: classified rows, their key, their target rows.

Two kinds, one seam (:class:`Records`): event records typed by a declared schema
(:class:`EventRecords`: JSON or Avro, ``pipelines/sink/parse.py``), and a change stream's
records typed by the schemas the events carry (``source.format: debezium``,
:class:`pipelines.formats.debezium.records.ChangeRecords`), whose columns and key are learned
from the records themselves, and may grow while the stream runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from pyspark.sql import Column, DataFrame
from pyspark.sql.types import StructType

from pipelines.config.model import PipelineConfig
from pipelines.formats.debezium.records import ChangeRecords
from pipelines.formats.decoders import decoder_for
from pipelines.sink.parse import classify, valid_events
from schemas.base import EventSchema


class Records(Protocol):
    """What the batch needs of its records' format."""

    @property
    def keys(self) -> tuple[str, ...]:
        """The key's columns."""
        ...

    @property
    def time_column(self) -> str:
        """The column of a row's time (freshness)."""
        ...

    def classify(self, batch: DataFrame, max_record_bytes: int) -> DataFrame:
        """The batch's rows, each with its ``_reason`` (null for a good one)."""
        ...

    def valid(self, classified: DataFrame, keep: tuple[str, ...] = ()) -> DataFrame:
        """The good rows as target rows, with ``keep``."""
        ...

    def metrics(self) -> list[Column]:
        """More values to observe on the batch's one job."""
        ...

    def learn(self, got: Mapping[str, Any]) -> bool:
        """Whether what the job observed asks for the batch to be classified again."""
        ...

    def columns(self) -> StructType:
        """The target rows' own columns (a change stream's: the learned ones)."""
        ...


class EventRecords:
    """Records of a declared event schema: JSON, or Avro decoded with its writer schema.

    Args:
        config: the pipeline config.
        schema: the event schema.
    """

    def __init__(self, config: PipelineConfig, schema: EventSchema) -> None:
        self.config, self.schema = config, schema

    @property
    def keys(self) -> tuple[str, ...]:
        """``target.dedup_key``."""
        return self.config.target.dedup_keys

    @property
    def time_column(self) -> str:
        """The schema's time column."""
        return self.schema.time_column

    def classify(self, batch: DataFrame, max_record_bytes: int) -> DataFrame:
        """:func:`pipelines.sink.parse.classify` with the format's decoder (an Avro registry is
        asked for new writer schemas each batch)."""
        return classify(batch, self.schema, max_record_bytes, decoder=decoder_for(self.config))

    def valid(self, classified: DataFrame, keep: tuple[str, ...] = ()) -> DataFrame:
        """:func:`pipelines.sink.parse.valid_events`."""
        return valid_events(classified, self.schema, keep)

    def metrics(self) -> list[Column]:
        """Nothing more to observe."""
        return []

    def learn(self, got: Mapping[str, Any]) -> bool:
        """Nothing to learn: the schema is declared."""
        return False

    def columns(self) -> StructType:
        """The schema's target columns."""
        return self.schema.target_schema()


def records_for(config: PipelineConfig, schema: EventSchema) -> Records:
    """The records of ``config``'s source format."""
    if config.change_stream:
        return ChangeRecords(config)
    return EventRecords(config, schema)
