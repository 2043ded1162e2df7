"""Spark's Hive metastore on embedded Derby (pyspark's own jars): a catalog that persists from
one process to the next, as a workspace's does. Embedded Derby is opened by one process at a
time, so every step that touches it is a process of its own; a test's own session reads the
tables at their locations (:func:`location`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support import runner

CATALOG, SCHEMA, VOLUME = "spark_catalog", "bronze", "landing"


def hive_conf(root: Path) -> dict[str, str]:
    """The ``spark.conf`` of a Hive metastore on embedded Derby, its warehouse beside it."""
    return {"spark.sql.catalogImplementation": "hive",
            "spark.hadoop.javax.jdo.option.ConnectionURL":
                f"jdbc:derby:;databaseName={root}/metastore_db;create=true",
            "spark.sql.warehouse.dir": str(root / "warehouse")}


def make_schema(root: Path) -> None:
    """``CREATE SCHEMA bronze`` in the metastore, from a process of its own (as a user would)."""
    code = ("import json, sys\nfrom pipelines.runtime.spark import get_spark\n"
            "spark = get_spark(conf=json.loads(sys.argv[1]))\n"
            f"spark.sql('CREATE SCHEMA IF NOT EXISTS {SCHEMA}')\n")
    subprocess.run([sys.executable, "-c", code, json.dumps(hive_conf(root))], check=True,
                   capture_output=True, timeout=300, env=runner.cold_env(None))


def location(root: Path, table: str) -> Path:
    """Where the metastore keeps the managed table ``bronze.<table>``."""
    return root / "warehouse" / f"{SCHEMA}.db" / table
