"""The embedded broker's data folder: its configuration files and its formatted storage.

``prepare`` writes ``server.properties`` (PLAINTEXT, plus a SASL_SSL listener when asked),
``log4j2.properties`` and ``broker.json`` (the ports, read back by ``EmbeddedBroker.at``), and
formats the KRaft storage once: a folder formatted before keeps its cluster id and its records.
"""

from __future__ import annotations

import base64
import json
import subprocess
import uuid
from pathlib import Path

from pipelines.errors import BrokerError
from pipelines.kafka import broker_auth

_SERVER_PROPERTIES = """\
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:{controller_port}
listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}
advertised.listeners=PLAINTEXT://127.0.0.1:{port}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs={log_dir}
num.partitions=1
auto.create.topics.enable=false
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
message.max.bytes=16777216
log.retention.check.interval.ms=1000
log.segment.delete.delay.ms=0
"""

_LOG4J = """\
rootLogger.level = WARN
rootLogger.appenderRef.console.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
"""


def new_cluster_id() -> str:
    """A KRaft cluster id: a random UUID in URL-safe base64.

    Like Kafka's own ``Uuid.randomUuid``, never one that starts with ``-``: the storage tool would
    read it as a command-line option (1 in 64 random ids).
    """
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


def prepare(data_dir: Path, port: int, sasl_port: int | None, java: str,
            classpath: str) -> Path:
    """Write the broker's configuration into ``data_dir`` and format its storage if new.

    Args:
        data_dir: the broker's data folder (created if missing).
        port: the PLAINTEXT listener's port; the controller listens on ``port + 1``.
        sasl_port: the SASL_SSL (SCRAM-SHA-512) listener's port, or None for PLAINTEXT only.
        java: the ``java`` executable.
        classpath: the Kafka jars.

    Returns:
        The ``server.properties`` file to start the broker with.

    Raises:
        BrokerError: Kafka's storage tool failed to format the folder.
    """
    data_dir.mkdir(parents=True, exist_ok=True)
    log_dir = data_dir / "kafka-logs"
    props = data_dir / "server.properties"
    text = _SERVER_PROPERTIES.format(port=port, controller_port=port + 1, log_dir=log_dir)
    scram: list[str] = []
    if sasl_port:
        creds = broker_auth.credentials(data_dir, java)
        text = "".join(ln for ln in text.splitlines(keepends=True)
                       if not ln.startswith(("listeners=", "advertised.listeners=",
                                             "listener.security.protocol.map=")))
        text += broker_auth.server_properties(creds, port, sasl_port, port + 1)
        scram = broker_auth.format_args(creds)
    props.write_text(text)
    (data_dir / "log4j2.properties").write_text(_LOG4J)
    (data_dir / "broker.json").write_text(json.dumps(
        {"port": port, **({"sasl_port": sasl_port} if sasl_port else {})}))
    if not (log_dir / "meta.properties").exists():
        proc = subprocess.run(
            [java, "-cp", classpath, "kafka.tools.StorageTool", "format",
             "-t", new_cluster_id(), "-c", str(props), *scram],
            capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise BrokerError(f"formatting Kafka storage in {log_dir} failed:\n"
                              f"{proc.stdout}{proc.stderr}")
    return props
