"""Is the lease still ours? Answered from the lease table's newest commit file, with no Spark job.

``Lease.verify`` runs before every commit of a batch. Reading the lease row through Delta is a
snapshot of the lease table and a scan: three Spark jobs and 0.3-0.7 s a batch on the 2-core
VM, most of a small batch's checks (issue 60). The row's holder is also in the log itself:
every write of the row (the creation that takes it, a take-over, each renewal, the release) is
one commit that removes the row's file and adds its new one, and Delta writes the new file's
statistics into that commit (``minValues``/``maxValues``/``nullCount`` of each column). So the
newest commit says who holds the lease now, when

* it adds exactly one file, of one row (``numRecords`` 1, ``slot`` 0), and
* that file's ``token`` is ours, as its minimum and its maximum, and not null.

Only that positive answer is taken from here. Anything else (the row freed or taken by another
run, a commit that adds no file, such as a ``VACUUM`` of :meth:`Lease.tidy` or an ``UPDATE``
that matched nothing, statistics missing or unreadable, no commit file found by name) leaves the
verdict to the Delta read, as before. A commit that lands just after the newest was found is the
race every read of the lease has: it is the next batch's to see.

The newest commit is found by name (:class:`~pipelines.ledger.deltalog.DeltaLogFiles`): near the
version the previous check found, when the caller keeps it, so a batch looks up at most
:data:`~pipelines.ledger.deltalog.NEAR` names. In classic mode these are the driver JVM's file
lookups (:mod:`pipelines.storage.driver_files`), under Spark Connect one Spark job.
"""

from __future__ import annotations

import json
from collections.abc import MutableMapping
from typing import Any

from pyspark.sql import SparkSession

from pipelines.ledger.deltalog import NEAR, DeltaLogFiles
from pipelines.storage.store import Store


def _names(versions: range) -> dict[str, int]:
    return {f"{v:020d}.json": v for v in versions}


def newest_commit(store: Store, table: str, hint: int | None = None) -> tuple[int, str] | None:
    """The lease table's newest commit, as (version, text), or None when it is not found by name.

    Args:
        store: the session's file reads.
        table: the lease table's folder.
        hint: a version read before (the newest then): its next :data:`NEAR` names are looked up
            first, in one read.
    """
    folder = f"{table.rstrip('/')}/_delta_log"
    if hint is not None:
        names = _names(range(hint, hint + NEAR))
        found = {names[n]: text for n, (text, _) in store.read_many(folder, names).items()}
        if hint in found and max(found) < hint + NEAR - 1:
            return max(found), found[max(found)]
    latest = DeltaLogFiles(store, table).latest_version()
    if latest is None:
        return None
    read = store.read_many(folder, _names(range(latest, latest + 1)))
    return (latest, read[f"{latest:020d}.json"][0]) if read else None


def holder_token(text: str) -> str | None:
    """The token of the lease row a commit's text writes, when the commit adds exactly one file
    of one row whose statistics name a token; else None (the commit says nothing sure)."""
    adds = []
    for line in text.splitlines():
        if line.startswith('{"add"'):
            adds.append(json.loads(line)["add"])
    if len(adds) != 1:
        return None
    try:
        stats: dict[str, Any] = json.loads(adds[0].get("stats") or "{}")
    except ValueError:
        return None
    low, high = stats.get("minValues") or {}, stats.get("maxValues") or {}
    nulls = stats.get("nullCount") or {}
    token = low.get("token")
    if stats.get("numRecords") != 1 or low.get("slot") != 0 or nulls.get("token") != 0 or \
            not isinstance(token, str) or high.get("token") != token:
        return None
    return token


def still_ours(spark: SparkSession, table: str, token: str,
               seen: MutableMapping[str, int] | None = None) -> bool:
    """Whether the lease table's newest commit proves the row holds ``token`` (see the module).

    Args:
        spark: the session whose store reaches the lease (a batch's, in a worker).
        table: the lease table's folder.
        token: this run's token.
        seen: where the newest version found is kept between calls (the next call's hint).

    Returns:
        True only on that proof; False means "ask Delta", not "another run holds it".
    """
    hint = None if seen is None else seen.get(table)
    newest = newest_commit(Store(spark), table, hint)
    if newest is None:
        return False
    if seen is not None:
        seen[table] = newest[0]
    return holder_token(newest[1]) == token
