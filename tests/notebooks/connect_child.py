"""Run the ingest and validate notebooks with a Spark Connect ``spark``, as serverless does.

A child process of ``test_notebooks.py``: a Python process is either a classic or a Spark
Connect client (PySpark decides once per process), and the test process is classic. Prints one
JSON line with what the notebooks returned.

Usage: ``python -m tests.notebooks.connect_child <sc://url> <bundle root> <bootstrap>``
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pyspark.sql import SparkSession

from pipelines.runtime.sessions import side_session
from tests.notebooks.test_notebooks import NOTEBOOKS, ingest_params, task_params
from tests.support.dbutils import make_dbutils, run_notebook


def main(remote: str, root: Path, bootstrap: str) -> int:
    """Ingest, then validate the run, through a Connect session; print the outcome."""
    spark = SparkSession.builder.remote(remote).getOrCreate()
    dbutils = make_dbutils(ingest_params(root, bootstrap))
    run = run_notebook(NOTEBOOKS / "ingest.py", dbutils, spark)["result"]
    params = task_params(root, "orders_bronze", "ingest", "validate", bootstrap,
                         run_id=dbutils.jobs.taskValues.values["run_id"])
    report = run_notebook(NOTEBOOKS / "validate.py", make_dbutils(params), spark)["report"]
    side = side_session(spark)  # the client's own commits: never in the batches' session
    print(json.dumps({"session": type(spark).__module__,
                      "side_session": side.client._session_id != spark.client._session_id,
                      "records_in": run.records_in,
                      "inserted": run.inserted, "quarantined": run.quarantined,
                      "success": report.success}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], Path(sys.argv[2]), sys.argv[3]))
