"""The plain job of several topics: one process, one Kafka -> Delta append query per topic.

``python -m bench.plain_group BOOTSTRAP WORK MAX_PER_BATCH TOPIC [TOPIC ...]``: what a user
writes instead of a group run. Each topic's query (``bench/plain_append.py``'s) appends to
``WORK/<topic>/target`` with its checkpoint beside it; all start at once (``availableNow``) and
the process waits for every one.
"""

from __future__ import annotations

import sys
import time

from bench.plain_append import session, start_append


def main(argv: list[str]) -> int:
    """Run every topic's plain append once, concurrently; return 0."""
    started = time.monotonic()
    bootstrap, work, per_batch, *topics = argv
    spark = session("plain-group")
    up = time.monotonic()
    queries = [start_append(spark, bootstrap, topic, f"{work}/{topic}/target",
                            f"{work}/{topic}/checkpoint", per_batch) for topic in topics]
    for query in queries:
        query.awaitTermination()
    done = time.monotonic()
    print(f"timings: spark {up - started:.1f}s, stream {done - up:.1f}s, "
          f"total {done - started:.1f}s", flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
