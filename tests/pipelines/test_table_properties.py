"""``target.properties`` on real Delta tables: set at creation, set on an existing table in one
commit of its own (once), and refused, changing nothing, where Delta or the sink cannot have it."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from pipelines.config.table_properties import BOOL, COUNT, INDEXED, INTERVAL, PROPERTIES
from pipelines.errors import ConfigError
from pipelines.sink.properties import table_properties
from pipelines.sink.tables import QUARANTINE_SCHEMA, ensure_sink_tables
from pipelines.storage.tables import TableRef
from tests.support.configs import make_config

BOOTSTRAP = "127.0.0.1:9"  # never dialled: nothing here reads Kafka
SAMPLES = {BOOL: "false", INTERVAL: "interval 8 days", COUNT: "12", INDEXED: "32"}


def located(where: str) -> dict[str, Any]:
    """The target keys of a path pipeline (the default), or of one on catalog names."""
    if where == "path":
        return {}
    name = f"default.props_{uuid.uuid4().hex[:8]}"
    return {"path": None, "quarantine_path": None, "table": name,
            "quarantine_table": f"{name}_quarantine"}


def test_every_property_deltasink_accepts_is_one_delta_4_0_accepts_at_creation(
        spark: SparkSession, lake: Path) -> None:
    """One CREATE TABLE with every accepted key: Delta knows each, and keeps each value."""
    wanted = {p.key: p.values[0] if isinstance(p.values, tuple) else
              SAMPLES.get(p.values, "kafka_topic") for p in PROPERTIES.values() if not p.refused}
    ref = TableRef(path=str(lake / "all"))
    ref.create_if_missing(spark, QUARANTINE_SCHEMA, (), wanted)
    have = table_properties(spark, ref)
    assert {k: have.get(k) for k in wanted} == wanted


@pytest.mark.parametrize("where", ["path", "catalog"])
def test_the_tables_are_created_with_their_properties(
        spark: SparkSession, lake: Path, where: str) -> None:
    cfg = make_config(lake, BOOTSTRAP, "t", target={
        **located(where), "properties": {"delta.enableChangeDataFeed": True, "team": "bronze"},
        "quarantine_properties": {"delta.logRetentionDuration": "interval 60 days"}})
    assert ensure_sink_tables(spark, cfg, cfg.event_schema()) == []  # nothing to change
    target, quarantine = cfg.target.ref, cfg.target.quarantine_ref
    assert {k: v for k, v in table_properties(spark, target).items()
            if k in ("delta.enableChangeDataFeed", "team")} == {
        "delta.enableChangeDataFeed": "true", "team": "bronze"}
    assert table_properties(spark, quarantine)["delta.logRetentionDuration"] == \
        "interval 60 days"
    assert [r[0] for r in target.history(spark).select("operation").collect()] == \
        ["CREATE TABLE"]  # set in the CREATE itself, no commit of their own


@pytest.mark.parametrize("where", ["path", "catalog"])
def test_an_existing_table_gets_changed_properties_in_one_commit_and_a_rerun_commits_nothing(
        spark: SparkSession, lake: Path, where: str) -> None:
    keys = located(where)
    plain = make_config(lake, BOOTSTRAP, "t", target=keys)
    ensure_sink_tables(spark, plain, plain.event_schema())
    cfg = make_config(lake, BOOTSTRAP, "t", target={**keys, "properties": {
        "delta.enableChangeDataFeed": True, "delta.logRetentionDuration": "30 days"}})
    target = cfg.target.ref

    notes = ensure_sink_tables(spark, cfg, cfg.event_schema())

    assert notes == [f"table {target.describe()}: set delta.enableChangeDataFeed=true (was "
                     "unset), delta.logRetentionDuration=30 days (was unset)"]
    operations = [r[0] for r in target.history(spark).select("operation").collect()]
    assert operations == ["SET TBLPROPERTIES", "CREATE TABLE"]
    assert table_properties(spark, target)["delta.enableChangeDataFeed"] == "true"
    # The same values in another spelling are the same: nothing to set, no commit.
    again = make_config(lake, BOOTSTRAP, "t", target={**keys, "properties": {
        "DELTA.enableChangeDataFeed": "TRUE", "delta.logRetentionDuration": "interval 4 weeks "
        "2 days"}})
    assert ensure_sink_tables(spark, again, again.event_schema()) == []
    assert target.history(spark).count() == 2
    # A property removed from the config stays on the table as it is.
    assert ensure_sink_tables(spark, plain, plain.event_schema()) == []
    assert table_properties(spark, target)["delta.enableChangeDataFeed"] == "true"
    assert target.history(spark).count() == 2


@pytest.mark.parametrize(("before", "properties", "mode", "expected"), [
    pytest.param({}, {"delta.columnMapping.mode": "id"}, {},
                 "target.properties: delta.columnMapping.mode is none on the table, and Delta "
                 "changes it in place only from none to name, not to id: keep none, or write to "
                 "a new target", id="column-mapping"),
    pytest.param({"delta.appendOnly": "true"}, {"delta.enableChangeDataFeed": True},
                 {"mode": "upsert", "sequence_by": "kafka", "dedup_window": "0d"},
                 "delta.appendOnly: true makes Delta refuse every UPDATE, and mode: upsert "
                 "replaces a key's row", id="append-only-set-behind-our-back"),
])
def test_a_property_the_table_cannot_take_is_refused_in_one_line_and_nothing_changes(
        spark: SparkSession, lake: Path, before: dict[str, str], properties: dict[str, Any],
        mode: dict[str, str], expected: str) -> None:
    plain = make_config(lake, BOOTSTRAP, "t")
    ensure_sink_tables(spark, plain, plain.event_schema())
    target = plain.target.ref
    for key, value in before.items():  # set outside deltasink, as an operator would
        spark.sql(f"ALTER TABLE {target.sql} SET TBLPROPERTIES ('{key}' = '{value}')")
    versions = target.history(spark).count()
    cfg = make_config(lake, BOOTSTRAP, "t", target={"properties": properties, **mode})

    with pytest.raises(ConfigError) as err:
        ensure_sink_tables(spark, cfg, cfg.event_schema())

    assert expected in str(err.value) and "\n" not in str(err.value), err.value
    assert target.history(spark).count() == versions
