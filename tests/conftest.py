"""Session-wide fixtures: one SparkSession and one real Kafka broker for the whole test run."""
# free_port_pair is re-exported here for the tests that start brokers of their own.

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.kafka.broker import EmbeddedBroker, free_port_pair
from pipelines.runtime.spark import get_spark


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
