"""source.format / source.avro: validation, the .avsc path, and the registry's secrets masked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pipelines.cli import failures
from pipelines.config.loader import load_config
from pipelines.errors import ConfigError

BASE: dict[str, Any] = {
    "name": "clicks", "source": {"bootstrap_servers": "127.0.0.1:9092", "topics": ["clicks"]},
    "target": {"path": "./lake/clicks"}, "checkpoint": "./lake/_checkpoints/clicks"}


def write(tmp_path: Path, **source: Any) -> Path:
    path = tmp_path / "pipeline.yml"
    path.write_text(yaml.safe_dump({**BASE, "source": {**BASE["source"], **source}}))
    return path


def test_json_is_the_default_format(tmp_path: Path) -> None:
    config = load_config(write(tmp_path), environ={})
    assert config.source.format == "json" and config.source.avro is None


def test_a_schema_file_is_relative_to_the_config_file(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, format="avro", avro={"schema_file": "clicks.avsc"}),
                         environ={})
    assert config.source.avro is not None
    assert config.source.avro.schema_file == str(tmp_path / "clicks.avsc")


@pytest.mark.parametrize("source", [
    {"format": "avro"},
    {"avro": {"registry_url": "http://localhost:8081"}},
    {"format": "avro", "avro": {"registry_url": "http://r", "schema_file": "a.avsc"}},
    {"format": "avro", "avro": {"registry_url": "localhost:8081"}},
    {"format": "avro", "avro": {"registry_url": "http://r", "registry_user": "u"}},
])
def test_an_incomplete_avro_source_is_refused(tmp_path: Path, source: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        load_config(write(tmp_path, **source), environ={})


def test_registry_credentials_from_the_environment_are_secret(tmp_path: Path) -> None:
    environ = {"DELTASINK_SOURCE__AVRO__REGISTRY_USER": "api-key-123",
               "DELTASINK_SOURCE__AVRO__REGISTRY_PASSWORD": "api-secret-456"}
    config = load_config(write(tmp_path, format="avro",
                               avro={"registry_url": "https://registry.example"}), environ=environ)
    assert config.source.avro is not None
    assert config.source.avro.credentials() == ("api-key-123", "api-secret-456")
    assert "api-secret-456" not in repr(config) and "api-key-123" not in repr(config)
    line = "registry said: bad api-key-123:api-secret-456"
    assert failures.redact(line, environ=environ) == "registry said: bad ***:***"
    assert failures.redact(line, config.source.avro.secrets(), environ={}) == \
        "registry said: bad ***:***"
