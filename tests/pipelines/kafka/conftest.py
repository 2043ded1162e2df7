"""A second embedded broker with a SASL_SSL (SCRAM-SHA-512) listener, only for the auth tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pipelines.kafka.broker import EmbeddedBroker, free_port_pair


@pytest.fixture(scope="session")
def sasl_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    node = EmbeddedBroker.at(tmp_path_factory.mktemp("sasl-broker"), port=free_port_pair(),
                             sasl_port=free_port_pair()).start()
    yield node
    node.stop()
