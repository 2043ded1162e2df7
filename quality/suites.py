"""The expectation suites, declared as code.

Two kinds of checks exist:

* the **target suite**, a Great Expectations suite run against a snapshot of the target table:
  every schema column is present, the dedup key is not null, required fields are not null, no
  ``event_time`` lies further in the future than ``quality.max_future_skew``, and what the write
  mode asks (:meth:`pipelines.sink.modes.base.WriteMode.expectations`): the key unique (also
  per date partition) for insert-only and upsert, and for upsert the ``_deleted`` flag present
  and never null;
* the **quarantine share** of a run, computed from the run's own counts (it is not a property of
  the target table): ``quarantined / records_in <= quality.max_quarantine_ratio``;
* **lag and staleness**, when ``quality.max_lag_records`` / ``quality.max_staleness`` are set:
  what Kafka holds past the target's newest commit, asked of Kafka at validation time (so a
  stopped pipeline with a backlog fails them), and the age of the newest Kafka timestamp
  inserted while records wait.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import great_expectations as gx
from great_expectations.expectations.core.expect_column_to_exist import ExpectColumnToExist
from great_expectations.expectations.core.expect_column_values_to_be_between import (
    ExpectColumnValuesToBeBetween,
)
from great_expectations.expectations.core.expect_column_values_to_be_unique import (
    ExpectColumnValuesToBeUnique,
)
from great_expectations.expectations.core.expect_column_values_to_not_be_null import (
    ExpectColumnValuesToNotBeNull,
)
from great_expectations.expectations.core.expect_compound_columns_to_be_unique import (
    ExpectCompoundColumnsToBeUnique,
)
from great_expectations.expectations.expectation import Expectation

from pipelines.config.model import PipelineConfig
from pipelines.ledger.lag import Lag
from pipelines.sink.metrics import RunResult
from pipelines.sink.modes.choice import mode_for
from quality.model import ExpectationOutcome
from schemas import EventSchema

#: The expectation name of the quarantine-share check (it is computed, not run by GX).
QUARANTINE_EXPECTATION = "expect_quarantine_ratio_below_threshold"

#: The expectation names of the lag and staleness checks (computed, not run by GX).
LAG_EXPECTATION = "expect_kafka_lag_within_threshold"
STALENESS_EXPECTATION = "expect_ingestion_not_stale"

#: The column that holds each row's partition date; uniqueness is also checked per partition.
DATE_COLUMN = "event_date"


def suite_name(config: PipelineConfig) -> str:
    """The name of a pipeline's target suite (also the Data Docs page title)."""
    return f"{config.name}.target"


def target_suite(
    config: PipelineConfig, schema: EventSchema | None = None, now: datetime | None = None
) -> gx.ExpectationSuite:
    """Build the expectation suite for a pipeline's target table.

    Args:
        config: the pipeline configuration (dedup key, partitioning, future-skew bound).
        schema: the event schema; defaults to the config's (``config.event_schema()``).
        now: the reference time for the future-skew bound (UTC); defaults to the current time.

    Returns:
        A new, unsaved suite.
    """
    schema = schema or config.event_schema()
    now = now or datetime.now(UTC)
    keys = list(config.target.dedup_keys)
    latest_allowed = now + timedelta(seconds=config.quality.max_future_skew)
    wanted = mode_for(config).expectations(schema)
    expectations: list[Expectation] = [
        ExpectColumnToExist(column=column) for column in schema.target_schema().fieldNames()
    ]
    expectations += [ExpectColumnValuesToBeUnique(column=columns[0]) if len(columns) == 1
                     else ExpectCompoundColumnsToBeUnique(column_list=list(columns))
                     for columns in wanted.unique]
    expectations += [ExpectColumnToExist(column=column) for column in wanted.exists]
    not_null = [*keys, *(f.name for f in schema.fields if f.required and f.name not in keys)]
    not_null += [c for c in wanted.not_null if c not in not_null]
    expectations.extend(ExpectColumnValuesToNotBeNull(column=column) for column in not_null)
    expectations.append(
        ExpectColumnValuesToBeBetween(
            column=schema.time_column,
            max_value=latest_allowed.replace(tzinfo=None),
            meta={"notes": f"{schema.time_column} must not be later than validation time + "
                           f"{config.quality.max_future_skew:g}s (UTC)"},
        )
    )
    # Built unbound (no context yet); gx_runner adds it to an ephemeral context.
    return gx.ExpectationSuite(name=suite_name(config), expectations=expectations)


