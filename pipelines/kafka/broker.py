"""An embedded, real Apache Kafka broker (KRaft, one node) run from the Maven Central jars.

Its state lives in one data folder: ``server.properties``, the Kafka logs (``kafka-logs/``),
``broker.pid`` and ``broker.log``. Stopping and starting on the same folder keeps every record.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from pipelines.errors import BrokerError
from pipelines.kafka import broker_auth, broker_files
from pipelines.runtime import jvm, ports
from pipelines.runtime.ports import port_open
from pipelines.runtime.processes import pid_alive

DEFAULT_PORT = 9092
DEFAULT_DATA_DIR = "./lake/_broker"
JVM_OPTS = ("-Xms128m", "-Xmx512m", "-XX:+UseSerialGC", "-Djava.awt.headless=true")


def free_port_pair() -> int:
    """A free loopback port P whose neighbour P+1 is free too (listener + controller).

    Both lie outside the kernel's ephemeral range, so no client connection takes either while
    the broker starts or restarts (see :mod:`pipelines.runtime.ports`).
    """
    return ports.free_ports(2)


@dataclass(frozen=True)
class EmbeddedBroker:
    """A single-node Kafka broker whose state lives in ``data_dir``."""

    data_dir: Path
    port: int = DEFAULT_PORT
    #: The first of four authenticated listeners' ports (SCRAM over SSL, OIDC, mTLS, unsecured
    #: OAUTHBEARER: :mod:`pipelines.kafka.broker_auth`); None: PLAINTEXT only.
    sasl_port: int | None = None

    @classmethod
    def at(cls, data_dir: str | Path, port: int | None = None,
           sasl_port: int | None = None) -> EmbeddedBroker:
        """The broker of ``data_dir``; the ports default to the ones it last ran on.

        Args:
            data_dir: the broker's data folder.
            port: the PLAINTEXT listener's port.
            sasl_port: also listen with SASL_SSL (SCRAM-SHA-512, a generated CA) on this port
                (see :mod:`pipelines.kafka.broker_auth`).
        """
        folder = Path(data_dir).resolve()
        meta = folder / "broker.json"
        saved = json.loads(meta.read_text()) if meta.exists() else {}
        port = port or saved.get("port")
        sasl_port = sasl_port or saved.get("sasl_port")
        return cls(folder, int(port or DEFAULT_PORT), int(sasl_port) if sasl_port else None)

    @property
    def bootstrap_servers(self) -> str:
        """The address clients connect to."""
        return f"127.0.0.1:{self.port}"

    @property
    def sasl_bootstrap_servers(self) -> str:
        """The address of the SASL_SSL listener (``sasl_port`` must be set)."""
        return f"127.0.0.1:{self.sasl_port}"

    def auth_bootstrap_servers(self, login: str) -> str:
        """The address of one authenticated listener: ``scram``, ``oidc``, ``mtls`` or
        ``unsecured`` (``sasl_port`` must be set)."""
        offset = ("scram", "oidc", "mtls", "unsecured").index(login)
        return f"127.0.0.1:{int(self.sasl_port or 0) + offset}"

    def sasl_credentials(self) -> broker_auth.SaslCredentials:
        """The SASL_SSL listener's user, password and CA trust store (generated once)."""
        return broker_auth.credentials(self.data_dir, jvm.require_java())

    @property
    def pid(self) -> int | None:
        """The broker's process id, if it is running."""
        pid_file = self.data_dir / "broker.pid"
        if not pid_file.exists():
            return None
        pid = int(pid_file.read_text().strip() or 0)
        return pid if pid and pid_alive(pid) else None

    def _log_tail(self, lines: int = 15) -> str:
        log = self.data_dir / "broker.log"
        if not log.exists():
            return ""
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])

    def start(self, timeout: float = 60.0) -> EmbeddedBroker:
        """Start the broker in the background and wait until it accepts clients.

        Returns:
            ``self``, for chaining.

        Raises:
            BrokerError: the port is taken by something else, or the broker did not come up.
        """
        if self.pid is not None:
            return self
        auth_ports = range(self.sasl_port, self.sasl_port + 4) if self.sasl_port else []
        for port in (self.port, self.port + 1, *auth_ports):
            if port_open(port):
                raise BrokerError(f"port {port} is already in use; pick another with --port")
        java = jvm.require_java()
        classpath = os.pathsep.join(str(p) for p in jvm.broker_classpath())
        props = broker_files.prepare(self.data_dir, self.port, self.sasl_port, java, classpath)
        auth = broker_auth.jvm_options(self.sasl_credentials()) if self.sasl_port else []
        with open(self.data_dir / "broker.log", "ab") as log:
            proc = subprocess.Popen(
                [java, *JVM_OPTS, *auth,
                 f"-Dlog4j2.configurationFile={self.data_dir}/log4j2.properties",
                 "-cp", classpath, "kafka.Kafka", str(props)],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)
        (self.data_dir / "broker.pid").write_text(str(proc.pid))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise BrokerError(f"the Kafka broker exited with code {proc.returncode}:\n"
                                  f"{self._log_tail()}")
            if port_open(self.port) and (not self.sasl_port or port_open(self.sasl_port)) \
                    and self._ready():
                return self
            time.sleep(0.2)
        self.stop()
        raise BrokerError(f"the Kafka broker did not become ready in {timeout:.0f}s:\n"
                          f"{self._log_tail()}")

    def _ready(self) -> bool:
        from confluent_kafka.admin import AdminClient

        try:
            AdminClient({"bootstrap.servers": self.bootstrap_servers}).list_topics(timeout=2)
        except Exception:
            return False
        return True

    def stop(self, timeout: float = 30.0) -> bool:
        """Stop the broker gracefully (SIGTERM, then SIGKILL after ``timeout``).

        Returns:
            Whether a running broker was stopped.
        """
        pid = self.pid
        if pid is None:
            return False
        os.kill(pid, signal.SIGCONT)  # a paused broker cannot shut down
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while pid_alive(pid) and time.monotonic() < deadline:
            _reap(pid)
            time.sleep(0.1)
        if pid_alive(pid):
            os.kill(pid, signal.SIGKILL)
            _reap(pid)
        (self.data_dir / "broker.pid").unlink(missing_ok=True)
        return True

    def kill(self) -> None:
        """Kill the broker at once (SIGKILL), as a crash or an OOM kill would; its data stays."""
        pid = self.pid
        if pid is None:
            return
        os.kill(pid, signal.SIGKILL)
        while pid_alive(pid):
            _reap(pid)
            time.sleep(0.05)
        (self.data_dir / "broker.pid").unlink(missing_ok=True)

    def pause(self) -> None:
        """Freeze the broker (SIGSTOP): clients see a broker that stopped answering."""
        if self.pid:
            os.kill(self.pid, signal.SIGSTOP)

    def resume(self) -> None:
        """Unfreeze a paused broker (SIGCONT)."""
        if self.pid:
            os.kill(self.pid, signal.SIGCONT)


def _reap(pid: int) -> None:
    """Collect the exit status if the broker is our child, so it does not linger as a zombie."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
