"""Catalog tables through Spark Connect: the four tables named in the server's own catalog.

The shared Spark Connect server (the ``connect_server`` fixture) keeps Spark's default in-memory
catalog, which lives as long as the server: a schema made through one client process is there
for the next. A Connect client makes the schema, one ``deltasink run`` (a Connect client,
``spark.remote``) lands a topic in ``spark_catalog.<schema>.*``, and a Connect client counts what
landed. The catalog that persists across servers (a Hive metastore) is in test_catalog_hive.py.
"""

from __future__ import annotations

import json
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

pytestmark = pytest.mark.slow

_CLIENT = """
import json, sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
print(json.dumps([list(spark.sql(q).first() or []) for q in sys.argv[2:]]))
"""


def connect_sql(url: str, *queries: str) -> list[list[object]]:
    """Each query's first row, from a Spark Connect client process of its own."""
    done = subprocess.run([sys.executable, "-c", _CLIENT, url, *queries], capture_output=True,
                          text=True, timeout=300, check=True, env=runner.cold_env(None))
    found: list[list[object]] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


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
