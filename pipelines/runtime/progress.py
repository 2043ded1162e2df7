"""A streaming query's recent progress, read as Spark's own JSON in both modes.

Classic PySpark's ``StreamingQuery.recentProgress`` builds each progress over py4j, copying its
Java maps (durations, event times, each source's and the sink's metrics) entry by entry. Each
map ends with a Java exception, and PySpark converts every Java exception that reaches Python
by testing it against a dozen exception classes, each looked up by name through the JVM's
class loaders (failed ``Class.forName`` calls over every jar). ``deltasink run`` reads the
progress every second, all of it (Spark keeps up to 100), so the cost grew with every batch:
in a profile of four warm runs, 17 s of the driver's Python time went to those conversions, and
a JFR profile of the same runs put 7% of the JVM's samples in the failed class lookups.

So in classic mode each progress is read as its JSON, one call each, through the query's Java
object (the one private attribute this reads, with the public property as the fallback). The
Spark Connect client receives the same JSON from the server; its progress objects hand it back
through their public ``json`` property. Either way the caller gets plain dicts. They differ in
two ways the readers allow for: the Spark Connect JSON has no top-level ``numInputRows`` (use
:func:`input_rows`), and a source's offsets may be a nested dict or a JSON string.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def recent_progress(query: Any) -> list[dict[str, Any]]:
    """The query's recent progress, oldest first, each as Spark's JSON (``id``, ``batchId``,
    ``numInputRows``, ``timestamp``, ``batchDuration``, ``sources`` with their offsets, ...).

    Args:
        query: a running or ended ``StreamingQuery``, classic or Spark Connect.
    """
    java = getattr(query, "_jsq", None)  # classic: the Java query behind the Python one
    if java is not None:
        return [json.loads(progress.json()) for progress in java.recentProgress()]
    return [json.loads(progress.json) for progress in query.recentProgress]


def input_rows(progress: Mapping[str, Any]) -> int:
    """The rows a trigger read: its ``numInputRows``, or the sum of its sources' where the JSON
    has none (Spark Connect's), as PySpark's own ``numInputRows`` property computes it."""
    total = progress.get("numInputRows")
    if total is None:
        total = sum(int(s.get("numInputRows") or 0) for s in progress.get("sources") or [])
    return int(total)


def batch_key(progress: Mapping[str, Any]) -> tuple[str, int]:
    """The ``(query id, batch id)`` a progress is about: the key of a batch's commit and of
    its run-metrics row."""
    return str(progress["id"]), int(progress["batchId"])
