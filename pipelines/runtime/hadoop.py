"""Renaming and deleting folders through Hadoop's FileSystem: classic mode only.

Reads go through Spark (:mod:`pipelines.runtime.store`) and work in both modes. Moving a
checkpoint aside (a rolled-back or copied checkpoint, ``deltasink rewind``) and deleting a
replay's own checkpoint have no Spark API, so they use the driver JVM's Hadoop ``FileSystem``
(with the session's Hadoop configuration: the same stores and credentials Spark uses). A Spark
Connect client has no JVM: there these raise :class:`~pipelines.errors.ConnectUnsupportedError`,
saying what to move or delete by hand.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession

from pipelines.errors import ConnectUnsupportedError
from pipelines.runtime.spark import is_connect


@dataclass(frozen=True)
class HadoopFS:
    """A location's FileSystem, reached through the driver JVM (classic mode).

    Attributes:
        spark: the session whose Hadoop configuration is used.
    """

    spark: SparkSession

    def _fs_and_path(self, location: str, doing: str) -> tuple[Any, Any]:
        if is_connect(self.spark):
            raise ConnectUnsupportedError(
                f"{doing} {location} needs the Spark driver's file system, which a Spark "
                "Connect client cannot reach; do it with your store's own tool (e.g. "
                "dbutils.fs.mv / dbutils.fs.rm on Databricks), then run again.")
        path = self.spark._jvm.org.apache.hadoop.fs.Path(location)  # type: ignore[union-attr]
        conf = self.spark._jsc.hadoopConfiguration()  # type: ignore[union-attr]
        return path.getFileSystem(conf), path

    def rename(self, source: str, destination: str) -> bool:
        """Move ``source`` to ``destination`` (which must not exist); True when it moved."""
        fs, path = self._fs_and_path(source, f"moving {destination} aside from")
        _, target = self._fs_and_path(destination, "moving to")
        return bool(fs.rename(path, target))

    def delete(self, location: str, *, recursive: bool = False) -> bool:
        """Delete a file (or a folder, with ``recursive``); True when something was deleted."""
        fs, path = self._fs_and_path(location, "deleting")
        return bool(fs.delete(path, recursive))
