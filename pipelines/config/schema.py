"""The config's ``schema:`` key: a registered name, an inline mapping, or a YAML file's path.

The schema is the source of truth for the dedup key: ``target.dedup_key`` defaults to the
schema's key columns (``kafka_key`` for ``kafka.key``). An explicit ``target.dedup_key`` (one
column, as in configs written before schemas declared keys) still wins. The schema's time source
also decides ``target.dedup_window``'s default (:mod:`pipelines.config.window`).
"""

from __future__ import annotations

from typing import Any

from pipelines.config.window import fill_window
from pipelines.errors import SchemaError
from schemas import resolve_schema


def defaults_from_schema(raw: Any) -> Any:
    """Fill ``target.dedup_key`` from the schema's key, and ``target.dedup_window`` from its
    time source and ``target.mode``, when the config leaves them out (a change stream's:
    :func:`change_stream_target`).

    Runs before validation, so an invalid inline or file schema fails the load with its own
    one-line :class:`SchemaError`. An unknown registered name is left for the run to report.

    Args:
        raw: the config mapping (not modified).

    Returns:
        ``raw``, or a copy with ``target.dedup_key`` and ``target.dedup_window`` set.
    """
    if not isinstance(raw, dict) or not isinstance(raw.get("target"), dict):
        return raw
    if isinstance(raw.get("source"), dict) and raw["source"].get("format") == "debezium":
        return {**raw, "target": change_stream_target(raw["target"])}
    source = raw.get("schema", "events_v1")
    try:
        schema = resolve_schema(source)
    except SchemaError:
        if isinstance(source, str) and "/" not in source and not source.endswith(
                (".yaml", ".yml")):
            return raw  # an unknown registered name: the run says so, listing the known ones
        raise
    target = fill_window(raw["target"], schema.time_field)
    if "dedup_key" not in target:
        keys = schema.key_columns
        target = {**target, "dedup_key": keys[0] if len(keys) == 1 else keys}
    return raw if target is raw["target"] else {**raw, "target": target}


def change_stream_target(target: dict[str, Any]) -> dict[str, Any]:
    """A change stream's target defaults: keyed on the message key's fields (learned from the
    events, so ``target.dedup_key`` may not be set), not partitioned, no dedup window.

    Raises:
        ValueError: ``target.dedup_key`` is set.
    """
    if "dedup_key" in target:
        raise ValueError("target.dedup_key does not apply with source.format: debezium: the "
                         "key is the message key's fields (Debezium's message.key.columns "
                         "chooses them)")
    out = {**target, "dedup_key": ()}
    out.setdefault("partition_by", ())
    filled: dict[str, Any] = fill_window(out)
    return filled
