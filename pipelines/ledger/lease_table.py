"""The lease's one-row Delta table: its SQL, its creation (safe to race) and the row as read.

No decisions here: :class:`pipelines.ledger.lease.Lease` says who may take the row and when.
Every function takes the table's folder (``<checkpoint>/_deltasink/lease_table``) and a session
that reaches it: the client's, or a ``foreachBatch`` worker's under Spark Connect.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession

#: How often a racing creation (of the table, or of its row) is tried before it gives up.
ATTEMPTS = 5
_COLUMNS = ("slot INT, token STRING, pipeline STRING, host STRING, pid BIGINT, "
            "renewed_at TIMESTAMP")
#: The lease row's columns other than ``slot``, held by nobody.
_FREE_ROW = ("CAST(NULL AS STRING) AS token, CAST(NULL AS STRING) AS pipeline, "
             "CAST(NULL AS STRING) AS host, CAST(NULL AS BIGINT) AS pid, "
             "CAST(NULL AS TIMESTAMP) AS renewed_at")
#: Removed files of the lease table are kept this long, then deleted by :func:`tidy`.
_FILE_RETENTION = "delta.deletedFileRetentionDuration"
_PROPERTIES = ("'delta.logRetentionDuration' = 'interval 1 hours', "
               f"'{_FILE_RETENTION}' = 'interval 1 hours', "
               "'delta.checkpointInterval' = '10', "
               "'delta.enableDeletionVectors' = 'false'")


@dataclass(frozen=True)
class Holder:
    """The lease row as read: who holds it, and how long ago it was renewed."""

    token: str | None
    pipeline: str | None
    host: str | None
    pid: int
    age_s: float
    tag: str | None = None
    """What a compare-and-set of the lease matches besides the token: the S3 object's ETag;
    None for the Delta row, whose ``UPDATE`` matches the token."""


def quote(text: str) -> str:
    """A SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def sql_name(table: str) -> str:
    """The table in a SQL statement: ``delta.`<folder>```."""
    return "delta.`" + table.replace("`", "``") + "`"


def missing(exc: BaseException) -> bool:
    """Whether ``exc`` says the lease table is not there (or has no commit yet)."""
    text = str(exc)
    return any(sign in text for sign in ("PATH_NOT_FOUND", "DELTA_MISSING_DELTA_TABLE",
                                         "is not a Delta table", "DELTA_TABLE_NOT_FOUND"))


def conflict(exc: BaseException) -> bool:
    """Whether ``exc`` is a lost race: a concurrent commit, or two creations of the table (the
    loser of a table's first commit sees ``DELTA_PROTOCOL_CHANGED``/``DELTA_METADATA_CHANGED``)."""
    text = f"{type(exc).__name__}: {exc}"
    return any(sign in text for sign in (
        "Concurrent", "DELTA_CONCURRENT", "DELTA_PROTOCOL_CHANGED", "DELTA_METADATA_CHANGED",
        "already exists", "TABLE_OR_VIEW_ALREADY_EXISTS", "DELTA_TABLE_ALREADY_EXISTS"))


def read(spark: SparkSession, table: str) -> Holder | None:
    """The lease row, or None when there is no lease table yet."""
    try:
        rows = spark.sql(
            "SELECT token, pipeline, host, pid, "
            "unix_millis(current_timestamp()) - unix_millis(renewed_at) AS age_ms "
            f"FROM {sql_name(table)} WHERE slot = 0").collect()
    except Exception as exc:
        if missing(exc):
            return None
        raise
    if not rows:
        return None
    row: Any = rows[0]
    age = row["age_ms"]
    return Holder(row["token"], row["pipeline"], row["host"], int(row["pid"] or 0),
                  float(age) / 1000 if age is not None else float("inf"))


def ensure(spark: SparkSession, table: str) -> None:
    """Create the table and its one row unless they exist (safe to race).

    A creation cut short by a kill leaves a ``_delta_log`` folder with no commit in it: the
    SQL ``CREATE TABLE IF NOT EXISTS`` then does nothing and ``CREATE`` refuses a location
    that is not empty, so the table is created by appending its row instead (a DataFrame
    write accepts such a folder). Two runs that do it at once conflict on the new table's
    metadata; the loser retries and finds the row.
    """
    name = sql_name(table)
    for attempt in range(ATTEMPTS):
        try:
            spark.sql(f"CREATE TABLE IF NOT EXISTS {name} ({_COLUMNS}) "
                      f"USING delta TBLPROPERTIES ({_PROPERTIES})")
            spark.sql(f"MERGE INTO {name} t USING (SELECT 0 AS slot) s "
                      "ON t.slot = s.slot WHEN NOT MATCHED THEN INSERT (slot) VALUES (0)"
                      ).collect()
            return
        except Exception as exc:
            if missing(exc) and attempt < ATTEMPTS - 1:
                _create_by_append(spark, table)
                continue
            if not conflict(exc) or attempt == ATTEMPTS - 1:
                raise
            time.sleep(0.2 * (attempt + 1))


