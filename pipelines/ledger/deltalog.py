"""A path table's Delta log read by file name, so the cost does not grow with its history.

``DESCRIBE HISTORY`` lists the whole ``_delta_log`` folder on stores whose listing cannot start at
a name (a local disk, HDFS): on a table with 10,000 commits that listing costs more than
everything else deltasink reads at start. The commit files are named by version (``%020d.json``),
so the newest ones can be found and opened by name instead, through Spark
(``pipelines.storage.store``: the same in classic mode and over Spark Connect):

- the newest version: ``_last_checkpoint`` names a version Delta checkpointed (every ten
  commits), and one glob over the names that share its leading digits lists the commits after it
  (two Spark jobs; a further glob only past 100 commits without a checkpoint). Hadoop lists the
  folder to match that glob, so this read does grow with the log: a run does it when it starts,
  and a batch only when the table moved on too far since its last look (:meth:`near`). Spark's
  file sources do not read ``_last_checkpoint`` (a name starting with ``_``), so the globs start
  at version 0; past :data:`_GLOBS` of them the log is left to ``DESCRIBE HISTORY`` (one
  listing, in the JVM);
- the newest ``n`` commits' files are read in one Spark job, each name looked up by itself
  (:func:`pipelines.storage.store.named`): this is each batch's read, and its cost stays flat
  however long the log grows. Each commit's timestamp is its file's modification time, which is
  what ``DESCRIBE HISTORY`` reports and what ``RESTORE TO TIMESTAMP`` resolves against.

Only tables addressed by path use it. Catalog tables (``ref.name``) keep ``DESCRIBE HISTORY``:
on Unity Catalog the storage is the catalog's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pipelines.storage.store import Store

#: Versions one glob covers: the last ``_WIDTH`` digits of the 20-digit name are wildcards.
_WIDTH = 2

#: Globs :meth:`DeltaLogFiles.latest_version` makes before it leaves a long log to Delta. Spark's
#: file sources leave out names starting with ``_``, so ``_last_checkpoint`` is not read through
#: them (found 2026-11-29) and the walk starts at version 0; each glob lists the whole folder,
#: so an unbounded walk cost one listing per 100 versions (173 a day at a 5 s trigger).
_GLOBS = 3

#: How far past a known version :meth:`DeltaLogFiles.near` looks for the newest one. A running
#: query's table moves by one or two versions a batch (its MERGE, now and then a compaction);
#: each name past the newest is one lookup that finds nothing (two requests on S3).
NEAR = 8


@dataclass(frozen=True)
class LogCommit:
    """The ``commitInfo`` of one version, with the fields (and names) ``history()`` reports."""

    version: int
    timestamp: datetime
    operation: str
    operationParameters: dict[str, str | None]
    userMetadata: str | None
    operationMetrics: dict[str, str] = field(default_factory=dict)

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)


@dataclass(frozen=True)
class DeltaLogFiles:
    """The ``_delta_log`` folder of the table at ``location``, read through Spark.

    Attributes:
        store: the session's file reads.
        location: the table's folder or URI.
    """

    store: Store
    location: str

    @property
    def _folder(self) -> str:
        return f"{self.location.rstrip('/')}/_delta_log"

    def latest_version(self) -> int | None:
        """The newest committed version; None when the log holds no commit file, or more than
        :data:`_GLOBS` blocks of 100 from where the walk starts (the caller then asks Delta)."""
        text = self.store.read_text(f"{self._folder}/_last_checkpoint")
        try:
            low = int(json.loads(text)["version"]) if text else 0
        except (ValueError, KeyError, TypeError):
            low = 0  # a torn _last_checkpoint: start from the first commit's block
        span = 10 ** _WIDTH
        block = low // span
        latest: int | None = None
        for _ in range(_GLOBS):  # each glob lists the commits named block*span .. +span-1
            prefix = f"{block * span:020d}"[:-_WIDTH]
            found = [int(name[:20]) for name in self.store.listing(
                self._folder, prefix + "?" * _WIDTH + ".json")]
            if not found:
                return latest
            latest = max(found)
            if latest % span != span - 1:
                return latest
            block += 1  # the block is full: the newest may be in the next one
        return None  # a long log: each further glob would list the folder again

    def commits(self, versions: list[int]) -> dict[int, LogCommit]:
        """The ``commitInfo`` of each version whose file still exists, in one Spark job."""
        names = {f"{v:020d}.json": v for v in versions}
        return {names[name]: _parse(names[name], text, modified)
                for name, (text, modified) in self.store.read_many(self._folder, names).items()}

    def commit(self, version: int) -> LogCommit | None:
        """The ``commitInfo`` of ``version``, or None when its file is gone (log cleanup)."""
        return self.commits([version]).get(version)

    def near(self, version: int, limit: int) -> list[LogCommit] | None:
        """The newest ``limit`` commits, newest first, in one Spark job, when the table's newest
        version is at most :data:`NEAR` past ``version`` (a version read before: a running
        query's hint). None when it is not (more commits since, or the table was replaced):
        the caller reads the log as :meth:`newest` does.

        The commit files are named by version and Delta writes them in order, so the newest
        name that exists in ``version .. version + NEAR - 1`` is the newest version when it is
        not the last name of that range.
        """
        low = max(0, version - limit + 1)
        found = self.commits(list(range(low, version + NEAR)))
        if version not in found or max(found) >= version + NEAR - 1:
            return None
        return self._down_from(max(found), found, limit)

    def newest(self, limit: int | None) -> list[LogCommit] | None:
        """The newest ``limit`` commits (all still in the log when None), newest first.

        None when the log cannot be read by name (no commit file where ``_last_checkpoint``
        points, a log too long to walk, or no log at all): the caller then asks Delta's
        ``DESCRIBE HISTORY``.
        """
        latest = self.latest_version()
        if latest is None:
            return None
        oldest = 0 if limit is None else max(0, latest - limit + 1)
        return self._down_from(latest, self.commits(list(range(oldest, latest + 1))), limit)

    @staticmethod
    def _down_from(latest: int, found: dict[int, LogCommit], limit: int | None
                   ) -> list[LogCommit]:
        oldest = 0 if limit is None else max(0, latest - limit + 1)
        out = []
        for version in range(latest, oldest - 1, -1):
            if version not in found:
                break  # older files were cleaned up: DESCRIBE HISTORY would not list them
            out.append(found[version])
        return out


def _parse(version: int, text: str, modified: int) -> LogCommit:
    """A commit file's ``commitInfo`` as a :class:`LogCommit`."""
    info: dict[str, Any] = {}
    for line in text.splitlines():
        if line.startswith('{"commitInfo"'):
            info = json.loads(line)["commitInfo"]
            break
    params = {str(k): None if v is None else str(v)
              for k, v in (info.get("operationParameters") or {}).items()}
    metrics = {str(k): str(v) for k, v in (info.get("operationMetrics") or {}).items()}
    return LogCommit(version, datetime.fromtimestamp(modified / 1000),
                     str(info.get("operation", "")), params, info.get("userMetadata"), metrics)
