"""A change stream's records, as the batch sees them: learned schemas, the plan, the rows.

One object per streaming query (held by the batch sink, so what it learns lasts the run): it
learns the topic's schemas from the records (:class:`~pipelines.formats.debezium.shapes.
Shapes`), plans each batch's columns against the target's, classifies the batch
(:func:`~pipelines.formats.debezium.changes.classify_changes`) and says, from the batch's
observed values, whether a schema it had not seen came in (the batch is then classified again
with it, before anything is written).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from pipelines.config.model import PipelineConfig
from pipelines.formats.debezium.changes import (
    DELETED,
    LEARN_KEY,
    LEARN_NAMES,
    LEARN_VALUE,
    TRUNCATE,
    UNCHANGED,
    Plan,
    classify_changes,
)
from pipelines.formats.debezium.pinned import pinned_schema
from pipelines.formats.debezium.shapes import Shapes
from schemas.base import KAFKA_COLUMNS
from schemas.changes import CHANGE_COLUMNS, END_AT, SOURCE_TS, START_AT

#: The change columns a target row keeps beside the data columns (the batch-only flags too).
FLAGS = (DELETED, TRUNCATE, UNCHANGED)
#: Columns of a change stream's target that are not the source table's.
NOT_DATA = frozenset({*CHANGE_COLUMNS, *(c.name for c in KAFKA_COLUMNS), START_AT, END_AT,
                      *FLAGS})


def good() -> Column:
    """A record that became a change: no ``_reason`` (not quarantined, not a skipped tombstone)."""
    return F.col("_reason").isNull()


class ChangeRecords:
    """A change stream's records (``source.format: debezium``).

    Args:
        config: the pipeline config.
    """

    time_column = SOURCE_TS

    def __init__(self, config: PipelineConfig) -> None:
        self.config = config
        self.shapes = Shapes()
        pins = config.pinned_fields()
        self.pinned = {p.name: p.spark_type for p in pins}
        self.pinned_row = pinned_schema(pins)
        self.plan = Plan(columns=StructType([]), keys=(), pinned=self.pinned_row)

    @property
    def keys(self) -> tuple[str, ...]:
        """The key's columns (the message key's fields), once learned."""
        return self.plan.keys

    def columns(self) -> StructType:
        """The planned row columns of the last batch classified."""
        return self.plan.columns

    def classify(self, batch: DataFrame, max_record_bytes: int) -> DataFrame:
        """The batch's change rows with the schemas learned so far.

        The first batch of a run learns them first, with a job of its own over the batch
        (its schemas and keys only), so its one job after it already decodes every column.
        """
        if self.shapes.empty:
            self.learn(_observed(classify_changes(batch, self.plan, max_record_bytes)
                                 .agg(*self.metrics())))
        self.plan = self._planned(batch)
        return classify_changes(batch, self.plan, max_record_bytes)

    def metrics(self) -> list[Column]:
        """What the batch's job observes to learn a schema it has not seen."""
        return [F.to_json(F.collect_set(LEARN_VALUE)).alias(LEARN_VALUE),
                F.to_json(F.collect_set(LEARN_KEY)).alias(LEARN_KEY),
                F.to_json(F.collect_set(LEARN_NAMES)).alias(LEARN_NAMES)]

    def learn(self, got: Mapping[str, Any]) -> bool:
        """Learn the schemas the batch's job found; whether the batch must be classified again.

        Raises:
            ShapeError: two keys disagree on their fields.
        """
        def items(name: str) -> list[Any]:
            return list(json.loads(str(got.get(name) or "[]")))

        return self.shapes.learn({"values": items(LEARN_VALUE), "keys": items(LEARN_KEY),
                                  "names": [json.loads(n) for n in items(LEARN_NAMES)]})

    def valid(self, classified: DataFrame, keep: tuple[str, ...] = ()) -> DataFrame:
        """The good records as target rows: data columns, change columns and flags, Kafka
        columns (``keep``: more columns of ``classified``)."""
        names = [f.name for f in self.plan.columns]
        kafka = [c.name for c in KAFKA_COLUMNS if c.name != "ingested_at"]
        ingested = F.col("ingested_at") if "ingested_at" in classified.columns else \
            F.current_timestamp().alias("ingested_at")
        return classified.where(good()).select(
            *names, *CHANGE_COLUMNS, *FLAGS, *kafka, ingested, *keep)

    def _planned(self, batch: DataFrame) -> Plan:
        """This batch's plan: the learned schemas against the target's columns now."""
        ref = self.config.target.ref
        spark = batch.sparkSession
        existing = StructType([f for f in ref.read(spark).schema.fields
                               if f.name not in NOT_DATA]) if ref.exists(spark) \
            else StructType([])
        keys = self.shapes.key_columns()
        return Plan(columns=self.shapes.plan(existing, self.pinned, keys), keys=keys,
                    values=dict(self.shapes.values), key_schemas=dict(self.shapes.keys),
                    pinned=self.pinned_row, unreadable=dict(self.shapes.unreadable))


def _observed(frame: DataFrame) -> dict[str, Any]:
    row = frame.first()
    return row.asDict() if row is not None else {}
