"""Kafka Connect standalone for the CDC tests, run from Maven Central's jars.

A worker here is one ``ConnectStandalone`` JVM with the connectors it was started with (their
properties files are passed on its command line, as a standalone worker takes them), its
source offsets in a file (``offset.storage.file.filename``) and its REST API on a loopback port.
Its folder holds ``worker.properties``, one ``<connector>.properties`` per connector,
``offsets.dat``, ``log4j2.properties`` and ``connect.log``.

Offsets reach that file only at an offset flush (every ``offset.flush.interval.ms``, and at a
graceful stop). A worker SIGKILLed between two flushes restarts from the last flushed offsets and
sends again what it sent since: :meth:`ConnectWorker.kill` is that fault.

The jars (Connect's runtime and Debezium's Postgres connector, one classpath) are test-only:
:func:`connect_classpath` fetches them into ~/.m2 on first use through
:func:`pipelines.runtime.jvm.classpath`, never ``deltasink setup``. They are on the worker's
classpath, not in a ``plugin.path``, and found through their ``META-INF/services`` manifests
(``plugin.discovery=service_load``), which skips scanning 70 jars for plugins at each start:
a worker's connector is RUNNING 2.2-2.7 s after the JVM starts on an idle machine, against
4.1-5.4 s with the default ``hybrid_warn`` (a 100-row snapshot done 0.1 s later).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipelines.runtime import jvm
from pipelines.runtime.ports import free_ports

CONNECT_RUNTIME = "org.apache.kafka:connect-runtime:4.1.0"
DEBEZIUM_POSTGRES = "io.debezium:debezium-connector-postgres:3.6.1.Final"
#: The name of the cached classpath (under deltasink's JVM cache folder).
CLASSPATH_NAME = "kafka-connect-debezium"
JVM_OPTS = ("-Xms64m", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-Djava.awt.headless=true")
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"

_LOG4J = """\
rootLogger.level = INFO
rootLogger.appenderRef.console.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
logger.clients.name = org.apache.kafka.clients
logger.clients.level = WARN
logger.common.name = org.apache.kafka.common
logger.common.level = WARN
logger.jetty.name = org.eclipse.jetty
logger.jetty.level = WARN
"""


#: The header of a byte array in a Java serialization stream, then its 4-byte length.
_BYTE_ARRAY = re.compile(rb"(?:\[B\xac\xf3\x17\xf8\x06\x08T\xe0\x02\x00\x00xp|uq\x00~\x00\x02)"
                         rb"(.{4})", re.DOTALL)


def connect_classpath() -> list[Path]:
    """Connect's runtime, Debezium's Postgres connector and a log4j2 backend, fetched once (the
    two pytest-xdist workers of ``make test`` may both ask at first use: ``jvm.classpath``
    fetches under a lock, and the second finds the first's)."""
    return jvm.classpath(jvm.JarSet(CLASSPATH_NAME, "Kafka Connect and Debezium (tests)",
                                    (CONNECT_RUNTIME, DEBEZIUM_POSTGRES, *jvm.LOGGING_JARS)))


def _properties(settings: Mapping[str, str]) -> str:
    return "".join(f"{key}={value}\n" for key, value in settings.items())


@dataclass
class ConnectWorker:
    """One Kafka Connect standalone worker (not started until :meth:`start`)."""

    folder: Path
    bootstrap_servers: str
    #: Each connector's name and its properties (``name`` and ``connector.class`` included).
    connectors: dict[str, dict[str, str]]
    #: The JSON converter's ``schemas.enable``, key and value (a connector may override it).
    schemas: bool = True
    #: ``offset.flush.interval.ms``: how long sent records wait for their offsets to be flushed.
    offset_flush_ms: int = 60_000
    extra: dict[str, str] = field(default_factory=dict)
    port: int = 0
    process: subprocess.Popen[bytes] | None = None

    @property
    def log(self) -> Path:
        return self.folder / "connect.log"

    @property
    def offsets_file(self) -> Path:
        return self.folder / "offsets.dat"

    def flushed_offsets(self) -> dict[str, Any]:
        """The source offsets flushed to the offsets file: each source partition's key (JSON
        text, e.g. ``["shop",{"server":"shop"}]``) and its last flushed offset (parsed JSON).

        The file is a Java-serialized ``HashMap<byte[], byte[]>`` of key and value JSON; each
        array is a 4-byte length after its header (the first ``[B...xp``, then a back
        reference ``uq~``), and keys and values alternate.
        """
        if not self.offsets_file.exists():
            return {}
        data = self.offsets_file.read_bytes()
        arrays = []
        for match in _BYTE_ARRAY.finditer(data):
            size = int.from_bytes(match.group(1), "big")
            arrays.append(data[match.end():match.end() + size].decode())
        return {key: json.loads(value) for key, value in zip(arrays[::2], arrays[1::2],
                                                             strict=True)}

    def worker_properties(self) -> dict[str, str]:
        """The worker's settings (the REST port is chosen at the first start, then kept)."""
        schemas = str(self.schemas).lower()
        return {
            "bootstrap.servers": self.bootstrap_servers,
            "key.converter": JSON_CONVERTER,
            "value.converter": JSON_CONVERTER,
            "key.converter.schemas.enable": schemas,
            "value.converter.schemas.enable": schemas,
            "offset.storage.file.filename": str(self.offsets_file),
            "offset.flush.interval.ms": str(self.offset_flush_ms),
            "listeners": f"http://127.0.0.1:{self.port}",
            "plugin.discovery": "service_load",
            **self.extra,
        }

    def start(self, timeout: float = 120.0) -> ConnectWorker:
        """Start the JVM and wait until every connector and its tasks are RUNNING."""
        if self.process is not None and self.process.poll() is None:
            return self
        self.folder.mkdir(parents=True, exist_ok=True)
        self.port = self.port or free_ports(1)
        (self.folder / "worker.properties").write_text(_properties(self.worker_properties()))
        (self.folder / "log4j2.properties").write_text(_LOG4J)
        files = []
        for name, settings in self.connectors.items():
            files.append(self.folder / f"{name}.properties")
            files[-1].write_text(_properties({"name": name, **settings}))
        classpath = os.pathsep.join(str(p) for p in connect_classpath())
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [jvm.require_java(), *JVM_OPTS,
                 f"-Dlog4j2.configurationFile={self.folder / 'log4j2.properties'}",
                 "-cp", classpath, "org.apache.kafka.connect.cli.ConnectStandalone",
                 str(self.folder / "worker.properties"), *map(str, files)],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)
        try:
            for name in self.connectors:
                self.wait_running(name, timeout)
        except BaseException:
            self.kill()
            raise
        return self

    def stop(self, timeout: float = 60.0) -> None:
        """Graceful stop (SIGTERM): the worker stops its tasks and flushes their offsets."""
        self._signal(signal.SIGTERM, timeout)

    def kill(self) -> None:
        """SIGKILL, as a crash would: the offsets sent since the last flush are lost."""
        self._signal(signal.SIGKILL, 30.0)

    def restart(self, timeout: float = 120.0) -> ConnectWorker:
        """Stop gracefully and start again with the same offsets file and REST port."""
        self.stop()
        return self.start(timeout)

    def _signal(self, signum: int, timeout: float) -> None:
        proc, self.process = self.process, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signum)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    def rest(self, path: str) -> Any:
        """GET ``path`` from the worker's REST API (JSON), or None while it does not answer."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as r:
                return json.loads(r.read())
        except (urllib.error.URLError, OSError, ValueError):
            return None

    def wait_running(self, connector: str, timeout: float = 120.0) -> dict[str, Any]:
        """Wait until ``connector`` and all its tasks are RUNNING; return its status.

        Raises:
            RuntimeError: the worker exited, a task FAILED (with its trace), or time ran out.
        """
        deadline = time.monotonic() + timeout
        status: dict[str, Any] | None = None
        while time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                raise RuntimeError(f"Kafka Connect exited:\n{self.log_tail()}")
            status = self.rest(f"/connectors/{connector}/status")
            if status:
                states = [status["connector"]["state"]] + [t["state"] for t in status["tasks"]]
                if "FAILED" in states:
                    raise RuntimeError(f"connector {connector} failed: {json.dumps(status)}")
                if status["tasks"] and set(states) == {"RUNNING"}:
                    return status
            time.sleep(0.25)
        raise RuntimeError(f"connector {connector} not RUNNING in {timeout:.0f}s: {status}\n"
                           f"{self.log_tail()}")

    def wait_for_log(self, text: str, count: int = 1, timeout: float = 120.0) -> None:
        """Wait until ``connect.log`` holds ``text`` ``count`` times (all runs of the worker)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.log.exists() and self.log.read_text(errors="replace").count(text) >= count:
                return
            if self.process is None or self.process.poll() is not None:
                raise RuntimeError(f"Kafka Connect exited:\n{self.log_tail()}")
            time.sleep(0.25)
        raise RuntimeError(f"{text!r} x{count} not in the Connect log after {timeout:.0f}s:\n"
                           f"{self.log_tail()}")

    def log_tail(self, lines: int = 30) -> str:
        if not self.log.exists():
            return ""
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
