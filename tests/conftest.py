"""Session-wide fixtures: one SparkSession and one real Kafka broker for the whole test run."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.broker import EmbeddedBroker
from pipelines.spark import get_spark


def free_port_pair() -> int:
    """A port P such that P and P+1 are both free (broker + controller)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        with socket.socket() as s2:
            if s2.connect_ex(("127.0.0.1", port + 1)) != 0 and port < 65000:
                return port
    raise RuntimeError("no free port pair")


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = get_spark("deltasink-tests")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    node = EmbeddedBroker.at(tmp_path_factory.mktemp("broker"), port=free_port_pair()).start()
    yield node
    node.stop()


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    """A fresh folder for this test's Delta tables and checkpoints."""
    folder = tmp_path / "lake"
    folder.mkdir()
    return folder
