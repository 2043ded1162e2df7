"""The schema-registry client, against the test registry over real HTTP (no mocks)."""

from __future__ import annotations

import json
import socket

import pytest

from pipelines.errors import RegistryError
from pipelines.kafka.registry import RegistryClient
from tests.support.registry import running_registry

V1 = json.dumps({"type": "record", "name": "Click", "fields": [
    {"name": "event_id", "type": "string"}]})
V2 = json.dumps({"type": "record", "name": "Click", "fields": [
    {"name": "event_id", "type": "string"},
    {"name": "coupon", "type": ["null", "string"], "default": None}]})


def test_ids_lists_every_version_of_the_subjects_and_fetches_each_schema_once() -> None:
    with running_registry() as registry:
        first = registry.register("clicks-value", V1)
        client = RegistryClient(registry.url)
        assert set(client.ids(["clicks-value", "absent-value"])) == {first}
        second = registry.register("clicks-value", V2)  # a version registered since
        found = client.ids(["clicks-value"])
        assert set(found) == {first, second}
        assert json.loads(found[second]) == json.loads(V2)
        client.ids(["clicks-value"])
        assert registry.calls("GET /subjects/clicks-value/versions/") == 2  # once per version
        assert registry.calls("GET /subjects/clicks-value/versions") == 3 + 2  # lists + fetches


def test_a_schema_by_id_is_cached_and_an_unknown_id_is_none() -> None:
    with running_registry() as registry:
        sid = registry.register("clicks-value", V1)
        client = RegistryClient(registry.url)
        text = client.schema(sid)
        assert text is not None and json.loads(text) == json.loads(V1)  # the registered schema
        assert client.schema(sid) == text  # and again, from the cache:
        assert registry.calls(f"GET /schemas/ids/{sid}") == 1
        assert client.schema(42) is None and client.schema(42) is None
        assert registry.calls("GET /schemas/ids/42") == 2  # an unknown id is not cached


def test_basic_auth_works_and_wrong_credentials_are_one_line_without_the_secret() -> None:
    with running_registry(credentials=("reader", "s3cret-pw")) as registry:
        registry.register("clicks-value", V1)
        assert RegistryClient(registry.url, ("reader", "s3cret-pw")).subjects() == [
            "clicks-value"]
        with pytest.raises(RegistryError) as refused:
            RegistryClient(registry.url, ("reader", "wrong-pw")).subjects()
    message = str(refused.value)
    assert "HTTP 401" in message and "refused the credentials" in message
    assert "wrong-pw" not in message and "\n" not in message


def test_an_unreachable_registry_is_a_registry_error() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(RegistryError, match=f"schema registry http://127.0.0.1:{port}"):
        RegistryClient(f"http://127.0.0.1:{port}", timeout=2).subjects()
