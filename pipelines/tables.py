"""A Delta table addressed by path or by catalog name, and the few operations the sink needs."""

from __future__ import annotations

from dataclasses import dataclass

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType


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

    def exists(self, spark: SparkSession) -> bool:
        """Whether the Delta table exists yet."""
        if self.name:
            return bool(spark.catalog.tableExists(self.name))
        return bool(DeltaTable.isDeltaTable(spark, self.location))

    def delta(self, spark: SparkSession) -> DeltaTable:
        """The table as a ``DeltaTable`` (for MERGE and history)."""
        if self.name:
            return DeltaTable.forName(spark, self.name)
        return DeltaTable.forPath(spark, self.location)

    def read(self, spark: SparkSession, version: int | None = None) -> DataFrame:
        """Read a snapshot of the table, the latest or at ``version``."""
        reader = spark.read.format("delta")
        if version is not None:
            reader = reader.option("versionAsOf", version)
        return reader.table(self.name) if self.name else reader.load(self.path)

    def create_if_missing(
        self, spark: SparkSession, schema: StructType, partition_by: tuple[str, ...] = ()
    ) -> None:
        """Create the table empty with ``schema`` unless it exists (safe to race)."""
        builder = DeltaTable.createIfNotExists(spark).addColumns(schema)
        builder = builder.tableName(self.name) if self.name else builder.location(self.location)
        if partition_by:
            builder = builder.partitionedBy(*partition_by)
        builder.execute()

    def append(self, df: DataFrame) -> None:
        """Append rows (used for bookkeeping tables, never for the target)."""
        writer = df.write.format("delta").mode("append").option("mergeSchema", "true")
        if self.name:
            writer.saveAsTable(self.name)
        else:
            writer.save(self.path)
