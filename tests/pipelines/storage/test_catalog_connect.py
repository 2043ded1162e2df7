"""Catalog tables through Spark Connect: the four tables named in the server's own catalog.

The shared Spark Connect server (the ``connect_server`` fixture) keeps Spark's default in-memory
catalog, which lives as long as the server: a schema made through one client process is there
for the next. A Connect client makes the schema, one ``deltasink run`` (a Connect client,
``spark.remote``) lands a topic in ``spark_catalog.<schema>.*``, and a Connect client counts what
landed. The catalog that persists across servers (a Hive metastore) is in test_catalog_hive.py.

A kill inside Delta's ``CREATE`` cannot be injected through Connect (the CREATE runs in the
server, which the test-only kill would take down, with every other test's session): its leftover
is built as Delta leaves it, through Connect (a pipeline's tables created under other names, the
target's folder copied to the default location of the name under test, which no name
registers), and the next ``deltasink run`` through Connect rides it out.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from pipelines.kafka.broker import EmbeddedBroker
from pipelines.kafka.produce import produce_events
from pipelines.runtime.connect_server import ConnectServer
from tests.support import runner
from tests.support.configs import write_config
from tests.support.connect_client import connect_locations, connect_sql

pytestmark = pytest.mark.slow

_CREATE = """
import sys
from pyspark.sql import SparkSession
from pipelines.config.loader import load_config
from pipelines.sink.tables import ensure_sink_tables
spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
config = load_config(sys.argv[2], environ={})
ensure_sink_tables(spark, config, config.event_schema())
"""


@pytest.mark.chaos  # about a minute on a quiet machine: make test is over its budget already
def test_a_run_on_catalog_names_through_spark_connect_lands_every_event_once(
        connect_server: ConnectServer, broker: EmbeddedBroker, lake: Path) -> None:
    schema = f"cat_{uuid.uuid4().hex[:8]}"
    prefix = f"spark_catalog.{schema}"
    topic = f"connect-cat-{uuid.uuid4().hex[:8]}"
    sent = produce_events(broker.bootstrap_servers, topic, 300, duplicate_rate=0.1,
                          poison_rate=0.01, seed=45)
    path = write_config(
        lake, broker.bootstrap_servers, topic, spark={"remote": connect_server.url},
        source={"max_records_per_batch": 150},
        target={"path": None, "quarantine_path": None, "table": f"{prefix}.orders",
                "quarantine_table": f"{prefix}.orders_quarantine"},
        quality={"results_path": None, "metrics_path": None,
                 "results_table": f"{prefix}.deltasink_quality_results",
                 "metrics_table": f"{prefix}.deltasink_run_metrics"})
    connect_sql(connect_server.url, f"CREATE SCHEMA {prefix}")

    done = runner.run(path, validate=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "quality PASSED" in done.stdout, done.stdout[-3000:]

    (rows, ids), (quarantined, spots), (metrics,), (results,) = connect_sql(
        connect_server.url,
        f"SELECT count(*), count(DISTINCT event_id) FROM {prefix}.orders",
        f"SELECT count(*), count(DISTINCT kafka_topic, kafka_partition, kafka_offset) "
        f"FROM {prefix}.orders_quarantine",
        f"SELECT count(*) FROM {prefix}.deltasink_run_metrics",
        f"SELECT count(*) FROM {prefix}.deltasink_quality_results")
    assert rows == ids == len(sent.event_ids)
    assert quarantined == spots == sum(sent.poison.values())
    assert metrics and results, (metrics, results)  # both bookkeeping tables written by name


def catalog_config(lake: Path, bootstrap: str, topic: str, url: str, prefix: str,
                   table: str, name: str = "orders_bronze") -> Path:
    """A Connect pipeline whose four tables are names under ``prefix``."""
    return write_config(
        lake, bootstrap, topic, name, spark={"remote": url},
        source={"max_records_per_batch": 150},
        target={"path": None, "quarantine_path": None, "table": f"{prefix}.{table}",
                "quarantine_table": f"{prefix}.{table}_quarantine"},
        quality={"results_path": None, "metrics_path": None,
                 "results_table": f"{prefix}.deltasink_quality_results",
                 "metrics_table": f"{prefix}.deltasink_run_metrics"})


@pytest.mark.chaos
def test_a_killed_creation_of_the_target_is_ridden_out_through_spark_connect(
        connect_server: ConnectServer, broker: EmbeddedBroker, lake: Path) -> None:
    schema = f"cat_{uuid.uuid4().hex[:8]}"
    prefix = f"spark_catalog.{schema}"
    topic = f"connect-kill-{uuid.uuid4().hex[:8]}"
    sent = produce_events(broker.bootstrap_servers, topic, 300, duplicate_rate=0.1,
                          poison_rate=0.01, seed=46)
    connect_sql(connect_server.url, f"CREATE SCHEMA {prefix}")
    made = catalog_config(lake, broker.bootstrap_servers, topic, connect_server.url,
                          prefix, "made", name="made")
    subprocess.run([sys.executable, "-c", _CREATE, connect_server.url, str(made)], check=True,
                   capture_output=True, timeout=300, env=runner.cold_env(None))
    made_at, schema_at = connect_locations(connect_server.url, f"{prefix}.made", prefix)
    where = Path(schema_at.removeprefix("file:")) / "orders"
    shutil.copytree(Path(made_at.removeprefix("file:")), where)  # no name registers it

    path = catalog_config(lake, broker.bootstrap_servers, topic, connect_server.url, prefix,
                          "orders")
    done = runner.run(path, validate=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    said = done.stdout + done.stderr
    assert f"table {prefix}.orders: a killed creation had left" in said, said[-3000:]
    assert "quality PASSED" in done.stdout, done.stdout[-3000:]
    (rows, ids), (quarantined, spots) = connect_sql(
        connect_server.url,
        f"SELECT count(*), count(DISTINCT event_id) FROM {prefix}.orders",
        f"SELECT count(*), count(DISTINCT kafka_topic, kafka_partition, kafka_offset) "
        f"FROM {prefix}.orders_quarantine")
    assert rows == ids == len(sent.event_ids)
    assert quarantined == spots == sum(sent.poison.values())
    assert connect_locations(connect_server.url, f"{prefix}.orders", prefix)[0] \
        .removeprefix("file:").rstrip("/") == str(where)  # registered where it lay
