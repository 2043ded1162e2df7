"""``deltasink demo``: the whole story on one machine, with the real CLI in real processes.

1. start the embedded Kafka broker;  2. produce events with duplicates, poison pills and events
   in a legacy producer's format, and show the lag;
3. run, crash on purpose right after a Delta commit, and run again: the lag drains to zero;
4. replay the producer (every event again, plus new ones) and run once more;
5. fix the schema (``events_v2`` reads the legacy format) and redrive the quarantine;
6. show that the table holds every event exactly once and quarantine holds the bad records;
7. an Avro topic next to the JSON one (:mod:`pipelines.ops.demo_avro`);
8. one pipeline through a Spark Connect server (:mod:`pipelines.ops.demo_connect`).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import yaml

from pipelines.config.loader import load_config
from pipelines.config.model import PipelineConfig
from pipelines.kafka.broker import EmbeddedBroker
from pipelines.ops.demo_avro import run_avro_step
from pipelines.ops.demo_connect import run_connect_step
from pipelines.runtime.ports import port_open
from pipelines.runtime.processes import run_in_own_session

COUNT, DUPLICATES, POISON, LEGACY = 50_000, 0.10, 0.01, 0.01


def _banner(text: str) -> None:
    print(f"\n=== {text} ===", flush=True)


def _cli(*args: str, fault: str | None = None) -> int:
    env = {k: v for k, v in os.environ.items() if k != "DELTASINK_FAULT"}
    if fault:
        env["DELTASINK_FAULT"] = fault
    command = [sys.executable, "-m", "pipelines.cli", *args]
    print("$ deltasink " + " ".join(args) + (f"   (with DELTASINK_FAULT={fault})" if fault else ""),
          flush=True)
    return run_in_own_session(command, env)  # a stop of the demo stops the step first


def write_demo_config(folder: Path, bootstrap: str, schema: str = "events_v1") -> Path:
    """The demo pipeline's YAML, written into ``folder`` (again, to change its schema)."""
    path = folder / "orders_bronze.yml"
    path.write_text(yaml.safe_dump({
        "name": "orders_bronze",
        "source": {"bootstrap_servers": bootstrap, "topics": ["orders"],
                   "max_records_per_batch": 20_000},
        "schema": schema,
        "target": {"path": "./orders", "quarantine_path": "./orders_quarantine"},
        "checkpoint": "./_checkpoints/orders_bronze",
        "quality": {"docs_dir": "./_quality/docs", "results_path": "./_quality/results",
                    "metrics_path": "./_quality/run_metrics",
                    # 1% poison pills + 1% legacy events until the schema fix: allow 3%
                    "max_quarantine_ratio": 0.03},
    }, sort_keys=False))
    return path


def run_demo(folder: Path = Path("lake/demo"), port: int = 9092) -> int:
    """Run the demo in ``folder`` (recreated). Returns the process exit code."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    while port_open(port) or port_open(port + 1):
        port += 2
    _banner("1. start the embedded Kafka broker")
    broker = EmbeddedBroker.at(folder / "_broker", port).start()
    print(f"kafka at {broker.bootstrap_servers} (data in {broker.data_dir})")
    try:
        config_path = write_demo_config(folder.resolve(), broker.bootstrap_servers)
        config = load_config(config_path)
        _banner("2. produce 50,000 events + 10% duplicate copies + 1% poison pills + 500 "
                "events in a legacy producer's format")
        common = ("--count", str(COUNT), "--duplicate-rate", str(DUPLICATES))
        if _cli("produce", "-c", str(config_path), *common, "--poison-rate", str(POISON),
                "--legacy-rate", str(LEGACY)):
            return 1
        _cli("status", "-c", str(config_path))  # the lag: every record sent, nothing landed
        _banner("3a. run, and crash on purpose after batch 1's Delta commit")
        code = _cli("run", "-c", str(config_path), "--no-validate",
                    fault="after_target_commit@1")
        print(f"(the run was killed: exit {code}; the checkpoint never recorded batch 1)")
        _cli("status", "-c", str(config_path))  # the lag: two batches' worth drained
        _banner("3b. run again: batch 1 is replayed as a no-op, then the rest lands")
        if _cli("run", "-c", str(config_path)):
            return 1
        _cli("status", "-c", str(config_path))  # the lag: zero
        _banner("4. the producer replays everything, plus 5,000 new events; run again")
        if _cli("produce", "-c", str(config_path), "--count", str(COUNT + 5000)):
            return 1
        if _cli("run", "-c", str(config_path)):
            return 1
        _banner("5. fix the schema: events_v2 reads the legacy format; redrive the quarantine")
        _cli("quarantine", "list", "-c", str(config_path))
        write_demo_config(folder.resolve(), broker.bootstrap_servers, schema="events_v2")
        if _cli("quarantine", "redrive", "-c", str(config_path)):
            return 1
        _cli("quarantine", "list", "-c", str(config_path))
        if _cli("validate", "-c", str(config_path), "--full"):  # a redrive lands in any date
            return 1
        _banner("6. what landed")
        _cli("status", "-c", str(config_path))
        _cli("report", "-c", str(config_path))
        code = summarize(config)
        _banner("7. an Avro topic next to the JSON one: Confluent wire format, from_avro, an "
                ".avsc writer schema; truncated records and JSON values are quarantined")
        code = max(code, run_avro_step(folder.resolve(), broker.bootstrap_servers, _cli))
        _banner("8. the same through Spark Connect: a client with no JVM of its own (as on "
                "Databricks serverless), against Spark's own SparkConnectServer")
        return max(code, run_connect_step(folder.resolve(), broker.bootstrap_servers, _cli))
    finally:
        broker.stop()


def summarize(config: PipelineConfig) -> int:
    """Print the exactly-once summary; non-zero if anything is off."""
    from pyspark.sql import functions as F

    from pipelines.runtime.spark import get_spark

    spark = get_spark("deltasink-demo")
    target = config.target.ref.read(spark)
    rows = target.count()
    distinct = target.select(*config.target.dedup_keys).distinct().count()
    quarantine = config.target.quarantine_ref.read(spark)
    reasons = {(r["reason"], r["redriven_version"]): r["n"] for r in quarantine.groupBy(
        "reason", "redriven_version").agg(F.count("*").alias("n")).collect()}
    legacy = round(COUNT * LEGACY)
    expected_rows, expected_bad = COUNT + 5000 + legacy, round(COUNT * POISON)
    pending = sum(n for r, n in reasons.items() if r[1] is None)
    redriven = sum(n for r, n in reasons.items() if r[1] is not None)
    print(f"\ntarget rows:           {rows:>7}  (expected {expected_rows}: every distinct event)")
    print(f"duplicate event ids:   {rows - distinct:>7}  (expected 0)")
    print(f"quarantined, pending:  {pending:>7}  (expected {expected_bad}) "
          + ", ".join(f"{r}={n}" for (r, v), n in sorted(reasons.items()) if v is None))
    print(f"quarantined, redriven: {redriven:>7}  (expected {legacy}: the legacy events, "
          "now in the target)")
    ok = (rows == distinct == expected_rows and pending == expected_bad
          and redriven == legacy)
    print("\nRESULT: " + ("every event landed exactly once; every bad record is quarantined once"
                          if ok else "MISMATCH (see above)"))
    return 0 if ok else 1
