"""Debezium's Postgres connector, as the CDC tests run it on :class:`ConnectWorker`.

The settings are Debezium 3.6.1's defaults but for what a test must pin:
- ``plugin.name=pgoutput``: Postgres's own logical decoding plugin, nothing to install.
- a replication slot and a publication of the connector's own (a server holds several tests'
  connectors), the publication made by the connector for its tables only
  (``publication.autocreate.mode=filtered``).
- ``skipped.operations=none``: Debezium skips TRUNCATE events by default
  (``skipped.operations=t``); the tests want to see them.
- ``topic.creation.default.*``: the embedded broker does not create topics on first write
  (``auto.create.topics.enable=false``), so Connect creates each table's topic, with one
  partition.
``snapshot.mode`` stays ``initial`` (snapshot when no offsets, then stream), and
``decimal.handling.mode`` ``precise``, ``time.precision.mode`` ``adaptive``.

Debezium writes ``<topic.prefix>.<schema>.<table>`` per table. A snapshot's end shows in the log as
``Snapshot completed`` and the start of streaming as ``Starting streaming``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tests.support.kafka_connect import JSON_CONVERTER, ConnectWorker
from tests.support.postgres import Database
from tests.support.topic_records import TopicRecord

CONNECTOR_CLASS = "io.debezium.connector.postgresql.PostgresConnector"
SNAPSHOT_DONE = "Snapshot completed"
STREAMING = "Starting streaming"


def connector(db: Database, prefix: str, tables: Iterable[str], *,
              schemas: bool | None = None, **overrides: str) -> dict[str, str]:
    """The properties of one Postgres connector for ``tables`` (``schema.table``) of ``db``.

    Args:
        db: the database to capture.
        prefix: ``topic.prefix``; also names the slot (``<prefix>_slot``) and the publication
            (``<prefix>_pub``), so it must be a lower-case SQL identifier.
        tables: ``table.include.list``.
        schemas: the JSON converter's ``schemas.enable`` for this connector's key and value,
            overriding the worker's; None keeps the worker's.
        overrides: any other connector setting (dots as ``__``: ``snapshot__mode="never"``).
    """
    settings = {
        "connector.class": CONNECTOR_CLASS,
        "tasks.max": "1",
        "database.hostname": db.host,
        "database.port": str(db.port),
        "database.user": db.user,
        "database.password": "unused",  # trust authentication on loopback
        "database.dbname": db.name,
        "topic.prefix": prefix,
        "plugin.name": "pgoutput",
        "slot.name": f"{prefix}_slot",
        "publication.name": f"{prefix}_pub",
        "publication.autocreate.mode": "filtered",
        "table.include.list": ",".join(tables),
        "skipped.operations": "none",
        "topic.creation.default.partitions": "1",
        "topic.creation.default.replication.factor": "1",
    }
    if schemas is not None:
        for side in ("key", "value"):
            settings[f"{side}.converter"] = JSON_CONVERTER
            settings[f"{side}.converter.schemas.enable"] = str(schemas).lower()
    settings.update({key.replace("__", "."): value for key, value in overrides.items()})
    return settings


def topic(prefix: str, table: str) -> str:
    """The topic Debezium writes ``table`` (``schema.table``) to."""
    return f"{prefix}.{table}"


def wait_snapshot_done(worker: ConnectWorker, count: int = 1, timeout: float = 120.0) -> None:
    """Wait until ``count`` snapshots have completed in the worker's log (one per connector
    and per snapshot taken, over all the worker's runs), and streaming has started after it."""
    worker.wait_for_log(SNAPSHOT_DONE, count, timeout)
    worker.wait_for_log(STREAMING, count, timeout)


def drop_slot(db: Database, prefix: str) -> None:
    """Drop the connector's replication slot (its worker stopped), so the server keeps no WAL
    for it; a no-op if the slot is gone."""
    db.sql(f"SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
           f"WHERE slot_name = '{prefix}_slot'")


def payload(record: TopicRecord) -> dict[str, Any] | None:
    """The envelope of a Debezium record (``before``, ``after``, ``source``, ``op``, ``ts_ms``),
    with the JSON converter's schemas on (under ``payload``) or off; None for a tombstone."""
    value: dict[str, Any] | None = record.value_json()
    if value is None:
        return None
    return value["payload"] if set(value) == {"schema", "payload"} else value


def key_fields(record: TopicRecord) -> dict[str, Any] | None:
    """The fields of a record's key struct (schemas on or off); None for a null key."""
    key: dict[str, Any] | None = record.key_json()
    if key is None:
        return None
    return key["payload"] if set(key) == {"schema", "payload"} else key