def create_held(spark: SparkSession, table: str, holder: str) -> bool:
    """Create the table with its one row already held: ``holder`` is the row's columns other
    than ``slot`` as a SQL select list. One commit (``CREATE TABLE IF NOT EXISTS ... AS
    SELECT``), where creating the table and taking its lease apart take three.

    Returns:
        False when the creation lost a race or met a killed creation's leftovers; True when it
        ran, which proves nothing by itself: ``IF NOT EXISTS`` creates nothing when another run
        created the table first, so the caller reads the row back.
    """
    try:
        spark.sql(f"CREATE TABLE IF NOT EXISTS {sql_name(table)} USING delta "
                  f"TBLPROPERTIES ({_PROPERTIES}) AS SELECT CAST(0 AS INT) AS slot, "
                  f"{holder}").collect()
    except Exception as exc:
        if missing(exc) or conflict(exc) or "NON_EMPTY" in str(exc):
            return False
        raise
    return True


def holder_select(token: str, pipeline: str, host: str, pid: int) -> str:
    """A holder's columns other than ``slot`` as a SQL select list, renewed now."""
    return (f"{quote(token)} AS token, {quote(pipeline)} AS pipeline, {quote(host)} AS host, "
            f"CAST({pid} AS BIGINT) AS pid, current_timestamp() AS renewed_at")


def update_token(spark: SparkSession, table: str, holder: tuple[str, str, str, int],
                 seen: str | None) -> bool:
    """Set the row's holder (token, pipeline, host, pid) if its token is still ``seen`` (None:
    a free row); whether it was set.

    Delta's ``UPDATE`` is a compare-and-set: it commits only if no other commit changed the
    row since it read it (else a concurrent-modification conflict), and it reports the rows
    it changed, so one row changed means the row is the holder's. A missing table or a
    conflict is "not set".
    """
    token, pipeline, host, pid = holder
    matches = "token IS NULL" if seen is None else f"token = {quote(seen)}"
    try:
        rows = spark.sql(
            f"UPDATE {sql_name(table)} SET token = {quote(token)}, "
            f"pipeline = {quote(pipeline)}, host = {quote(host)}, "
            f"pid = {pid}, renewed_at = current_timestamp() "
            f"WHERE slot = 0 AND {matches}").collect()
    except Exception as exc:
        if missing(exc) or conflict(exc):
            return False
        raise
    counted = rows[0].asDict().get("num_affected_rows") if rows else None
    if counted is not None:
        return int(counted) == 1
    now = read(spark, table)  # a Delta that does not report the rows it changed
    return now is not None and now.token == token


def renew(spark: SparkSession, table: str, token: str) -> None:
    """Refresh ``renewed_at`` if the row still holds ``token``."""
    spark.sql(f"UPDATE {sql_name(table)} SET renewed_at = current_timestamp() "
              f"WHERE slot = 0 AND token = {quote(token)}").collect()


def tidy(spark: SparkSession, table: str, retain_hours: int) -> None:
    """Delete the row's old files: every renewal rewrites the one row into a new file, and
    Delta keeps the ones it replaced until a ``VACUUM``. The table's own
    ``delta.deletedFileRetentionDuration`` is set to ``retain_hours`` first (a table created
    before this kept Delta's 7 days), so Delta's retention check allows it. The lease's history
    serves nothing: every read and compare-and-set is of the newest version."""
    name = sql_name(table)
    wanted = f"interval {retain_hours} hours"
    rows = spark.sql(f"SHOW TBLPROPERTIES {name} ('{_FILE_RETENTION}')").collect()
    if not rows or str(rows[0]["value"]) != wanted:
        spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ('{_FILE_RETENTION}' = '{wanted}')")
    spark.sql(f"VACUUM {name} RETAIN {retain_hours} HOURS").collect()


def clear(spark: SparkSession, table: str, token: str) -> None:
    """Free the row if it still holds ``token``."""
    spark.sql(f"UPDATE {sql_name(table)} SET token = NULL, renewed_at = NULL "
              f"WHERE slot = 0 AND token = {quote(token)}").collect()


def _create_by_append(spark: SparkSession, table: str) -> None:
    """Create the table over a creation's leftovers: append its one (free) row."""
    try:
        (spark.sql(f"SELECT 0 AS slot, {_FREE_ROW}").write.format("delta")
         .mode("append").save(table))
        spark.sql(f"ALTER TABLE {sql_name(table)} SET TBLPROPERTIES ({_PROPERTIES})")
    except Exception as exc:
        if not conflict(exc):
            raise
