"""The file reads of :class:`~pipelines.storage.store.Store`, through the driver JVM: no Spark job.

A classic session has a driver JVM in this process, and its Hadoop ``FileSystem`` reaches every
store Spark reads, with the session's own Hadoop settings (``SessionState.newHadoopConf``: the
``spark.hadoop.*`` keys and credentials a ``binaryFile`` read would use). A lookup through it is
a ``getFileStatus`` or a ``listStatus`` call, where the same read through Spark is a job (about
0.1 s locally, more under load): a micro-batch's checkpoint and log reads then cost
milliseconds (issue 60, "no Spark job for a check the log or a file can answer"). A Spark
Connect client has no JVM, so :func:`driver_files` answers None and the store reads through
Spark.

The answers are the ``binaryFile`` source's for the shapes the store asks about, so a caller
cannot tell the two apart: a Hadoop glob is expanded with ``globStatus``; a matched file counts
unless its name is one Spark's file sources leave out (a leading ``_`` or ``.``, even when named
explicitly); a matched folder counts for the visible files directly in it (Spark leaves out the
files of its plain subfolders too); nothing matched is no file (Spark's ``PATH_NOT_FOUND``).
One shape differs, and no checkpoint or log folder has it: Spark reads a folder holding
``key=value`` subfolders as a partitioned table (their files, not the folder's own).
``tests/pipelines/storage/test_driver_files.py`` holds both readers to the same answers on one
tree.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession


@dataclass(frozen=True)
class FileRow:
    """One file as a read found it.

    Attributes:
        path: its full path, as Hadoop names it (``file:/...``, ``s3a://...``).
        modified_ms: its modification time, epoch milliseconds.
        content: its bytes, when they were asked for.
    """

    path: str
    modified_ms: int
    content: bytes | None = None


def hidden(name: str) -> bool:
    """Whether Spark's file sources leave a file or folder of this name out (``_x``, ``.x``;
    not ``_x=1``, a partition folder, nor ``_metadata``)."""
    if name.startswith(("_common_metadata", "_metadata")):
        return False
    return (name.startswith("_") and "=" not in name) or name.startswith(".") or \
        name.endswith("._COPYING_")


def driver_files(spark: SparkSession) -> DriverFiles | None:
    """The driver JVM's file reads for ``spark``; None for a Spark Connect session."""
    jvm = getattr(spark, "_jvm", None)
    jsession = getattr(spark, "_jsparkSession", None)
    if jvm is None or jsession is None:
        return None
    return DriverFiles(jvm, jsession.sessionState().newHadoopConf())


class DriverFiles:
    """Reads files with the driver JVM's Hadoop ``FileSystem``.

    Args:
        jvm: the Py4J view of the driver JVM.
        conf: the session's Hadoop configuration (a Java object).
    """

    def __init__(self, jvm: Any, conf: Any) -> None:
        self._jvm, self._conf = jvm, conf

    def rows(self, pattern: str, content: bool) -> list[FileRow]:
        """The files a ``binaryFile`` read of ``pattern`` (a Hadoop glob) would give; empty when
        nothing matches."""
        path = self._jvm.org.apache.hadoop.fs.Path(pattern)
        fs = path.getFileSystem(self._conf)
        matched = fs.globStatus(path)
        if matched is None:
            return []
        out: list[FileRow] = []
        for status in matched:
            if status.isDirectory():
                out += [self._row(fs, s, content) for s in self._leaves(fs, status.getPath())]
            elif not hidden(status.getPath().getName()):
                out.append(self._row(fs, status, content))
        return out

    def first(self, location: str) -> list[FileRow] | None:
        """At most one file at ``location`` (the file, or a folder's first file), or None when
        nothing exists there (an empty folder exists, and holds no file)."""
        path = self._jvm.org.apache.hadoop.fs.Path(location)
        fs = path.getFileSystem(self._conf)
        if not fs.exists(path):
            return None
        status = fs.getFileStatus(path)
        if not status.isDirectory():
            return [] if hidden(path.getName()) else [self._row(fs, status, False)]
        return [self._row(fs, s, False) for s in self._leaves(fs, path, limit=1)]

    def _leaves(self, fs: Any, folder: Any, limit: int | None = None) -> Iterator[Any]:
        """The visible files directly in ``folder``, at most ``limit``."""
        found = 0
        listing = fs.listStatusIterator(folder)
        while listing.hasNext():
            status = listing.next()
            if status.isDirectory() or hidden(status.getPath().getName()):
                continue
            yield status
            found += 1
            if limit is not None and found >= limit:
                return

    def _row(self, fs: Any, status: Any, content: bool) -> FileRow:
        data: bytes | None = None
        if content:
            stream = fs.open(status.getPath())
            try:
                data = bytes(self._jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
            finally:
                stream.close()
        return FileRow(str(status.getPath().toString()), int(status.getModificationTime()),
                       data)
