"""A path table's Delta log read by file name, so the cost does not grow with its history.

``DESCRIBE HISTORY`` lists the whole ``_delta_log`` folder on stores whose listing cannot start at
a name (a local disk, HDFS), and so does any glob over it: on a table with 10,000 commits that
listing costs more than everything else deltasink reads at start. The commit files are named by
version (``%020d.json``), so the newest ones can be found and opened by name instead, through
Spark (``pipelines.storage.store``: the same in classic mode and over Spark Connect), each name
one lookup (:func:`pipelines.storage.store.named`):

- the newest version, without a hint: the commit files that exist are one run of versions
  (Delta writes them in order and cleans up only the oldest), so looking up versions 0 to 15
  and the powers of two brackets the newest between the last that exists and the next, and each
  further Spark job looks up :data:`_FAN` names evenly spread in the bracket
  (:meth:`latest_version`). A few Spark jobs however long the log: one for a table of 16
  versions or fewer, four at 10,000 versions. ``_last_checkpoint`` would name a version near
  the newest, but Spark's file sources do not read a name starting with ``_``. When no probed
  name exists (no log, or a cleaned-up log that fell between the names, :data:`_LADDER`) the
  caller asks Delta's ``DESCRIBE HISTORY``;
- the newest ``n`` commits' files near a version read before, in one Spark job
  (:meth:`DeltaLogFiles.near`): each batch's read. Each commit's timestamp is its file's
  modification time, which is what ``DESCRIBE HISTORY`` reports and what
  ``RESTORE TO TIMESTAMP`` resolves against.

Only tables addressed by path use it. Catalog tables (``ref.name``) keep ``DESCRIBE HISTORY``:
on Unity Catalog the storage is the catalog's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pipelines.storage.store import Store

#: The versions looked up first to bracket the newest, in two Spark jobs: 0 to 15 (a young
#: table's newest is then known from this one job) and the powers of two to ``2**16`` (about four
#: days of a 5 s trigger); then, only when the first job finds nothing (a cleaned-up log) or
#: finds ``2**16``, four names an octave from ``2**17`` to ``2**40``. A cleaned-up log keeps
#: the commits of its retention (30 days by default), so four names an octave still land in it
#: while the table is younger than about six times that; an older one may fall between them and
#: is left to ``DESCRIBE HISTORY``. Each name past the newest is a lookup that finds nothing:
#: two requests on S3.
_LADDER = ((*range(16), *(2 ** k for k in range(4, 17))),
           tuple(round(2 ** (j / 4)) for j in range(68, 161)))

#: Names each further Spark job looks up inside the bracket; the bracket shrinks by this factor.
_FAN = 32

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

    def _present(self, versions: Iterable[int]) -> set[int]:
        """Which of ``versions`` have a commit file, in one Spark job that reads no content."""
        names = {f"{v:020d}.json": v for v in versions}
        return {names[name] for name in self.store.stamps(self._folder, names)}

    def _bracket(self) -> tuple[int, int] | None:
        """``(low, high)``, at most :data:`_FAN` apart: version ``low``'s commit file exists, and
        the newest version is below ``high``. None when no version of :data:`_LADDER` exists."""
        low: int | None = None
        looked: list[int] = []
        # The next rung only when this one's last name exists, or none did (a cleaned-up log).
        for rung in _LADDER:
            found = self._present(rung)
            looked += rung
            low = max(found, default=low)
            if low is not None and low != rung[-1]:
                break
        high = min((v for v in looked if low is not None and v > low), default=None)
        if low is None or high is None:
            return None
        while high - low > _FAN:
            probes = sorted({low + (high - low) * i // _FAN for i in range(1, _FAN)} - {low})
            found = self._present(probes)
            low = max(found, default=low)
            high = min((p for p in probes if p > low), default=high)
        return low, high

    def latest_version(self) -> int | None:
        """The newest committed version; None when it cannot be found by name (the caller
        then asks Delta): no commit file at any version of :data:`_LADDER`."""
        bracket = self._bracket()
        if bracket is None:
            return None
        low, high = bracket
        return low if high == low + 1 else max(self._present(range(low, high)), default=None)

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

        None when the log cannot be read by name (no log, or none of the versions
        :meth:`latest_version` looks up first exists): the caller then asks Delta's
        ``DESCRIBE HISTORY``. The last names of the bracket are read with the commits, in one
        Spark job.
        """
        bracket = self._bracket()
        if bracket is None:
            return None
        low, high = bracket
        oldest = 0 if limit is None else max(0, low - limit + 1)
        found = self.commits(list(range(oldest, high)))
        if low not in found:
            return None  # cleaned up since it was looked up: leave it to Delta
        return self._down_from(max(found), found, limit)

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
