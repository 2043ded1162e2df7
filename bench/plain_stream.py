"""The plain append as a long-lived stream: what a user runs instead of a continuous deltasink.

``python -m bench.plain_stream BOOTSTRAP TOPIC TARGET CHECKPOINT INTERVAL``: the query of
``bench/plain_append.py`` (Kafka -> ``from_json`` -> Delta append, the same Spark settings and
jars as deltasink) with a processing-time trigger of ``INTERVAL`` (``5s``), until Ctrl-C. For
each micro-batch that read rows it prints one line ``progress: {...}`` with Spark's own figures
from the query's progress (``numInputRows``, and ``addBatch`` and ``triggerExecution`` from
``durationMs``), so that ``bench.warm_batch`` can read them from outside, batch by batch, as it
reads deltasink's from its commits.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from bench.plain_append import session, start_append

#: The prefix of each batch's line.
PREFIX = "progress: "
#: Records a micro-batch may read (far above a warm round's, so a round is never split by it).
PER_BATCH = "1000000"


def batch_line(progress: Any) -> str | None:
    """The ``progress:`` line of one ``StreamingQueryProgress``; None for a batch without rows.

    Spark reports idle triggers too (every ``noDataProgressEventInterval``); they are no batch.
    """
    rows = int(progress.numInputRows)
    if not rows:
        return None
    ms = progress.durationMs
    return PREFIX + json.dumps({"batch": int(progress.batchId), "rows": rows,
                                "add_batch_s": ms.get("addBatch", 0) / 1000,
                                "trigger_s": ms.get("triggerExecution", 0) / 1000,
                                "timestamp": str(progress.timestamp)})


def parse(text: str) -> list[dict[str, Any]]:
    """Every batch a plain stream's output (``text``) reported, in order, once each."""
    seen: dict[int, dict[str, Any]] = {}
    for line in text.splitlines():
        if line.startswith(PREFIX):
            row = json.loads(line[len(PREFIX):])
            seen.setdefault(int(row["batch"]), row)
    return [seen[k] for k in sorted(seen)]


def main(argv: list[str]) -> int:
    """Run the stream until Ctrl-C, printing each batch's line as it ends; return 0."""
    bootstrap, topic, target, checkpoint, interval = argv
    spark = session("plain-stream")
    every = f"{float(interval.rstrip('s')):g} seconds"
    query = start_append(spark, bootstrap, topic, target, checkpoint, PER_BATCH, every)
    printed: set[int] = set()  # an idle trigger's progress may carry the next batch's id
    try:
        while query.isActive:
            for progress in query.recentProgress:  # the newest 100: polled far more often
                line = batch_line(progress)
                if line is not None and int(progress.batchId) not in printed:
                    printed.add(int(progress.batchId))
                    print(line, flush=True)
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        query.stop()
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
