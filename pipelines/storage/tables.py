"""A Delta table addressed by path or by catalog name, and the few operations the sink needs.

Every operation is Delta SQL or the plain DataFrame API, so it runs the same in classic mode and
over Spark Connect (``DeltaTable`` would need Delta's Connect plugin on the server).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from pipelines.sql import ident, literal
from pipelines.storage import catalog
from pipelines.storage.store import Store


def column_ddl(schema: StructType) -> str:
    """``schema`` as the column list of a CREATE TABLE (nullability kept)."""
    return ", ".join(f"{ident(f.name)} {f.dataType.simpleString()}"
                     + ("" if f.nullable else " NOT NULL") for f in schema.fields)


@dataclass(frozen=True)
class TableRef:
    """A Delta table, by ``path`` (a folder or URI) or by ``name`` (catalog.schema.table)."""

    path: str | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        if bool(self.path) == bool(self.name):
            raise ValueError("a table needs exactly one of path or name")

    @property
    def location(self) -> str:
        """The path, or the name for catalog tables."""
        return self.path or self.name or ""

    def describe(self) -> str:
        """A short human-readable location."""
        return self.name or f"delta.`{self.path}`"

    @property
    def sql(self) -> str:
        """The table in a SQL statement: its name, or ``delta.`<path>```."""
        return self.name or f"delta.{ident(self.path or '')}"

    def exists(self, spark: SparkSession) -> bool:
        """Whether the Delta table exists yet (a path: its ``_delta_log`` holds a file)."""
        if self.name:
            return bool(spark.catalog.tableExists(self.name))
        return Store(spark).holds_files(f"{self.location.rstrip('/')}/_delta_log")

    def history(self, spark: SparkSession, limit: int | None = None) -> DataFrame:
        """``DESCRIBE HISTORY``: the newest ``limit`` commits (all when None), newest first."""
        return spark.sql(f"DESCRIBE HISTORY {self.sql}" + (f" LIMIT {int(limit)}" if limit else ""))

    def latest_version(self, spark: SparkSession) -> int:
        """The newest committed version."""
        return int(self.history(spark, 1).select("version").collect()[0][0])

    def detail(self, spark: SparkSession) -> Any:
        """The ``DESCRIBE DETAIL`` row (format, location, partition columns, properties...)."""
        return spark.sql(f"DESCRIBE DETAIL {self.sql}").first()

    def restore(self, spark: SparkSession, version: int) -> None:
        """``RESTORE`` the table to ``version`` (a new commit)."""
        spark.sql(f"RESTORE TABLE {self.sql} TO VERSION AS OF {int(version)}").collect()

    def read(self, spark: SparkSession, version: int | None = None) -> DataFrame:
        """Read a snapshot of the table, the latest or at ``version``."""
        reader = spark.read.format("delta")
        if version is not None:
            reader = reader.option("versionAsOf", version)
        return reader.table(self.name) if self.name else reader.load(self.path)

    def create_if_missing(
        self, spark: SparkSession, schema: StructType, partition_by: tuple[str, ...] = (),
        properties: Mapping[str, str] | None = None, cluster_by: tuple[str, ...] = (),
    ) -> None:
        """Create the table empty with ``schema`` unless it exists (safe to race), partitioned
        by ``partition_by`` or clustered by ``cluster_by`` (liquid clustering).

        ``properties`` are its Delta table properties (``TBLPROPERTIES``). A catalog table whose
        creation a kill cut short is created over what Delta left, if that holds nothing but the
        killed creation (:func:`pipelines.storage.catalog.recover_creation`); anything else there
        is refused in one line.
        """
        parts = (f" PARTITIONED BY ({', '.join(map(ident, partition_by))})" if partition_by
                 else f" CLUSTER BY ({', '.join(map(ident, cluster_by))})" if cluster_by else "")
        props = ", ".join(f"{literal(k)} = {literal(v)}" for k, v in (properties or {}).items())
        try:
            spark.sql(f"CREATE TABLE IF NOT EXISTS {self.sql} ({column_ddl(schema)}) "
                      f"USING delta{parts}{f' TBLPROPERTIES ({props})' if props else ''}"
                      ).collect()
        except Exception as exc:
            leftover = catalog.leftover_location(exc) if self.name else None
            if leftover and self.name and not self.exists(spark):
                catalog.recover_creation(spark, self.name, schema, column_ddl(schema), parts,
                                         leftover)  # its properties: see that module
            elif not self.exists(spark):  # a racing writer created it first: fine
                raise

    def merge(self, source: DataFrame, condition: str, clauses: str) -> list[Any]:
        """``MERGE INTO`` this table (alias ``t``) from ``source`` (alias ``s``).

        The source is a temp view of a unique name, dropped afterwards: under Spark Connect a
        ``foreachBatch`` worker shares its server session with the client.

        Args:
            source: the rows to merge (its session runs the statement).
            condition: the ON condition, SQL.
            clauses: the WHEN clauses, SQL.

        Returns:
            The MERGE's result rows: one row of counts when Delta committed, none when it
            skipped the commit as an already seen txn (``txnAppId``/``txnVersion``).
        """
        view = f"deltasink_source_{uuid.uuid4().hex}"
        spark = source.sparkSession
        source.createOrReplaceTempView(view)
        try:
            return list(spark.sql(f"MERGE INTO {self.sql} t USING {ident(view)} s "
                                  f"ON {condition} {clauses}").collect())
        finally:
            spark.catalog.dropTempView(view)

    def append(self, df: DataFrame) -> None:
        """Append rows (used for bookkeeping tables, never for the target)."""
        writer = df.write.format("delta").mode("append").option("mergeSchema", "true")
        if self.name:
            writer.saveAsTable(self.name)
        else:
            writer.save(self.path)
