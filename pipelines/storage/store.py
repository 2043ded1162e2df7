"""Files of the checkpoint and the Delta log: the one door to storage.

A checkpoint or a table may be a local folder, a ``file:`` URI, ``s3://``, ``abfss://``,
``dbfs:/`` or a Unity Catalog Volume, and under Spark Connect only the server can reach it. So
a Spark Connect session reads through Spark's own ``binaryFile`` source (path,
modificationTime, length, content), with the session's credentials: each call is one Spark job
(about 0.1 s locally), so callers that need several files of one folder read them together
(:meth:`Store.read_many`: one job). A classic session gives the same answers from its driver
JVM's Hadoop ``FileSystem``, with no Spark job (:mod:`pipelines.storage.driver_files`): the
reads a micro-batch makes before its commit (its planned offsets, the target's newest commits,
the lease) then cost milliseconds.

Spark's file sources leave out every name starting with ``_`` or ``.`` (``.0.crc``), even a
file named explicitly: ``_last_checkpoint`` cannot be read through them.

Renaming and deleting have no Spark API: they are in :mod:`pipelines.runtime.hadoop` (classic
mode only).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession

from pipelines.storage.driver_files import DriverFiles, FileRow, driver_files

#: Characters Hadoop's glob syntax gives a meaning; escaped in names a glob must match as is.
_GLOB = re.compile(r"([{}\[\]*?\\])")


def _missing(exc: BaseException) -> bool:
    text = str(exc)
    return "PATH_NOT_FOUND" in text or "Path does not exist" in text or \
        "FileNotFoundException" in text


def _key(path: str) -> str:
    """A location as Spark reports it, without the scheme's ``file:`` prefix differences."""
    if path.startswith("file:"):
        path = re.sub(r"^file:/+", "/", path)
    return path.rstrip("/")


def parent_and_name(location: str) -> tuple[str, str]:
    """``folder/name`` split at its last ``/``."""
    folder, _, name = location.rstrip("/").rpartition("/")
    return folder, name


@dataclass(frozen=True)
class SparkFiles:
    """Reads files through a session's ``binaryFile`` source: one Spark job a call.

    Attributes:
        spark: the session (classic or Spark Connect) whose Spark reaches the files.
    """

    spark: SparkSession

    def rows(self, pattern: str, content: bool) -> list[FileRow]:
        """The files of a ``binaryFile`` read of ``pattern`` (a Hadoop glob); empty when
        nothing matches."""
        columns = ["path", "modificationTime"] + (["content"] if content else [])
        try:
            rows = self.spark.read.format("binaryFile").load(pattern).select(*columns).collect()
        except Exception as exc:
            if _missing(exc):
                return []
            raise
        return [FileRow(str(r["path"]), _millis(r["modificationTime"]),
                        bytes(r["content"]) if content else None) for r in rows]

    def first(self, location: str) -> list[FileRow] | None:
        """At most one file at ``location`` (a file, or a folder's first file), or None when
        nothing exists there. Spark still lists a folder, but only one row comes back."""
        try:
            rows = (self.spark.read.format("binaryFile").load(_escape(location))
                    .select("path", "modificationTime").limit(1).collect())
        except Exception as exc:
            if _missing(exc):
                return None
            raise
        return [FileRow(str(r["path"]), _millis(r["modificationTime"])) for r in rows]


def files_of(spark: SparkSession) -> DriverFiles | SparkFiles:
    """The reader for ``spark``: its driver JVM's file system (classic), else Spark's."""
    return driver_files(spark) or SparkFiles(spark)


