"""Build pipeline configs for tests: real paths in a temp lake, a real broker address."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from pipelines.config.loader import load_config
from pipelines.config.model import PipelineConfig


def config_dict(lake: Path, bootstrap: str, topic: str, name: str = "orders_bronze",
                **overrides: Any) -> dict[str, Any]:
    """A complete config mapping; ``overrides`` replace top-level sections (merged one level)."""
    raw: dict[str, Any] = {
        "name": name,
        "source": {"bootstrap_servers": bootstrap, "topics": [topic],
                   "starting_offsets": "earliest", "max_records_per_batch": 200_000},
        "schema": "events_v1",
        "target": {"path": str(lake / "orders"),
                   "quarantine_path": str(lake / "orders_quarantine")},
        "checkpoint": str(lake / "_checkpoints" / name),
        "quality": {"docs_dir": str(lake / "_quality" / "docs"),
                    "results_path": str(lake / "_quality" / "results"),
                    "metrics_path": str(lake / "_quality" / "run_metrics")},
    }
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(raw.get(key), dict):
            raw[key] = {**raw[key], **value}
        else:
            raw[key] = value
    return raw


def write_config(lake: Path, bootstrap: str, topic: str, name: str = "orders_bronze",
                 **overrides: Any) -> Path:
    """Write a config YAML into the lake and return its path."""
    path = lake / f"{name}.yml"
    path.write_text(yaml.safe_dump(config_dict(lake, bootstrap, topic, name, **overrides)))
    return path


def make_config(lake: Path, bootstrap: str, topic: str, name: str = "orders_bronze",
                **overrides: Any) -> PipelineConfig:
    """Write and load a config (so tests go through the real loader)."""
    return load_config(write_config(lake, bootstrap, topic, name, **overrides), environ={})


def change_stream_config(lake: Path, topic: str = "changes", name: str = "changes",
                         bootstrap: str = "127.0.0.1:9", mode: str = "upsert",
                         **overrides: Any) -> PipelineConfig:
    """A ``source.format: debezium`` config (no ``schema:`` unless given: its columns are
    learned), written and loaded like :func:`make_config`."""
    raw = config_dict(lake, bootstrap, topic, name, **{
        "source": {"format": "debezium", **overrides.pop("source", {})},
        "target": {"mode": mode, **overrides.pop("target", {})}, **overrides})
    if "schema" not in overrides:
        del raw["schema"]
    path = lake / f"{name}.yml"
    path.write_text(yaml.safe_dump(raw))
    return load_config(path, environ={})
