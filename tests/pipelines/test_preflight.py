"""Preflight: every location a run writes is checked before the first table is created."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

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