def quarantine_outcome(records_in: int, quarantined: int, max_ratio: float) -> ExpectationOutcome:
    """Check that the quarantined share of a run's records stays within ``max_ratio``.

    A run that read nothing passes (its ratio is 0).

    Args:
        records_in: records the run read (replays excluded).
        quarantined: records the run sent to quarantine.
        max_ratio: the highest accepted ``quarantined / records_in``.

    Returns:
        An outcome named :data:`QUARANTINE_EXPECTATION`; ``unexpected_count`` is the number of
        quarantined records when the check fails, else 0.
    """
    ratio = quarantined / records_in if records_in > 0 else 0.0
    success = ratio <= max_ratio
    return ExpectationOutcome(
        expectation=QUARANTINE_EXPECTATION,
        column=None,
        success=success,
        observed_value=(f"{quarantined}/{records_in} quarantined = {ratio:.4%} "
                        f"(max {max_ratio:.4%})"),
        unexpected_count=0 if success else quarantined,
    )


def run_quarantine_outcome(run: RunResult, config: PipelineConfig) -> ExpectationOutcome:
    """The quarantine-share check for one run, against the pipeline's configured threshold.

    Args:
        run: the run's batches (replayed batches are not counted).
        config: the pipeline configuration (``quality.max_quarantine_ratio``).

    Returns:
        The outcome of :func:`quarantine_outcome` for the run's counts.
    """
    return quarantine_outcome(run.records_in, run.quarantined, config.quality.max_quarantine_ratio)


def lag_outcome(lag: Lag, max_records: int) -> ExpectationOutcome:
    """Check that Kafka holds at most ``max_records`` records the target has not.

    An unknown lag (Kafka unreachable) fails: a stopped pipeline must not pass for lack of an
    answer. ``unexpected_count`` is the lag when the check fails.
    """
    if lag.records is None:
        return ExpectationOutcome(LAG_EXPECTATION, None, False,
                                  f"lag {lag.describe()} (max {max_records} records)")
    success = lag.records <= max_records
    return ExpectationOutcome(LAG_EXPECTATION, None, success,
                              f"lag {lag.describe()} (max {max_records} records)",
                              unexpected_count=0 if success else lag.records)


def staleness_outcome(lag: Lag, newest_kafka: datetime | None, now: datetime,
                      max_seconds: float) -> ExpectationOutcome:
    """Check that no record has waited in Kafka longer than ``max_seconds`` past the newest one
    inserted: ``now - newest Kafka timestamp inserted <= max_seconds`` unless nothing waits.

    A pipeline with nothing to read (lag 0) passes however old its data: the topic is quiet.
    ``unexpected_count`` is the lag when the check fails (0 if unknown).
    """
    limit = f"(max {max_seconds:g}s)"
    if lag.records == 0:
        return ExpectationOutcome(STALENESS_EXPECTATION, None, True,
                                  f"caught up: Kafka holds no unread record {limit}")
    waiting = lag.records or 0
    if newest_kafka is None:
        return ExpectationOutcome(STALENESS_EXPECTATION, None, False,
                                  f"nothing inserted yet; lag {lag.describe()} {limit}",
                                  unexpected_count=waiting)
    age = (now - newest_kafka).total_seconds()
    success = age <= max_seconds
    return ExpectationOutcome(
        STALENESS_EXPECTATION, None, success,
        f"staleness {age:.0f}s: newest Kafka timestamp inserted {newest_kafka:%Y-%m-%d %H:%M:%S} "
        f"UTC; lag {lag.describe()} {limit}", unexpected_count=0 if success else waiting)
