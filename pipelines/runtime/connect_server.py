"""Spark's own Spark Connect server, started on this machine from pyspark's ``spark-submit``.

pyspark 4.0.1 ships the server (``spark-connect_2.13`` in its jars). It is started with the same
packages a local classic session resolves (Delta, the Kafka connector, spark-avro, from ``~/.m2``
through Ivy) and the same local settings, so a pipeline runs the same against it as in-process.
Its ``foreachBatch`` functions run in Python workers that it starts with ``PYSPARK_PYTHON``: this
interpreter, so they import the same deltasink, through a launcher (:func:`worker_python`) that
lets them import pyspark from this interpreter's packages rather than Spark's ``pyspark.zip``.

Used by ``deltasink connect-server``, the tests (one server per test session) and the benchmark.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from pipelines.errors import EnvironmentSetupError
from pipelines.runtime import jvm, ports

#: The server's main class, in pyspark's jars.
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
DEFAULT_PORT = 15002
_STARTED = "Spark Connect server started"


#: The launcher the server starts its Python workers with (see :func:`worker_python`).
_LAUNCHER = """#!/bin/sh
# Written by deltasink: Spark puts pyspark.zip first on its Python workers' PYTHONPATH, and a
# module imported from a zip is compiled again by every process, about twice the import time of
# the same pyspark installed here. The server waits a fixed 10 s for a foreachBatch worker to
# connect back, so on a busy machine that difference failed query starts. Same pyspark, without
# the zip; everything else as Spark sets it.
kept=
set -f
IFS=:
for entry in $PYTHONPATH; do
  case $entry in */pyspark.zip) ;; *) kept=${kept:+$kept:}$entry ;; esac
done
unset IFS
set +f
PYTHONPATH=$kept
export PYTHONPATH
exec '%s' "$@"
"""


def worker_python(folder: Path) -> Path:
    """Write the server's Python worker launcher into ``folder``: this interpreter, with
    ``pyspark.zip`` taken off ``PYTHONPATH`` (its pyspark is this interpreter's own version).

    Returns:
        The launcher's path, for ``PYSPARK_PYTHON``.
    """
    launcher = folder / "python-worker"
    launcher.write_text(_LAUNCHER % sys.executable.replace("'", "'\\''"))
    launcher.chmod(0o755)
    return launcher


def _spark_submit() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-submit"


def submit_args(port: int, master: str = "local[2]",
                conf: dict[str, str] | None = None) -> list[str]:
    """The ``spark-submit`` arguments that start the server on ``127.0.0.1:port``."""
    from pipelines.runtime.spark import LOCAL_CONF

    settings = {**LOCAL_CONF, **jvm.spark_conf(),
                "spark.jars.packages": ",".join((jvm.DELTA, *jvm.SPARK_PACKAGES)),
                "spark.connect.grpc.binding.address": "127.0.0.1",
                "spark.connect.grpc.binding.port": str(port), **(conf or {})}
    args = [str(_spark_submit()), "--class", SERVER_CLASS, "--master", master,
            "--name", "deltasink-connect-server"]
    for key, value in settings.items():
        args += ["--conf", f"{key}={value}"]
    return args


@dataclass
class ConnectServer:
    """A running Spark Connect server process.

    Attributes:
        port: its gRPC port on 127.0.0.1.
        log: the file its output goes to.
        process: the ``spark-submit`` process (the server's JVM).
    """

    port: int
    log: Path
    process: subprocess.Popen[bytes] = field(repr=False)

    @property
    def url(self) -> str:
        """The ``spark.remote`` URL of this server."""
        return f"sc://127.0.0.1:{self.port}"

    @classmethod
    def start(cls, log: Path, port: int | None = None, master: str = "local[2]",
              conf: dict[str, str] | None = None, timeout: float = 180.0) -> ConnectServer:
        """Start a server and wait until it accepts connections.

        Args:
            log: where the server writes its output.
            port: the gRPC port (default: a free one).
            master: the server's Spark master.
            conf: extra server settings.
            timeout: seconds to wait for it to listen.

        Raises:
            EnvironmentSetupError: Java or the jars are missing, or it did not start in time.
        """
        jvm.require_java()
        if not jvm.spark_artifacts_cached():
            jvm.fetch()
        port = port or ports.free_ports(1)
        if ports.port_open(port):
            raise EnvironmentSetupError(f"port {port} on 127.0.0.1 is already in use; choose "
                                        "another with --port")
        log.parent.mkdir(parents=True, exist_ok=True)
        environ = {**os.environ, "PYSPARK_PYTHON": str(worker_python(log.parent)),
                   "PYSPARK_DRIVER_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
        environ.pop("SPARK_REMOTE", None)  # the server itself is a classic application
        environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
        with open(log, "ab") as out:
            process = subprocess.Popen(submit_args(port, master, conf), stdout=out,
                                       stderr=subprocess.STDOUT, env=environ,
                                       start_new_session=True)
        server = cls(port, log, process)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                break
            if ports.port_open(port) and _STARTED in log.read_text(errors="replace"):
                return server
            time.sleep(0.5)
        server.stop()
        tail = " | ".join(log.read_text(errors="replace").strip().splitlines()[-3:])[-400:]
        raise EnvironmentSetupError(f"the Spark Connect server did not start within "
                                    f"{timeout:.0f}s (log {log}: {tail})")

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the server (SIGTERM, then SIGKILL after ``timeout``)."""
        if self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
