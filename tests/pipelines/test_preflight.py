"""Preflight: every location a run writes is checked before the first table is created."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from pipelines import preflight
from pipelines.errors import ConfigError
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.topics import ensure_topic
from pipelines.run import run_pipeline
from tests.support.configs import make_config


def blocked(lake: Path) -> Path:
    """A regular file: nothing can be created below it."""
    file = lake / "a-file"
    file.write_text("not a folder")
    return file / "below"


def not_delta(lake: Path) -> Path:
    """A folder that holds files but is no Delta table."""
    folder = lake / "parquet"
    folder.mkdir()
    (folder / "part-0.parquet").write_bytes(b"PAR1")
    return folder


@pytest.mark.parametrize(("setting", "make", "message"), [
    ({"quality": {"results_path": blocked}}, None, "quality.results_path {} cannot be created"),
    ({"quality": {"metrics_path": blocked}}, None, "quality.metrics_path {} cannot be created"),
    ({"quality": {"docs_dir": blocked}}, None, "quality.docs_dir {} cannot be created"),
    ({"target": {"quarantine_path": not_delta}}, None,
     "target.quarantine_path {} is a folder with files but not a Delta table"),
    ({"quality": {"metrics_path": "same"}}, "same",
     "quality.results_path and quality.metrics_path are the same location"),
    ({"quality": {"results_table": "no_such_schema.results"}}, None,
     "quality.results_table no_such_schema.results: schema no_such_schema does not exist"),
], ids=["results-below-file", "metrics-below-file", "docs-below-file", "quarantine-not-delta",
        "results-equals-metrics", "results-schema-missing"])
def test_a_bad_location_fails_before_anything_is_created(
        spark: SparkSession, broker: EmbeddedBroker, lake: Path, setting: dict[str, Any],
        make: str | None, message: str) -> None:
    topic = f"preflight-{uuid.uuid4().hex[:8]}"
    ensure_topic(broker.bootstrap_servers, topic, 1)
    section, values = next(iter(setting.items()))
    key, value = next(iter(values.items()))
    if callable(value):
        value = str(value(lake))
    elif make == "same":
        value = str(lake / "_quality" / "results")
    cfg = make_config(lake, broker.bootstrap_servers, topic, **{section: {key: value}})
    before = sorted(p.name for p in lake.iterdir())
    with pytest.raises(ConfigError) as err:
        run_pipeline(spark, cfg, validate=False, progress=lambda _l: None)
    assert message.format(value) in str(err.value)
    assert sorted(p.name for p in lake.iterdir()) == before, "a failed preflight created files"


@pytest.mark.parametrize(("make", "message"), [
    ("CREATE VIEW {name} AS SELECT 1 AS a", "target.table {name} is a view, not a table"),
    ("CREATE TABLE {name} (a INT) USING parquet",
     "target.table {name} is a parquet table, not Delta"),
    (None, "target.table nowhere_cat.default.{leaf}: catalog nowhere_cat is not known"),
    (None, "target.table no_such_schema.{leaf}: schema no_such_schema does not exist"),
], ids=["view", "parquet-table", "unknown-catalog", "missing-schema"])
def test_a_catalog_name_that_cannot_be_the_target_fails_in_one_line(
        spark: SparkSession, lake: Path, make: str | None, message: str) -> None:
    leaf = f"pf_{uuid.uuid4().hex[:8]}"
    name = f"default.{leaf}"
    if "catalog" in message:
        name = f"nowhere_cat.default.{leaf}"
    elif "schema no_such" in message:
        name = f"no_such_schema.{leaf}"
    if make:
        spark.sql(make.format(name=name))
    cfg = make_config(lake, "localhost:9", "t", target={"table": name, "path": None,
                                                        "quarantine_path": None,
                                                        "quarantine_table": f"{name}_q"})
    with pytest.raises(ConfigError) as err:
        preflight.check_locations(spark, cfg)
    assert str(err.value).startswith(message.format(name=name, leaf=leaf))
    assert "\n" not in str(err.value)
    assert not spark.catalog.tableExists(f"default.{leaf}_q"), "a failed preflight created one"
