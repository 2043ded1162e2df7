"""Session-wide fixtures: one SparkSession and one real Kafka broker for the whole test run."""
# free_port_pair is re-exported here for the tests that start brokers of their own.

from __future__ import annotations

import functools
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from pipelines.errors import BrokerError
from pipelines.kafka.broker import EmbeddedBroker, free_port_pair
from pipelines.runtime import jvm
from pipelines.runtime.connect_server import ConnectServer
from pipelines.runtime.ports import free_ports
from pipelines.runtime.spark import get_spark
from tests.support.postgres import PostgresServer
from tests.support.runner import TEST_JVM_OPTS, TEST_SPARK_CONF
from tests.support.s3 import S3Server


def pytest_configure(config: pytest.Config) -> None:
    """Every Spark JVM the tests start runs with :data:`TEST_JVM_OPTS` (unless the caller set
    ``SPARK_SUBMIT_OPTS``): set before the first one starts, and inherited by every child."""
    os.environ.setdefault("SPARK_SUBMIT_OPTS", TEST_JVM_OPTS)
    signal.signal(signal.SIGTERM, _stop_as_ctrl_c)


def _stop_as_ctrl_c(_signum: int, _frame: object) -> None:
    """SIGTERM (a CI timeout, ``kill``) ends the test run as Ctrl-C does: pytest then tears its
    session fixtures down, so the broker, moto and Spark Connect servers stop with it instead
    of outliving it."""
    raise KeyboardInterrupt


def start_broker(factory: pytest.TempPathFactory, name: str, *, sasl: bool = False,
                 attempts: int = 3) -> EmbeddedBroker:
    """Start a broker on free ports; retry with new ports when one was taken meanwhile.

    A free port found here can be taken by another process (a client's ephemeral port) before
    the broker binds it: on a busy machine a controller port was lost that way once.
    """
    for attempt in range(1, attempts + 1):
        node = EmbeddedBroker.at(factory.mktemp(name), port=free_port_pair(),
                                 sasl_port=free_ports(4) if sasl else None)
        try:
            return node.start()
        except BrokerError:
            node.stop()
            if attempt == attempts:
                raise
    raise AssertionError("unreachable")


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = get_spark("deltasink-tests", conf=TEST_SPARK_CONF)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectServer]:
    """Spark's own Spark Connect server, one for the whole test run, started on first use.

    Connect-mode runs are ``deltasink`` processes (``spark.remote``): a Python process is either
    a classic or a Connect client (PySpark decides per process), and this one is classic.
    """
    server = ConnectServer.start(tmp_path_factory.mktemp("connect") / "server.log",
                                  conf=TEST_SPARK_CONF)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    node = start_broker(tmp_path_factory, "broker")
    yield node
    node.stop()


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """moto's S3 API on a loopback port, one request at a time, with its request log
    (``tests/support/s3.py``); started on first use. Tests create buckets of their own.

    First the S3A jars the tests' sessions and runs on it need, which ``make install`` leaves
    out (``deltasink setup --s3``'s fetch, without its Spark session): fetched once by mvn into
    ~/.m2 (under a lock, so the two workers fetch them once), then file checks only. Here, not
    in the Makefile: every way of running these tests gets them, and a run that has them pays
    no JVM start."""
    jvm.s3_classpath()
    server = S3Server(tmp_path_factory.mktemp("s3")).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """A real PostgreSQL 15 with ``wal_level=logical``, for the CDC tests (Debezium reads its
    WAL), one per test session, started on first use (``tests/support/postgres.py``). Tests
    create databases of their own (:meth:`PostgresServer.database`)."""
    server = PostgresServer.create()
    try:
        yield server.start()
    finally:
        server.remove()  # its temp folder too, also when it did not start


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    """A fresh folder for this test's Delta tables and checkpoints."""
    folder = tmp_path / "lake"
    folder.mkdir()
    return folder


#: Fixtures that start a JVM or a server (the session's Spark driver, the Kafka broker, a Spark
#: Connect server, PostgreSQL). A test that uses one, directly or through another fixture, is marked
#: ``slow``: ``pytest -m "not slow"`` is the quick loop of tests that need neither.
JVM_FIXTURES = frozenset({"spark", "broker", "connect_server", "own_broker", "sasl_broker",
                          "s3_server", "postgres"})


#: The work unit of the test files that talk to the Spark Connect server: they all go to one
#: pytest-xdist worker, so a ``make test`` run starts one Connect server, not one per worker.
CONNECT_GROUP = "connect"
ROOT = Path(__file__).resolve().parent.parent


@functools.cache
def _uses_connect(path: Path) -> bool:
    return path.is_file() and "connect_server" in path.read_text()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``make test``'s two workers (``-n 2``) take whole files, and the Connect files together.

    A file's tests share its module-scoped fixtures (a stream run once, a broker of its own)
    only if they run on the same worker. xdist's own ``--dist loadgroup`` cannot do this under
    pytest 9.2 (it renames node ids through an attribute pytest no longer reads), so this is
    its scope scheduler with the scope chosen here: the file, or the Connect group.
    """
    from xdist.scheduler import LoadScopeScheduling

    class FilesAndConnect(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            file = nodeid.split("::", 1)[0]
            return CONNECT_GROUP if _uses_connect(ROOT / file) else file

    return FilesAndConnect(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if JVM_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
