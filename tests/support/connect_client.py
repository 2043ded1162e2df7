"""Spark Connect client processes for tests: SQL answers and table locations, asked through a
Connect server as a user's client would (a Python process is either a classic or a Connect
client, and the test process is classic)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support import runner

_CLIENT = """
import json, sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
print(json.dumps([list(spark.sql(q).first() or []) for q in sys.argv[2:]]))
"""


_LOCATIONS = """
import json, sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
table = spark.sql(f"DESCRIBE DETAIL {sys.argv[2]}").first()["location"]
schema = {r[0]: r[1] for r in spark.sql(f"DESCRIBE SCHEMA EXTENDED {sys.argv[3]}").collect()}
print(json.dumps([table, schema["Location"]]))
"""


_SCHEMA = """
import json, sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
rows = spark.sql(f"DESCRIBE SCHEMA EXTENDED {sys.argv[2]}").collect()
print(json.dumps({r[0]: r[1] for r in rows}["Location"]))
"""


def connect_locations(url: str, table: str, schema: str) -> tuple[str, str]:
    """Where ``table`` lies and ``schema``'s default location, asked through Connect."""
    done = subprocess.run([sys.executable, "-c", _LOCATIONS, url, table, schema],
                          capture_output=True, text=True, timeout=300, check=True,
                          env=runner.cold_env(None))
    table_at, schema_at = json.loads(done.stdout.strip().splitlines()[-1])
    return str(table_at), str(schema_at)


def connect_schema_location(url: str, schema: str) -> str:
    """``schema``'s default location (where its managed tables go), asked through Connect."""
    done = subprocess.run([sys.executable, "-c", _SCHEMA, url, schema], capture_output=True,
                          text=True, timeout=300, check=True, env=runner.cold_env(None))
    return str(json.loads(done.stdout.strip().splitlines()[-1]))


def connect_sql(url: str, *queries: str) -> list[list[object]]:
    """Each query's first row, from a Spark Connect client process of its own."""
    done = subprocess.run([sys.executable, "-c", _CLIENT, url, *queries], capture_output=True,
                          text=True, timeout=300, check=True, env=runner.cold_env(None))
    found: list[list[object]] = json.loads(done.stdout.strip().splitlines()[-1])
    return found
