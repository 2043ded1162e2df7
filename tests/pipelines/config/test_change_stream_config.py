"""A change stream's config: the format, its modes' keys, and one line for each contradiction."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pipelines.config.loader import parse_config
from pipelines.errors import ConfigError, SchemaError
from tests.support.configs import change_stream_config, config_dict


def load(lake: Path, **target: Any) -> None:
    change_stream_config(lake, target=target)


def test_a_change_stream_needs_only_the_topic_the_format_the_target_and_its_mode(
        lake: Path) -> None:
    cfg = change_stream_config(lake)
    assert cfg.change_stream and cfg.target.mode == "upsert"
    assert cfg.target.dedup_keys == () and cfg.target.partition_by == ()  # learned, unpartitioned
    assert cfg.pinned_fields() == () and cfg.schema_name == "debezium"
    assert [key for key, _ in cfg.companion_tables()] == ["target.deletes"]
    assert cfg.target.deletes_ref.path == f"{lake / 'orders'}_deletes"
    history = change_stream_config(lake, mode="scd2", target={"track_history": ["name"]})
    assert [key for key, _ in history.companion_tables()] == ["target.changes"]


@pytest.mark.parametrize(("target", "message"), [
    ({"mode": "insert_only"}, "set target.mode: upsert"),
    ({"sequence_by": "event_time"}, "leave target.sequence_by and target.delete_when out"),
    ({"delete_when": "op = 'd'"}, "leave target.sequence_by and target.delete_when out"),
    ({"dedup_key": "id"}, "the key is the message key's fields"),
    ({"mode": "scd2", "delete_retention": "1d"}, "delete_retention only applies"),
    ({"track_history": ["a"]}, "track_history only applies with target.mode: scd2"),
    ({"mode": "scd2", "dedup_window": "1h"}, "leave dedup_window out"),
    ({"delete_retention": "0s"}, "positive duration"),
])
def test_a_setting_that_contradicts_a_change_stream_is_one_config_error(
        lake: Path, target: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load(lake, **target)


def test_scd2_on_an_event_topic_needs_a_sequence(lake: Path) -> None:
    raw = config_dict(lake, "127.0.0.1:9", "t", target={"mode": "scd2"})
    with pytest.raises(ConfigError, match=r"needs target\.sequence_by"):
        parse_config(raw)
    raw["target"]["sequence_by"] = "event_time"
    assert parse_config(raw).companion_tables()[0][0] == "target.changes"


@pytest.mark.parametrize(("fields", "message"), [
    ({"id": "integer"}, "unknown type 'integer'"),
    ({"seen": {"type": "date", "unit": "ms"}}, "unit is for timestamp_ntz and time only"),
    ({"price": "decimal(40,2)"}, "decimal"),
    ({"bad name": "int"}, "letters, digits"),
])
def test_a_bad_pinned_field_is_one_schema_error(lake: Path, fields: dict[str, Any],
                                                message: str) -> None:
    with pytest.raises((ConfigError, SchemaError), match=message) as err:
        change_stream_config(lake, schema={"fields": fields})
    assert "\n" not in str(err.value).strip().split(":\n")[-1]


def test_a_change_streams_schema_takes_only_pinned_fields(lake: Path) -> None:
    with pytest.raises((ConfigError, SchemaError), match="takes only fields"):
        change_stream_config(lake, schema="events_v1")
    pins = change_stream_config(lake, schema={"fields": {"ratio": "numeric",
                                                          "seen": {"type": "timestamp_ntz",
                                                                   "unit": "ms"}}})
    assert [(p.name, p.kind, p.unit) for p in pins.pinned_fields()] == [
        ("ratio", "numeric", "us"), ("seen", "timestamp_ntz", "ms")]


def test_a_change_stream_through_avro_is_refused_naming_what_is_supported(
        lake: Path) -> None:
    with pytest.raises(ConfigError, match="reads Kafka Connect's JSON converter only"):
        change_stream_config(lake, source={"avro": {"registry_url": "http://127.0.0.1:9"}})
