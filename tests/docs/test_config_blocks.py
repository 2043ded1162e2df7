"""Every YAML block of the docs and the README is loaded by the real config loader (or, for a
YAML schema, the real schema loader)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipelines.config.loader import load_config
from pipelines.config.model import PipelineConfig
from pipelines.errors import ConfigError
from schemas.loader import schema_from_mapping
from tests.docs.sources import ROOT, Block, blocks, markdown_files

#: The config's top-level keys as written in YAML.
TOP_LEVEL = frozenset(f.alias or n for n, f in PipelineConfig.model_fields.items()
                      if not f.exclude)
#: Filled in where a fragment leaves them out, so that a section can be shown on its own.
BASE: dict[str, Any] = {"name": "docs_example", "checkpoint": "./lake/_checkpoints/docs_example"}


def yaml_blocks() -> list[Block]:
    return [b for f in markdown_files() for b in blocks(f) if b.lang in ("yaml", "yml")]


def as_config(fragment: dict[str, Any]) -> dict[str, Any]:
    """``fragment`` completed with what every config needs and it does not set."""
    raw = {**BASE, **fragment}
    source = dict(raw.get("source") or {})
    if not source.get("topics") and not source.get("topic_pattern"):
        source["topics"] = ["orders"]
    target = dict(raw.get("target") or {})
    if not target.get("path") and not target.get("table"):
        target["path"] = "./lake/orders"
    return {**raw, "source": source, "target": target}


def test_the_docs_have_yaml_blocks() -> None:
    assert len(yaml_blocks()) >= 10


@pytest.mark.parametrize("block", yaml_blocks(), ids=lambda b: b.where)
def test_yaml_block_loads_with_the_real_loader(block: Block, tmp_path: Path) -> None:
    raw = yaml.safe_load(block.text)
    assert isinstance(raw, dict), f"{block.where}: not a YAML mapping"
    if "fields" in raw:  # a YAML event schema
        schema_from_mapping(raw, where=block.where)
        return
    unknown = set(raw) - TOP_LEVEL
    assert not unknown, f"{block.where}: not config keys: {sorted(unknown)}"
    config = as_config(raw)
    schema = config.get("schema")
    if isinstance(schema, str) and schema.endswith((".yml", ".yaml")):  # a schema file it names
        shutil.copy(ROOT / "schemas" / "examples" / "orders_v1.yml", tmp_path / schema)
    file = tmp_path / "config.yml"
    file.write_text(yaml.safe_dump(config), encoding="utf-8")

    try:
        loaded = load_config(file, environ={})
    except ConfigError as exc:
        pytest.fail(f"{block.where}: the config loader refuses it: {exc}".replace(f"{file}: ", ""))

    assert loaded.name == config["name"]
