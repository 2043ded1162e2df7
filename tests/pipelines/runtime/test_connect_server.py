"""The launcher a local Spark Connect server starts its Python workers with: this interpreter,
importing pyspark from its own packages instead of Spark's ``pyspark.zip`` (a real process; no
server needed)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pyspark

from pipelines.runtime.connect_server import worker_python

SPARK_LIB = Path(pyspark.__file__).parent / "python" / "lib"


def test_the_worker_launcher_drops_pyspark_zip_and_keeps_the_rest(tmp_path: Path) -> None:
    launcher = worker_python(tmp_path)
    assert os.access(launcher, os.X_OK)
    py4j = next(SPARK_LIB.glob("py4j-*-src.zip"))
    path = os.pathsep.join([str(SPARK_LIB / "pyspark.zip"), str(py4j), str(tmp_path / "mine")])
    done = subprocess.run(
        [str(launcher), "-c", "import json, sys, pyspark; "
                              "print(json.dumps([pyspark.__file__, sys.path]))"],
        capture_output=True, text=True, timeout=120, check=True,
        env={**os.environ, "PYTHONPATH": path})
    where, found = json.loads(done.stdout)
    assert where == pyspark.__file__  # this interpreter's pyspark, with its compiled modules
    assert str(SPARK_LIB / "pyspark.zip") not in found
    assert str(py4j) in found and str(tmp_path / "mine") in found
