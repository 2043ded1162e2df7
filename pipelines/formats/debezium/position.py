"""A change's source position: the order of a key's changes, read from Debezium's source block.

Debezium is at-least-once: after a crash it re-sends every change since its last flushed offset,
at higher Kafka offsets, with the *same* source block (measured: ``tests/pipelines/cdc/
test_debezium_restarts.py``). So a key's changes are ordered by where they happened in the
database, never by where they sit in Kafka, and two changes at one position are one change
(a duplicate). The position is one ``decimal(38,0)``, comparable across the connector's records:

* **Postgres** (``source.connector = postgresql``): ``source.lsn``, the change's WAL position.
  A row's changes take its row lock in turn, so each commits before the next is written: one
  key's LSNs rise with its changes. A snapshot's rows carry the snapshot's LSN, above every
  change they include; a snapshot taken again (no offsets flushed) has a later one.
  ``source.sequence`` (``[last commit LSN, LSN]``) adds nothing per key, and its first element
  is null for the first transaction after each connector start, so it is not used.
* **MySQL / MariaDB**: the binlog file's number, the position in it, then the row in the event
  (``file * 10^16 + pos * 10^6 + row``: a binlog file is at most 1 GiB).
* **Any other connector**: ``source.ts_ms``, then the Kafka partition and offset
  (``ts_ms * 10^24 + partition * 10^19 + offset``). A change re-sent by such a connector counts
  as a newer version with equal values.

Known limit (Postgres): a transaction that wrote a row before a snapshot began and committed
after it has a change LSN below the snapshot's; the snapshot's row, read before that commit,
then wins. Debezium's own offsets have the same blind spot.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

#: The position's Spark type.
POSITION_TYPE = "decimal(38,0)"


def _number(source: Column, path: str) -> Column:
    return F.try_variant_get(source, path, POSITION_TYPE)


def _times(value: Column, power: int) -> Column:
    return F.try_multiply(value, F.lit(f"1{'0' * power}").cast(POSITION_TYPE))


def _plus(*parts: Column) -> Column:
    total = parts[0]
    for part in parts[1:]:
        total = F.try_add(total, part)
    return total.cast(POSITION_TYPE)


def position(source: Column, partition: Column, offset: Column) -> Column:
    """The change's position (see the module), or null when its source block lacks one.

    Args:
        source: the envelope's ``source`` block (a variant).
        partition: the record's Kafka partition.
        offset: the record's Kafka offset.
    """
    connector = F.lower(F.try_variant_get(source, "$.connector", "string"))
    binlog = F.regexp_extract(F.try_variant_get(source, "$.file", "string"), r"([0-9]+)$", 1)
    binlog_number = F.when(binlog != F.lit(""), binlog.try_cast(POSITION_TYPE))
    mysql = _plus(_times(binlog_number, 16), _times(_number(source, "$.pos"), 6),
                  F.coalesce(_number(source, "$.row"), F.lit(0).cast(POSITION_TYPE)))
    other = _plus(_times(_number(source, "$.ts_ms"), 24),
                  _times(partition.cast(POSITION_TYPE), 19), offset.cast(POSITION_TYPE))
    return (F.when(connector == F.lit("postgresql"), _number(source, "$.lsn"))
            .when(connector.isin("mysql", "mariadb"), mysql)
            .otherwise(other))
