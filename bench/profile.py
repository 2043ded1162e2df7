"""``python -m bench.profile``: where deltasink's batch time goes, and which session knobs help.

Runs the deltasink cell once per variant (a set of runtime session confs) on the same topic and
target, in one Spark session, and prints the stage medians, Spark jobs per batch, and the MERGE
metrics Delta records in the table history (scan vs rewrite time, files added).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from bench import env
from bench.run import measure, say
from bench.spec import Cell
from bench.targets import build_target

#: Runtime confs tried against the baseline (the session's own settings).
VARIANTS: dict[str, dict[str, str]] = {
    "baseline": {},
    "materializeSource=none": {"spark.databricks.delta.merge.materializeSource": "none"},
    "repartitionBeforeWrite=false": {
        "spark.databricks.delta.merge.repartitionBeforeWrite.enabled": "false"},
    "shuffle.partitions=2": {"spark.sql.shuffle.partitions": "2"},
    "snapshotPartitions=1": {"spark.databricks.delta.snapshotPartitions": "1"},
}


def merge_metrics(spark: SparkSession, table: Path) -> list[dict[str, Any]]:
    """The operationMetrics of each MERGE in the table's history, oldest first."""
    rows = (spark.sql(f"DESCRIBE HISTORY delta.`{table}`").where("operation = 'MERGE'")
            .orderBy("version").select("operationMetrics").collect())
    keys = ("executionTimeMs", "scanTimeMs", "rewriteTimeMs", "numTargetFilesAdded",
            "numTargetRowsInserted", "numSourceRows")
    return [{k: r["operationMetrics"].get(k) for k in keys} for r in rows]


def main(argv: list[str] | None = None) -> int:
    """Run every variant and print one JSON line each."""
    parser = argparse.ArgumentParser(prog="python -m bench.profile", description=__doc__)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--target-rows", type=int, default=200_000)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--event-log", type=Path, metavar="DIR",
                        help="also write Spark's event log here (read it with bench.eventlog)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="deltasink-profile-") as tmp:
        work = Path(tmp)
        with env.broker(work / "broker") as node:
            env.produce(node.bootstrap_servers, 0.2, args.events, 3)
            from pipelines.runtime.spark import get_spark

            conf: dict[str, str] = {}
            if args.event_log is not None:  # plain JSON, so bench.eventlog needs no zstd
                args.event_log.mkdir(parents=True, exist_ok=True)
                conf = {"spark.eventLog.enabled": "true", "spark.eventLog.compress": "false",
                        "spark.eventLog.dir": args.event_log.resolve().as_uri()}
            spark = get_spark("deltasink-profile", conf=conf)
            pids = env.driver_pids(int(spark._jvm.ProcessHandle.current().pid()))  # type: ignore[union-attr]
            base = work / "base"
            build_target(spark, base, args.target_rows, 90)
            for i, name in enumerate(args.variants.split(",")):
                confs = VARIANTS[name]
                saved = {k: spark.conf.get(k, None) for k in confs}
                for key, value in confs.items():
                    spark.conf.set(key, value)
                cell = Cell("deltasink", args.target_rows, args.batch, 0.2)
                result = measure(cell, spark, node.bootstrap_servers, work / str(i),
                                 {args.target_rows: base}, pids)
                for key, old in saved.items():
                    spark.conf.unset(key) if old is None else spark.conf.set(key, old)
                result["merges"] = merge_metrics(spark, work / str(i) / cell.label / "target")
                result.pop("per_batch")
                say(f"{name}: {json.dumps(result)}")
            spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
