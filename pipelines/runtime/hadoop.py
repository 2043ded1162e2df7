"""Files through Hadoop's FileSystem API: the one Spark itself uses for the checkpoint.

A checkpoint may be a local folder, a ``file:`` URI, ``s3://``, ``abfss://``, ``dbfs:/`` or a
Unity Catalog Volume. Reading and writing it through the driver JVM's Hadoop ``FileSystem``, with
the session's Hadoop configuration (credentials included), makes deltasink see exactly what Spark
sees, on every store Spark supports. Plain Python file calls would work only for local paths.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession


@dataclass(frozen=True)
class HadoopFS:
    """A location's FileSystem, reached through the driver JVM.

    Attributes:
        spark: the session whose Hadoop configuration is used.
    """

    spark: SparkSession

    def _path(self, location: str) -> Any:
        return self.spark._jvm.org.apache.hadoop.fs.Path(location)  # type: ignore[union-attr]

    def _fs(self, location: str) -> Any:
        conf = self.spark._jsc.hadoopConfiguration()  # type: ignore[union-attr]
        return self._path(location).getFileSystem(conf)

    def exists(self, location: str) -> bool:
        """Whether a file or folder exists at ``location``."""
        return bool(self._fs(location).exists(self._path(location)))

    def read_text(self, location: str) -> str | None:
        """The UTF-8 text of a file, or None when there is no such file."""
        fs, path = self._fs(location), self._path(location)
        if not fs.exists(path) or fs.getFileStatus(path).isDirectory():
            return None
        return self._read(fs, path)

    def _read(self, fs: Any, path: Any) -> str:
        stream = fs.open(path)
        try:
            raw = self.spark._jvm.org.apache.commons.io.IOUtils.toByteArray(stream)  # type: ignore[union-attr]
        finally:
            stream.close()
        return bytes(raw).decode("utf-8", errors="replace")

    def read_stamped(self, location: str) -> tuple[str, int] | None:
        """A file's UTF-8 text and modification time (epoch ms), or None when it is missing.

        One status call and one open: cheaper than ``modified_ms`` plus ``read_text``.
        """
        fs, path = self._fs(location), self._path(location)
        try:
            status = fs.getFileStatus(path)
        except Exception as exc:  # FileNotFoundException, wrapped by Py4J
            if "FileNotFound" in str(exc) or "does not exist" in str(exc):
                return None
            raise
        return self._read(fs, path), int(status.getModificationTime())

    def write_text(self, location: str, text: str, *, overwrite: bool) -> bool:
        """Write a file; with ``overwrite=False`` fail (return False) if it exists.

        Creating with ``overwrite=False`` is atomic on HDFS, local disks and ADLS Gen2; on object
        stores without conditional writes it is best effort, which is why the lease is also
        checked again before every commit (see ``pipelines.lease``).
        """
        fs, path = self._fs(location), self._path(location)
        try:
            out = fs.create(path, overwrite)
        except Exception as exc:  # FileAlreadyExistsException, wrapped by Py4J
            if "FileAlreadyExists" in str(exc) or "already exists" in str(exc):
                return False
            raise
        try:
            out.write(bytearray(text.encode("utf-8")))
        finally:
            out.close()
        return True

    def names(self, folder: str) -> list[str]:
        """The names of the entries directly inside ``folder`` (empty if it does not exist)."""
        fs, path = self._fs(folder), self._path(folder)
        if not fs.exists(path):
            return []
        return [str(status.getPath().getName()) for status in fs.listStatus(path)]

    def modified_ms(self, location: str) -> int | None:
        """The store's modification time of a file in epoch milliseconds, or None if missing."""
        fs, path = self._fs(location), self._path(location)
        return int(fs.getFileStatus(path).getModificationTime()) if fs.exists(path) else None

    def rename(self, source: str, destination: str) -> bool:
        """Move ``source`` to ``destination`` (which must not exist); True when it moved."""
        return bool(self._fs(source).rename(self._path(source), self._path(destination)))

    def delete(self, location: str, *, recursive: bool = False) -> bool:
        """Delete a file (or a folder, with ``recursive``); True when something was deleted."""
        return bool(self._fs(location).delete(self._path(location), recursive))
