"""The demo's last step: one pipeline through Spark's own Spark Connect server.

The ``deltasink`` process is then a Spark Connect client with no JVM of its own (as on Databricks
serverless and standard access mode): it reaches Spark, Delta and the Kafka source only through
the server at ``spark.remote``, and its ``foreachBatch`` body runs in a Python worker the server
starts. The step runs it as the JSON pipeline ran: crashed after a Delta commit, then again.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import yaml

from pipelines.runtime.connect_server import ConnectServer

TOPIC, COUNT, DUPLICATES, POISON = "orders_connect", 20_000, 0.10, 0.01


def write_connect_config(folder: Path, bootstrap: str, remote: str) -> Path:
    """The Connect pipeline's YAML, in ``folder`` beside the demo's others."""
    path = folder / "orders_connect.yml"
    path.write_text(yaml.safe_dump({
        "name": "orders_connect",
        "spark": {"remote": remote},
        "source": {"bootstrap_servers": bootstrap, "topics": [TOPIC],
                   "max_records_per_batch": 5_000},
        "schema": "events_v1",
        "target": {"path": "./orders_connect", "quarantine_path": "./orders_connect_quarantine"},
        "checkpoint": "./_checkpoints/orders_connect",
        "quality": {"docs_dir": "./_quality_connect/docs",
                    "results_path": "./_quality_connect/results",
                    "metrics_path": "./_quality_connect/run_metrics"},
    }, sort_keys=False))
    return path


def run_connect_step(folder: Path, bootstrap: str, cli: Callable[..., int]) -> int:
    """Start a Connect server, run the pipeline through it (a crash, then again), check it."""
    print("starting Spark's SparkConnectServer (pyspark's spark-submit) ...", flush=True)
    server = ConnectServer.start(folder / "_connect" / "server.log")
    print(f"Spark Connect server at {server.url} (log {server.log})")
    try:
        path = write_connect_config(folder, bootstrap, server.url)
        if cli("produce", "-c", str(path), "--count", str(COUNT), "--duplicate-rate",
               str(DUPLICATES), "--poison-rate", str(POISON)):
            return 1
        code = cli("run", "-c", str(path), "--no-validate", fault="after_target_commit@1")
        print(f"(the run was killed: exit {code}; under Connect the fault kills the server's "
              "batch worker after batch 1's Delta commit)")
        if cli("run", "-c", str(path)):
            return 1
        return _summarize(path)
    finally:
        server.stop()


def _summarize(path: Path) -> int:
    from pipelines.config.loader import load_config
    from pipelines.runtime.spark import get_spark

    config = load_config(path)
    spark = get_spark("deltasink-demo")
    target = config.target.ref.read(spark)
    rows = target.count()
    distinct = target.select(*config.target.dedup_keys).distinct().count()
    bad = config.target.quarantine_ref.read(spark).count()
    expected_bad = round(COUNT * POISON)
    print(f"\nconnect target rows:   {rows:>7}  (expected {COUNT})")
    print(f"duplicate event ids:   {rows - distinct:>7}  (expected 0)")
    print(f"connect quarantined:   {bad:>7}  (expected {expected_bad})")
    ok = rows == distinct == COUNT and bad == expected_bad
    print("\nRESULT: " + ("through Spark Connect too, every event landed exactly once"
                          if ok else "MISMATCH (see above)"))
    return 0 if ok else 1
