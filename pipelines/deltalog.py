"""A path table's Delta log read by file name, so the cost does not grow with its history.

``DeltaTable.history(n)`` lists the whole ``_delta_log`` folder on stores whose listing cannot
start at a name (a local disk, HDFS): on a table with 10,000 commits that listing costs more than
everything else deltasink reads at start. The commit files are named by version
(``%020d.json``), so the newest ones can be opened directly instead:

- the newest version is found from ``_last_checkpoint`` (Delta writes a checkpoint every ten
  commits) by galloping forward over file existence checks: O(log n) probes, no listing;
- each commit's ``commitInfo`` is read from its own file; the timestamp is the file's
  modification time, which is what ``history()`` reports and what ``RESTORE TO TIMESTAMP``
  resolves against.

Only tables addressed by path use it. Catalog tables (``ref.name``) keep ``history()``: on Unity
Catalog the storage credentials belong to the catalog, not to the session's Hadoop
configuration.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pipelines.runtime.hadoop import HadoopFS


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
    """The ``_delta_log`` folder of the table at ``location``, read through Hadoop's FileSystem.

    Attributes:
        fs: the driver's Hadoop FileSystem access.
        location: the table's folder or URI.
    """

    fs: HadoopFS
    location: str

    def _file(self, version: int) -> str:
        return f"{self.location.rstrip('/')}/_delta_log/{version:020d}.json"

    def _has(self, version: int) -> bool:
        return self.fs.exists(self._file(version))

    def latest_version(self) -> int | None:
        """The newest committed version, or None when the log holds no commit file."""
        text = self.fs.read_text(f"{self.location.rstrip('/')}/_delta_log/_last_checkpoint")
        low = int(json.loads(text)["version"]) if text else 0
        if not self._has(low):
            return None
        step = 1
        while self._has(low + step):  # gallop: low exists, low + step is the next probe
            low, step = low + step, step * 2
        high = low + step  # missing
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (middle, high) if self._has(middle) else (low, middle)
        return low

    def commit(self, version: int) -> LogCommit | None:
        """The ``commitInfo`` of ``version``, or None when its file is gone (log cleanup)."""
        stamped = self.fs.read_stamped(self._file(version))
        if stamped is None:
            return None
        text, modified = stamped
        info: dict[str, Any] = {}
        for line in text.splitlines():
            if line.startswith('{"commitInfo"'):
                info = json.loads(line)["commitInfo"]
                break
        params = {str(k): None if v is None else str(v)
                  for k, v in (info.get("operationParameters") or {}).items()}
        metrics = {str(k): str(v) for k, v in (info.get("operationMetrics") or {}).items()}
        return LogCommit(version, datetime.fromtimestamp(modified / 1000),
                         str(info.get("operation", "")), params, info.get("userMetadata"),
                         metrics)

    def newest(self, limit: int | None) -> list[LogCommit] | None:
        """The newest ``limit`` commits (all still in the log when None), newest first.

        None when the log cannot be read by name (no commit file where ``_last_checkpoint``
        points, or no log at all): the caller then asks Delta's ``history()``.
        """
        latest = self.latest_version()
        if latest is None:
            return None
        oldest = 0 if limit is None else max(0, latest - limit + 1)
        out = []
        for version in range(latest, oldest - 1, -1):
            found = self.commit(version)
            if found is None:
                break  # older files were cleaned up: history() would not list them either
            out.append(found)
        return out
