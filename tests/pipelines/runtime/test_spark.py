"""The local JVMs deltasink starts: the driver's and the Spark Connect server's."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

from pipelines.runtime.connect_server import ConnectServer
from pipelines.runtime.spark import SHORT_RUN_JIT


def _java_descendants(pid: int) -> list[list[str]]:
    """The command lines of ``pid`` and its descendants that run ``java``."""
    found, queue = [], [pid]
    while queue:
        current = queue.pop()
        proc = Path(f"/proc/{current}")
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            children = (proc / "task" / str(current) / "children").read_text().split()
        except OSError:
            continue
        if argv and argv[0].endswith(b"java"):
            found.append([a.decode() for a in argv if a])
        queue.extend(int(c) for c in children)
    return found


def test_the_local_driver_jvm_runs_with_the_short_run_jit_thresholds(
        spark: SparkSession) -> None:
    arguments = list(spark.sparkContext._jvm.java.lang.management.ManagementFactory  # type: ignore[union-attr]
                     .getRuntimeMXBean().getInputArguments())
    assert SHORT_RUN_JIT.split() == [a for a in arguments if a.startswith("-XX:Tier4")]


def test_the_spark_connect_server_jvm_runs_with_them_too(connect_server: ConnectServer) -> None:
    javas = _java_descendants(connect_server.process.pid)
    assert javas, "no java process under the Connect server's spark-submit"
    assert all(set(SHORT_RUN_JIT.split()) <= set(argv) for argv in javas)


def test_a_local_session_runs_without_pyspark_s_call_site_capture(spark: SparkSession) -> None:
    """PySpark's DataFrame debugging adds ~5 Py4J calls to every function call of a batch."""
    from pyspark.errors.utils import is_debugging_enabled

    assert spark.conf.get("spark.python.sql.dataFrameDebugging.enabled") == "false"
    assert not is_debugging_enabled()
