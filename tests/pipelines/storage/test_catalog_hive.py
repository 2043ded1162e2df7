"""A pipeline on catalog tables end to end, on a catalog that persists from one process to the
next: Spark's Hive metastore on embedded Derby (pyspark's own jars), set through the config's
``spark.conf``. The config is the one the Databricks bundle deploys: a user's config placed by
``pipelines/databricks/widgets.py`` (``place``) in ``spark_catalog.bronze`` and a Volume, whose
``/Volumes/...`` folders ``DELTASINK_VOLUMES_ROOT`` maps under a local folder. Each step is a
``deltasink`` process started from another folder; embedded Derby is opened by one at a time.

One scenario for the module: the schema made first; a run SIGKILLed inside Delta's CREATE of the
target (after Delta's first commit, before the metastore registers the name: the leftover a user
met, which failed every later run); a rerun SIGKILLed after the target commit of batch 1; a rerun
with validation. Then ``status``, ``rewind`` and a planted duplicate that ``validate`` fails
with exit 3. All of it runs in make chaos (231 s of make test's time on 2026-11-28's machine).
"""

from __future__ import annotations

import json
import signal
import subprocess
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from pyspark.sql import SparkSession

from pipelines.config import env
from pipelines.config.loader import load_config
from pipelines.databricks.widgets import build_config, place
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import ProduceSummary, produce_events
from tests.support import runner
from tests.support.hive import CATALOG, SCHEMA, VOLUME, hive_conf, make_schema

#: The whole scenario is a kill profile of six cold processes: make chaos. make test keeps the
#: same creation rules in process (test_catalog.py) and the preflight's (test_preflight.py).
pytestmark = [pytest.mark.slow, pytest.mark.chaos]

@dataclass
class Scenario:
    """What the module's processes did."""

    root: Path
    config: Path
    raw: dict[str, Any]
    env: dict[str, str]
    sent: ProduceSummary
    killed_in_create: subprocess.CompletedProcess[str]
    leftover: list[str]
    killed_in_stream: subprocess.CompletedProcess[str]
    resumed: subprocess.CompletedProcess[str]
    cwd: Path

    def location(self, table: str) -> Path:
        return self.root / "warehouse" / f"{SCHEMA}.db" / table


def verdict(spark: SparkSession, scenario: Scenario) -> dict[str, int]:
    """The exactly-once counts (tests/support/checker.py), read at the tables' locations."""
    ids = Counter(r[0] for r in spark.read.format("delta").load(
        str(scenario.location("orders"))).select("event_id").collect())
    spots = Counter(tuple(r) for r in spark.read.format("delta").load(
        str(scenario.location("orders_quarantine"))).select(
        "kafka_topic", "kafka_partition", "kafka_offset").collect())
    expected, wanted = set(scenario.sent.event_ids), sum(scenario.sent.poison.values())
    return {"lost": len(expected - ids.keys()),
            "duplicated": sum(1 for n in ids.values() if n > 1),
            "unexpected": len(ids.keys() - expected),
            "quarantine_missing_or_extra": abs(wanted - len(spots)),
            "quarantine_duplicated": sum(1 for n in spots.values() if n > 1)}


