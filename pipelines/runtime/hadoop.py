"""Deleting a folder through Hadoop's FileSystem: classic mode only.

Reads go through Spark (:mod:`pipelines.storage.store`) and work in both modes, and a checkpoint
is retired by a record written through Spark (``pipelines.ledger.checkpoint.retire``), not moved.
Deleting a replay's own temporary checkpoint has no Spark API, so it uses the driver JVM's
Hadoop ``FileSystem`` (with the session's Hadoop configuration: the same stores and credentials
Spark uses). A Spark Connect client has no JVM: there it raises
:class:`~pipelines.errors.ConnectUnsupportedError`, saying what to delete by hand.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession

from pipelines.errors import ConnectUnsupportedError
from pipelines.runtime.sessions import is_connect


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
                "dbutils.fs.rm on Databricks), then run again.")
        path = self.spark._jvm.org.apache.hadoop.fs.Path(location)  # type: ignore[union-attr]
        conf = self.spark._jsc.hadoopConfiguration()  # type: ignore[union-attr]
        return path.getFileSystem(conf), path

    def delete(self, location: str, *, recursive: bool = False) -> bool:
        """Delete a file (or a folder, with ``recursive``); True when something was deleted."""
        fs, path = self._fs_and_path(location, "deleting")
        return bool(fs.delete(path, recursive))
