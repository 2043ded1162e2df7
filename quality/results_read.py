"""Reading the quality bookkeeping tables back: verdicts, run metrics and what they say.

The tables, their schemas and their writes are in ``quality/results.py``. A missing table reads
as "nothing recorded yet", never as an error: a pipeline that has not run has no bookkeeping.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from pipelines.config.model import PipelineConfig
from pipelines.storage.tables import TableRef


def newest_inserted(spark: SparkSession, config: PipelineConfig
                    ) -> tuple[datetime | None, datetime | None]:
    """The newest ``event_time`` and Kafka timestamp this pipeline's batches inserted (UTC).

    Read from the run-metrics table (a few rows per run), not from the target. ``(None, None)``
    when nothing is recorded, or the table predates these columns.
    """
    df = _read(spark, config.quality.metrics_ref)
    if df is None or "newest_kafka_timestamp" not in df.columns:
        return None, None
    row = df.where(df.pipeline == config.name).agg(
        F.max(F.unix_micros("newest_event_time")).alias("e"),
        F.max(F.unix_micros("newest_kafka_timestamp")).alias("k")).first()
    if row is None:
        return None, None
    return tuple(None if v is None else datetime.fromtimestamp(v / 1e6, UTC)  # type: ignore[return-value]
                 for v in (row["e"], row["k"]))


def last_stream_lag(spark: SparkSession, config: PipelineConfig
                    ) -> tuple[int, datetime] | None:
    """The lag the stream saw at this pipeline's newest batch with a known lag, and when that
    batch started (UTC); None when no batch recorded one."""
    df = _read(spark, config.quality.metrics_ref)
    if df is None or "lag_records" not in df.columns:
        return None
    row = (df.where((df.pipeline == config.name) & df.lag_records.isNotNull())
           .orderBy(F.col("started_at").desc()).select("lag_records", "started_at").first())
    if row is None:
        return None
    started = row["started_at"]
    when = started.astimezone(UTC) if started.tzinfo else started.replace(
        tzinfo=datetime.now().astimezone().tzinfo).astimezone(UTC)
    return int(row["lag_records"]), when


def _read(spark: SparkSession, ref: TableRef) -> DataFrame | None:
    return ref.read(spark) if ref.exists(spark) else None


def read_validation_results(spark: SparkSession, config: PipelineConfig) -> list[Row]:
    """All recorded verdicts of this pipeline, oldest first (empty if the table is missing)."""
    df = _read(spark, config.quality.results_ref)
    if df is None:
        return []
    return df.where(df.pipeline == config.name).orderBy("validated_at", "expectation").collect()


def read_run_metrics(spark: SparkSession, config: PipelineConfig) -> list[Row]:
    """All recorded batches of this pipeline, oldest first (empty if the table is missing)."""
    df = _read(spark, config.quality.metrics_ref)
    if df is None:
        return []
    return df.where(df.pipeline == config.name).orderBy("started_at", "batch_id").collect()


def latest_run_dates(spark: SparkSession, config: PipelineConfig) -> tuple[str, list[date]] | None:
    """The newest recorded run of this pipeline and the ``event_date`` partitions it touched.

    Returns:
        ``(run_id, dates)``, or None when no run is recorded yet.
    """
    rows = read_run_metrics(spark, config)
    if not rows:
        return None
    run_id = str(rows[-1]["run_id"])
    dates = {date.fromisoformat(d) for r in rows if r["run_id"] == run_id
             for d in (r["event_dates"] or "").split(",") if d}
    return run_id, sorted(dates)