@pytest.fixture(scope="module")
def scenario(broker: EmbeddedBroker, tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    root = tmp_path_factory.mktemp("hive-catalog")
    cwd = tmp_path_factory.mktemp("hive-catalog-cwd")
    topic = f"hive-{uuid.uuid4().hex[:8]}"
    # ~990 records at 400 a batch: three batches, so the kill after batch 1 leaves one to come.
    sent = produce_events(broker.bootstrap_servers, topic, 900, duplicate_rate=0.1,
                          poison_rate=0.01, seed=44)
    user = {"name": "orders", "schema": "events_v1",
            "source": {"bootstrap_servers": broker.bootstrap_servers, "topics": [topic],
                       "max_records_per_batch": 400},
            "target": {"path": "lake/orders"}, "checkpoint": "lake/_checkpoints/orders",
            "spark": {"conf": hive_conf(root)}}
    environ = {**runner.cold_env(None), env.VOLUMES_ROOT: str(root / "Volumes")}
    raw = place(user, CATALOG, SCHEMA, VOLUME, volumes_root=str(root / "Volumes"))
    config = root / "orders.yml"
    config.write_text(yaml.safe_dump(raw))
    make_schema(root)
    killed_in_create = runner.run(config, fault="kill_at_registration=orders", env=environ,
                                  cwd=cwd)
    log = root / "warehouse" / f"{SCHEMA}.db" / "orders" / "_delta_log"
    leftover = sorted(p.name for p in log.iterdir()) if log.is_dir() else []
    killed_in_stream = runner.run(config, fault="after_target_commit@1", env=environ, cwd=cwd)
    resumed = runner.run(config, validate=True, env=environ, cwd=cwd)
    return Scenario(root, config, raw, environ, sent, killed_in_create, leftover,
                    killed_in_stream, resumed, cwd)


def test_the_bundle_config_names_four_catalog_tables_and_local_volume_folders(
        scenario: Scenario) -> None:
    cfg = load_config(scenario.config, environ={})
    prefix = f"{CATALOG}.{SCHEMA}."
    assert cfg.target.table == prefix + "orders"
    assert cfg.target.quarantine_ref.name == prefix + "orders_quarantine"
    assert cfg.quality.results_ref.name == prefix + "deltasink_quality_results"
    assert cfg.quality.metrics_ref.name == prefix + "deltasink_run_metrics"
    volume = scenario.root / "Volumes" / CATALOG / SCHEMA / VOLUME
    assert cfg.checkpoint == str(volume / "checkpoints" / "orders")
    assert (volume / "checkpoints" / "orders" / "commits").is_dir()


def test_build_config_places_the_pipeline_as_the_test_ran_it(scenario: Scenario) -> None:
    """The notebook's build_config, given the bundle's widgets, builds the config that ran."""
    user = scenario.root / "user.yml"
    user.write_text(yaml.safe_dump({**scenario.raw, "target": {"path": "lake/orders"},
                                    "checkpoint": "lake/_checkpoints/orders"}))
    built = build_config({"config": str(user), "catalog": CATALOG, "schema": SCHEMA,
                          "volume": VOLUME}, environ=scenario.env)
    ran = load_config(scenario.config, environ={})
    assert (built.target, built.checkpoint, built.quality) == \
        (ran.target, ran.checkpoint, ran.quality)


def test_the_first_run_was_killed_inside_deltas_create_of_the_target(scenario: Scenario) -> None:
    done = scenario.killed_in_create
    assert done.returncode == -signal.SIGKILL, done.stderr[-3000:]
    assert "injected fault at kill_at_registration" in done.stderr
    # What a user met: Delta's first commit at the managed location, and no name for it.
    assert "00000000000000000000.json" in scenario.leftover, scenario.leftover


def test_the_next_run_rode_out_the_leftover_and_was_killed_after_batch_1(
        scenario: Scenario) -> None:
    done = scenario.killed_in_stream
    assert done.returncode == -signal.SIGKILL, done.stdout[-2000:] + done.stderr[-3000:]
    assert "injected fault at after_target_commit (batch 1)" in done.stderr
    assert "DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION" not in done.stderr
    said = done.stdout + done.stderr
    assert f"table {CATALOG}.{SCHEMA}.orders: a killed creation had left" in said, said[-3000:]


def test_the_rerun_skips_the_committed_batch_and_passes_validation(scenario: Scenario) -> None:
    done = scenario.resumed
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "(replay: already committed, skipped)" in done.stdout, done.stdout[-3000:]
    assert "quality PASSED" in done.stdout, done.stdout[-3000:]


def test_every_event_landed_once_and_the_quarantine_is_exact(
        spark: SparkSession, scenario: Scenario) -> None:
    got = verdict(spark, scenario)
    assert not any(got.values()), got


@pytest.fixture(scope="module")
def operations(spark: SparkSession, scenario: Scenario) -> dict[str, Any]:
    """``status``; ``rewind`` one version back; a planted duplicate and ``validate --full``."""
    status = runner.deltasink("status", "--config", str(scenario.config), "--json",
                              env=scenario.env, cwd=scenario.cwd)
    target = scenario.location("orders")
    before = spark.sql(f"DESCRIBE HISTORY delta.`{target}`").count()
    rewind = runner.deltasink("rewind", "--config", str(scenario.config), "--to-version",
                              str(before - 2), env=scenario.env, cwd=scenario.cwd)
    after = spark.sql(f"DESCRIBE HISTORY delta.`{target}`").first()
    spark.read.format("delta").load(str(target)).limit(1).write.format("delta") \
        .mode("append").save(str(target))
    validate = runner.deltasink("validate", "--config", str(scenario.config), "--full",
                                env=scenario.env, cwd=scenario.cwd)
    return {"status": status, "rewind": rewind, "operation": after["operation"] if after else None,
            "validate": validate}


@pytest.mark.chaos
def test_status_reads_the_catalog_pipeline_in_sync(
        operations: dict[str, Any], scenario: Scenario) -> None:
    done = operations["status"]
    assert done.returncode == 0, done.stderr[-3000:]
    state = json.loads(done.stdout)
    assert state["in_sync"], state
    assert state["target_rows"] == len(scenario.sent.event_ids)
    assert state["quarantine_rows"] == sum(scenario.sent.poison.values())


@pytest.mark.chaos
def test_rewind_restores_the_catalog_target(operations: dict[str, Any]) -> None:
    done = operations["rewind"]
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert operations["operation"] == "RESTORE"


@pytest.mark.chaos
def test_a_planted_duplicate_fails_validate_with_exit_3(operations: dict[str, Any]) -> None:
    done = operations["validate"]
    assert done.returncode == 3, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Traceback" not in done.stderr