@dataclass(frozen=True)
class Store:
    """Reads the checkpoint's and the Delta log's files (see the module).

    Attributes:
        spark: the session (classic or Spark Connect) whose Spark reaches the files.
    """

    spark: SparkSession

    def _rows(self, paths: list[str], content: bool) -> list[FileRow]:
        files = files_of(self.spark)
        return [row for path in paths for row in files.rows(path, content)]

    def read_many(self, folder: str, names: Iterable[str]) -> dict[str, tuple[str, int]]:
        """The UTF-8 texts and modification times (epoch ms) of the named files of ``folder``
        that exist, in one Spark job.

        Returns:
            ``name -> (text, modified ms)``; missing names are left out.
        """
        return {name: ((row.content or b"").decode("utf-8", errors="replace"), row.modified_ms)
                for name, row in self._named(folder, names, content=True).items()}

    def stamps(self, folder: str, names: Iterable[str]) -> dict[str, int]:
        """``name -> modified ms`` of the named files of ``folder`` that exist, in one Spark job
        that reads no content: each name is one lookup, however many files the folder holds."""
        return {name: row.modified_ms
                for name, row in self._named(folder, names, content=False).items()}

    def _named(self, folder: str, names: Iterable[str], content: bool) -> dict[str, FileRow]:
        wanted = set(names)
        if not wanted:
            return {}
        rows = self._rows([named(folder, sorted(wanted))], content=content)
        return {name: row for row in rows
                if (name := _key(row.path).rpartition("/")[2]) in wanted}

    def read_stamped(self, location: str) -> tuple[str, int] | None:
        """A file's UTF-8 text and modification time (epoch ms), or None when it is missing."""
        folder, name = parent_and_name(location)
        return self.read_many(folder, [name]).get(name)

    def read_text(self, location: str) -> str | None:
        """The UTF-8 text of a file, or None when there is no such file."""
        found = self.read_stamped(location)
        return None if found is None else found[0]

    def modified_ms(self, location: str) -> int | None:
        """A file's modification time in epoch milliseconds, or None when it is missing."""
        rows = self._rows([_escape(location)], content=False)
        return rows[0].modified_ms if rows else None

    def listing(self, folder: str, glob: str = "*") -> dict[str, int]:
        """``name -> modified ms`` of the files directly in ``folder`` whose names match
        ``glob`` (Hadoop glob syntax); empty when the folder is missing. Reads no content."""
        rows = self._rows([f"{_escape(folder.rstrip('/'))}/{glob}"], content=False)
        return {_key(r.path).rpartition("/")[2]: r.modified_ms for r in rows}

    def below(self, folder: str, glob: str) -> dict[str, int]:
        """``path -> modified ms`` of the files below ``folder`` that match ``glob`` (which may
        span folders: ``*/*``), each path relative to ``folder``; empty when it is missing."""
        base = _key(folder)
        rows = self._rows([f"{_escape(folder.rstrip('/'))}/{glob}"], content=False)
        return {_key(r.path)[len(base) + 1:]: r.modified_ms
                for r in rows if _key(r.path).startswith(base + "/")}

    def names(self, folder: str) -> list[str]:
        """The names of the files directly inside ``folder`` (empty if it does not exist)."""
        return sorted(self.listing(folder))

    def holds_files(self, folder: str) -> bool:
        """Whether ``folder`` holds a file Spark reads (names starting with ``_`` or ``.`` do
        not count). Spark still lists the folder, but only one row comes back."""
        return bool(self._first(folder.rstrip("/")))

    def exists(self, location: str) -> bool:
        """Whether a file or folder exists at ``location`` (an empty folder counts)."""
        return self._first(location) is not None

    def _first(self, location: str) -> list[FileRow] | None:
        """At most one file row at ``location`` (a file, or a folder's first file), or None when
        nothing exists there."""
        return files_of(self.spark).first(location)


def named(folder: str, names: list[str]) -> str:
    """A Hadoop glob that matches exactly the ``names`` of ``folder``, looked up one by one.

    Hadoop expands a brace pair that holds a ``/`` into one pattern per alternative, and looks a
    pattern without wildcards up by itself (one ``getFileStatus``; a missing name matches
    nothing). A brace of bare names, ``folder/{a,b}``, would instead list the whole folder and
    match every entry: a cost that grows with the folder, which for a table's ``_delta_log`` is
    its history (bench/README.md, "Reading the log by name"). So the folder's own name goes
    inside the braces: ``parent/{folder/a,folder/b}``. A folder whose own name holds a glob
    character other than ``,`` keeps the listing (correct, only slower): escaped inside the
    braces, such a name matched nothing when tried.
    """
    base = folder.rstrip("/")
    escaped = [_escape(n).replace(",", r"\,") for n in names]
    if len(escaped) == 1:
        return f"{_escape(base)}/{escaped[0]}"
    parent, _, leaf = base.rpartition("/")
    if parent and leaf and not parent.endswith((":", "/")) and _escape(leaf) == leaf:
        inner = leaf.replace(",", r"\,")
        return f"{_escape(parent)}/{{{','.join(f'{inner}/{n}' for n in escaped)}}}"
    return f"{_escape(base)}/{{{','.join(escaped)}}}"


def _escape(text: str) -> str:
    """``text`` with Hadoop's glob characters escaped, to match only itself."""
    return _GLOB.sub(r"\\\1", text)


def _millis(value: Any) -> int:
    """A ``modificationTime`` (a datetime from Spark) in epoch milliseconds."""
    millis: int = round(value.timestamp() * 1000)
    return millis
