"""Notebook widgets -> config: Unity Catalog placement and secrets named by the config."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pipelines.databricks.widgets import build_config, local_volumes_root, place, read_secrets
from pipelines.errors import ConfigError

RAW: dict[str, Any] = {
    "name": "orders", "source": {"topics": ["orders"]}, "checkpoint": "../ck/orders",
    "target": {"path": "../lake/orders", "quarantine_path": "../lake/q", "dedup_window": "2d"},
    "quality": {"results_path": "../lake/r", "max_lag_records": 10},
}


def test_placement_moves_every_location_to_the_catalog_and_volume() -> None:
    placed = place(RAW, "main", "sales", "vol")
    assert placed["target"] == {"table": "main.sales.orders", "dedup_window": "2d",
                                "quarantine_table": "main.sales.orders_quarantine"}
    assert placed["quality"] == {"max_lag_records": 10,
                                 "results_table": "main.sales.deltasink_quality_results",
                                 "metrics_table": "main.sales.deltasink_run_metrics",
                                 "docs_dir": "/Volumes/main/sales/vol/quality_docs/orders"}
    assert placed["checkpoint"] == "/Volumes/main/sales/vol/checkpoints/orders"
    assert RAW["target"]["path"] == "../lake/orders", "the input is not modified"


def test_placement_keeps_the_table_names_a_config_gives() -> None:
    raw = {**RAW, "target": {"table": "dev.bronze.orders_v2", "quarantine_table": "bad_orders"}}
    placed = place(raw, "prod", "bronze", "vol")
    assert (placed["target"]["table"], placed["target"]["quarantine_table"]) == (
        "prod.bronze.orders_v2", "prod.bronze.bad_orders")


def test_no_placement_keeps_the_configs_locations_and_a_partial_one_is_refused() -> None:
    assert place(RAW, "", "", "") == RAW
    with pytest.raises(ConfigError, match="catalog, schema and volume: set all three or none"):
        place(RAW, "main", "", "vol")


def test_secrets_need_a_scope_and_a_getter_and_name_what_failed_without_values() -> None:
    raw = {**RAW, "databricks": {"secrets": {"DELTASINK_SOURCE__OPTIONS__X": "k"}}}
    assert read_secrets(RAW, "scope", None) == {}
    with pytest.raises(ConfigError, match="no secret scope is"):
        read_secrets(raw, "", lambda s, k: "v")
    with pytest.raises(ConfigError, match="no secrets getter"):
        read_secrets(raw, "scope", None)
    assert read_secrets(raw, "scope", lambda s, k: f"{s}/{k}") == {
        "DELTASINK_SOURCE__OPTIONS__X": "scope/k"}
    scoped = {**raw, "databricks": {**raw["databricks"], "secret_scope": "own"}}
    assert read_secrets(scoped, "", lambda s, k: s) == {"DELTASINK_SOURCE__OPTIONS__X": "own"}


def test_volumes_root_maps_the_volume_folders_locally_and_only_outside_databricks(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config = tmp_path / "orders.yml"
    config.write_text(yaml.safe_dump({**RAW, "source": {"topics": ["orders"],
                                                         "bootstrap_servers": "localhost:9092"}}))
    params = {"config": str(config), "catalog": "main", "schema": "sales", "volume": "vol"}
    environ = {"DELTASINK_VOLUMES_ROOT": str(tmp_path / "Volumes")}
    monkeypatch.delenv("DATABRICKS_RUNTIME_VERSION", raising=False)
    local = build_config(params, environ=environ)
    assert local.checkpoint == str(tmp_path / "Volumes" / "main/sales/vol/checkpoints/orders")
    assert local.quality.docs_dir == str(tmp_path / "Volumes/main/sales/vol/quality_docs/orders")
    assert local.target.table == "main.sales.orders"
    monkeypatch.setenv("DATABRICKS_RUNTIME_VERSION", "15.4")
    assert local_volumes_root(environ) is None  # on Databricks, /Volumes is real
    assert place(RAW, "main", "sales", "vol")["checkpoint"].startswith("/Volumes/main/")
