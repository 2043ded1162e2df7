"""Catalog tables (``catalog.schema.table``): checks before a run, and a killed creation ridden out.

**Before anything is created** (:func:`check_name`, called by :mod:`pipelines.preflight`), each
failure one line (a :class:`ConfigError`, exit 2): a catalog the session does not know, a schema
that does not exist, and a name that exists but is a view or a table that is not Delta.

**A killed first creation** (:func:`recover_creation`). Delta's ``CREATE TABLE`` of a managed
table (``CreateDeltaTableCommand``) commits the table's first log entry at the schema's default
location, then registers the name in the metastore. A kill between the two (seen on Spark's Hive
metastore) leaves ``<location>/_delta_log/00000000000000000000.json`` that no name registers, and
every later ``CREATE`` of that name (and ``saveAsTable``) fails with
``DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION``: Delta refuses a managed table over a location that
is not empty. Deleting the leftover has no SQL (and would delete something); so the leftover is
**registered where it is**, with ``CREATE TABLE <name> (<columns>) USING delta LOCATION
'<location>'``, public SQL that runs the same over Spark Connect. Delta itself then checks that
the log's schema and partitioning are exactly the ones given. The name becomes an *external*
table at the location a managed one would have had: the same data, but ``DROP TABLE`` then keeps
its files. The run says so in one line.

A live creation by another run meets the same refusal until it registers the name, so the name
is first awaited a few seconds. Only a leftover that holds nothing but such a killed creation is
registered: a Delta log whose whole history is one managed ``CREATE TABLE`` commit, with no data
file, of exactly this table's columns and partitioning (Delta's own check at the ``CREATE``).
Registering it loses nothing and adopts no one's data. Rarer, a kill
before that commit leaves a ``_delta_log`` folder with no commit in it; then, if no visible file
lies anywhere in the location, the table is created by an empty append (``saveAsTable``), which
Delta accepts over such a folder and which registers a managed table (its columns nullable).
Anything else (files that are not a Delta table, a Delta table with data or more commits) may be
someone else's, and is never adopted: one line names the location and what to do.

Table properties: a registered leftover has those of its killed ``CREATE`` in its first commit,
so the registration names none (Delta would require them to equal the log's exactly, and it adds
some of its own, such as row tracking's column names); a table made by the empty append has
none. Either way the caller then sets any the config wants and the table lacks, as for any
existing table (:mod:`pipelines.sink.properties`).
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from pipelines.errors import ConfigError
from pipelines.sql import ident, literal
from pipelines.storage.store import Store

log = logging.getLogger("deltasink")

#: Delta's error class for a CREATE over a location that holds files.
NON_EMPTY = "DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION"
_LOCATION = re.compile(r"associated location \('([^']+)'\)")


def parts(name: str) -> tuple[str | None, str | None, str]:
    """``(catalog, schema, table)`` of ``catalog.schema.table``, ``schema.table`` or ``table``."""
    bits = [b.strip("`") for b in name.split(".")]
    table = bits[-1]
    schema = bits[-2] if len(bits) >= 2 else None
    catalog = ".".join(bits[:-2]) if len(bits) >= 3 else None
    return catalog, schema, table


def check_name(spark: SparkSession, key: str, name: str) -> None:
    """Fail in one line if ``name`` cannot be this pipeline's Delta table.

    Raises:
        ConfigError: its catalog is unknown to the session, its schema does not exist, or the
            name exists as a view or a table that is not Delta.
    """
    catalog = parts(name)[0]
    if catalog is not None and not _catalog_known(spark, catalog):
        raise ConfigError(f"{key} {name}: catalog {catalog} is not known to this Spark session. "
                          f"Configure it (spark.sql.catalog.{catalog}) or name a catalog the "
                          "session has (SHOW CATALOGS).")
    namespace = name.rpartition(".")[0]
    if namespace and not spark.catalog.databaseExists(namespace):
        raise ConfigError(f"{key} {name}: schema {namespace} does not exist. Create it "
                          f"(CREATE SCHEMA {namespace}) or point {key} at an existing one.")
    if not spark.catalog.tableExists(name):
        return
    kind, provider = describe(spark, name)
    if "VIEW" in kind.upper():
        raise ConfigError(f"{key} {name} is a view, not a table: point {key} at a new name or "
                          "an existing Delta table.")
    if provider.lower() != "delta":
        raise ConfigError(f"{key} {name} is a {provider or 'non-Delta'} table, not Delta: point "
                          f"{key} at a new name or an existing Delta table.")


def _catalog_known(spark: SparkSession, catalog: str) -> bool:
    """Whether the session has ``catalog``: configured (``spark.sql.catalog.<name>``, loaded or
    not yet) or listed by ``SHOW CATALOGS`` (the session catalog, a workspace's catalogs).

    ``SHOW NAMESPACES IN <name>`` cannot tell: an unknown name is taken for a schema of the
    current catalog there.
    """
    if catalog.lower() == "spark_catalog" or spark.conf.get(f"spark.sql.catalog.{catalog}", None):
        return True
    rows = spark.sql("SHOW CATALOGS").collect()
    return catalog.lower() in {str(r[0]).lower() for r in rows}


def describe(spark: SparkSession, name: str) -> tuple[str, str]:
    """``(Type, Provider)`` of an existing table or view, from ``DESCRIBE TABLE EXTENDED``."""
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()
    info = {str(r["col_name"]).strip(): str(r["data_type"] or "").strip() for r in rows}
    return info.get("Type", ""), info.get("Provider", "")


def leftover_location(error: BaseException) -> str | None:
    """The location a ``DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION`` error names, else None."""
    text = str(error)
    if NON_EMPTY not in text:
        return None
    found = _LOCATION.search(text)
    return found.group(1) if found else None


def recover_creation(spark: SparkSession, name: str, schema: StructType, columns: str,
                     partitions: str, location: str) -> None:
    """Create ``name`` over the leftover a killed creation left at ``location``.

    Args:
        spark: the session.
        name: the catalog table, not registered yet.
        schema: its columns, for an empty append.
        columns: its column list as SQL (the CREATE's).
        partitions: `` PARTITIONED BY (...)`` or empty.
        location: where Delta put the leftover (from its error).

    Raises:
        ConfigError: the location holds anything but deltasink's own killed creation.
    """
    if _registered_meanwhile(spark, name):
        return
    path = f"delta.{ident(location)}"
    try:
        history = spark.sql(f"DESCRIBE HISTORY {path}").collect()
    except Exception:
        history = []
    if history:
        files = int(spark.sql(f"DESCRIBE DETAIL {path}").first()["numFiles"] or 0)  # type: ignore[index]
        if not _only_our_creation(history, files):
            raise ConfigError(
                f"table {name}: its location {location} already holds a Delta table "
                f"({len(history)} commits, {files} files) that no name registers. If it is this "
                f"table, register it (CREATE TABLE {name} USING delta LOCATION '{location}'); "
                "else move it away.")
        spark.sql(f"CREATE TABLE IF NOT EXISTS {name} ({columns}) USING delta{partitions} "
                  f"LOCATION {literal(location)}").collect()
        log.warning("table %s: a killed creation had left its first commit at %s with no name; "
                    "registered it there (an external table: DROP TABLE keeps its files)",
                    name, location)
        return
    store = Store(spark)
    if store.below(location, "*") or store.below(location, "*/*") \
            or store.below(f"{location.rstrip('/')}/_delta_log", "*"):
        raise ConfigError(f"table {name}: its location {location} holds files that are not a "
                          f"Delta table. Move them away, or point the pipeline at another name.")
    empty = spark.createDataFrame([], schema)
    empty.write.format("delta").mode("append").saveAsTable(name)
    log.warning("table %s: a killed creation had left an empty Delta log at %s; created the "
                "table over it", name, location)


def _registered_meanwhile(spark: SparkSession, name: str, wait: float = 5.0) -> bool:
    """Whether another writer's creation registers ``name`` within ``wait`` seconds.

    Two runs creating one new table (a group's shared bookkeeping tables) meet the same refusal
    while the other's creation sits between its commit and its registration; that one registers
    within moments. A killed creation never does.
    """
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if spark.catalog.tableExists(name):
            return True
        time.sleep(0.5)
    return bool(spark.catalog.tableExists(name))


def _only_our_creation(history: list[Any], files: int) -> bool:
    """Whether a log holds only one managed ``CREATE TABLE`` commit and no data file."""
    if files or len(history) != 1:
        return False
    row = history[0]
    params = row["operationParameters"] or {}
    return int(row["version"]) == 0 and row["operation"] == "CREATE TABLE" \
        and str(params.get("isManaged", "")).lower() == "true"
