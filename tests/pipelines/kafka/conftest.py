"""A second embedded broker with a SASL_SSL (SCRAM-SHA-512) listener, only for the auth tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pipelines.kafka.broker import EmbeddedBroker
from tests.conftest import start_broker


@pytest.fixture(scope="session")
def sasl_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    node = start_broker(tmp_path_factory, "sasl-broker", sasl=True)
    yield node
    node.stop()
