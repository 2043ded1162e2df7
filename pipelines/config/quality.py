"""``quality:``: post-run validation, its result tables and its reports."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from pipelines.config.cadence import Cadence, default_cadence
from pipelines.config.frozen import FROZEN
from pipelines.config.units import parse_duration
from pipelines.storage.tables import TableRef


class QualityConfig(BaseModel):
    """Post-run validation, its result tables and its reports."""

    model_config = FROZEN

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
